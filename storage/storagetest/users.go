package storagetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var userTests = []subtest{
	{"UserRoundTrip", testUserRoundTrip},
	{"UserConflict", testUserConflict},
	{"UserScopedToApp", testUserScopedToApp},
	{"UserUnknownApp", testUserUnknownApp},
	{"UserUpdate", testUserUpdate},
	{"UserUpdateFnErrorAborts", testUserUpdateFnErrorAborts},
	{"UserUpdateConcurrent", testUserUpdateConcurrent},
	{"UserListSearch", testUserListSearch},
	{"UserListSort", testUserListSort},
	{"UserListFilters", testUserListFilters},
	{"UserDeleteRemovesDevices", testUserDeleteRemovesDevices},
}

func testUserRoundTrip(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	full := mustCreateUser(t, s, fullUser(app.ID, "Full.User"))
	bare := mustCreateUser(t, s, minimalUser(app.ID, "bare"))

	wantUser(t, s, full)
	wantUser(t, s, bare)
	for _, name := range []string{"Full.User", "full.user", "FULL.USER"} {
		got, err := s.GetUserByUsername(ctx, app.ID, name)
		if err != nil {
			t.Fatalf("GetUserByUsername(%q): %v", name, err)
		}
		// The stored spelling is kept; only comparison ignores case.
		if d := diff(full, got); d != "" {
			t.Errorf("GetUserByUsername(%q) differs: %s", name, d)
		}
	}
	for _, name := range []string{"full", "full.user ", "Full.User@Users.example"} {
		_, err := s.GetUserByUsername(ctx, app.ID, name)
		wantNotFound(t, fmt.Sprintf("GetUserByUsername(%q)", name), err)
	}
	list, total, err := s.ListUsers(ctx, app.ID, storage.UserQuery{})
	if err != nil {
		t.Fatalf("ListUsers: %v", err)
	}
	if total != 2 {
		t.Errorf("ListUsers total = %d, want 2", total)
	}
	wantSame(t, "ListUsers", []storage.AppUser{bare, full}, list) // zero CreatedAt first
	if n, err := s.CountUsers(ctx, app.ID); err != nil || n != 2 {
		t.Errorf("CountUsers = (%d, %v), want 2", n, err)
	}
}

func testUserConflict(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	app2 := mustCreateApp(t, s, fullApp("acc-1", "app2"))
	first := mustCreateUser(t, s, fullUser(app.ID, "Taken"))
	second := mustCreateUser(t, s, fullUser(app.ID, "second"))

	sameID := fullUser(app2.ID, "fresh")
	sameID.ID = first.ID
	for name, u := range map[string]storage.AppUser{
		"the username in another case":        fullUser(app.ID, "TAKEN"),
		"the username lower-cased":            fullUser(app.ID, "taken"),
		"the same id (in another app)":        sameID,
		"an identical user":                   first,
		"the other username in another case":  fullUser(app.ID, "SECOND"),
		"the username and another email/hwid": minimalUser(app.ID, "tAkEn"),
	} {
		wantConflict(t, "CreateUser with "+name, s.CreateUser(ctx, u))
	}
	if n, err := s.CountUsers(ctx, app.ID); err != nil || n != 2 {
		t.Errorf("CountUsers after refused creates = (%d, %v), want 2", n, err)
	}
	if n, err := s.CountUsers(ctx, app2.ID); err != nil || n != 0 {
		t.Errorf("CountUsers(app2) after a refused create = (%d, %v), want 0", n, err)
	}
	wantUser(t, s, first)

	// The same username is free in another app.
	elsewhere := mustCreateUser(t, s, fullUser(app2.ID, "taken"))
	wantUser(t, s, elsewhere)

	_, err := s.UpdateUser(ctx, app.ID, second.ID, func(u *storage.AppUser) error { u.Username = "TAKEN"; return nil })
	wantConflict(t, "UpdateUser to a taken username", err)
	wantUser(t, s, second)

	// Changing one's own case is not a conflict, and a rename frees the old name.
	want := first
	want.Username = "tAKEN"
	got, err := s.UpdateUser(ctx, app.ID, first.ID, func(u *storage.AppUser) error { u.Username = "tAKEN"; return nil })
	if err != nil {
		t.Fatalf("UpdateUser changing own case: %v", err)
	}
	if d := diff(want, got); d != "" {
		t.Errorf("UpdateUser changing own case differs: %s", d)
	}
	if _, err := s.UpdateUser(ctx, app.ID, second.ID, func(u *storage.AppUser) error { u.Username = "renamed"; return nil }); err != nil {
		t.Fatalf("UpdateUser rename: %v", err)
	}
	mustCreateUser(t, s, fullUser(app.ID, "Second"))
}

func testUserScopedToApp(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	u := mustCreateUser(t, s, fullUser(app.ID, "alice"))
	d := mustCreateDevice(t, s, fullDevice(u, "HW-1"))

	_, err := s.GetUser(ctx, other.ID, u.ID)
	wantNotFound(t, "GetUser from another app", err)
	_, err = s.GetUserByUsername(ctx, other.ID, u.Username)
	wantNotFound(t, "GetUserByUsername from another app", err)
	_, err = s.UpdateUser(ctx, other.ID, u.ID, func(*storage.AppUser) error {
		t.Error("UpdateUser called fn for a user of another app")
		return nil
	})
	wantNotFound(t, "UpdateUser from another app", err)
	wantNotFound(t, "DeleteUser from another app", s.DeleteUser(ctx, other.ID, u.ID))
	_, err = s.GetUser(ctx, app.ID, "missing")
	wantNotFound(t, "GetUser(missing)", err)
	wantNotFound(t, "DeleteUser(missing)", s.DeleteUser(ctx, app.ID, "missing"))
	_, err = s.UpdateUser(ctx, app.ID, "missing", func(*storage.AppUser) error {
		t.Error("UpdateUser called fn for a missing user")
		return nil
	})
	wantNotFound(t, "UpdateUser(missing)", err)

	wantUser(t, s, u)
	devs, _, err := s.ListDevices(ctx, app.ID, storage.DeviceQuery{})
	if err != nil {
		t.Fatalf("ListDevices: %v", err)
	}
	wantSame(t, "devices after another app's DeleteUser", []storage.Device{d}, devs)
	if list, total, err := s.ListUsers(ctx, other.ID, storage.UserQuery{}); err != nil || total != 0 || len(list) != 0 {
		t.Errorf("ListUsers(other app) = (%v, %d, %v), want none", recIDs(list), total, err)
	}
}

// testUserUnknownApp: a user must belong to an existing app, so that none can outlive the
// DeleteApp that clears the app's users.
func testUserUnknownApp(t *testing.T, s storage.Store) {
	ctx := t.Context()
	u := fullUser("no-such-app", "orphan")
	wantNotFound(t, "CreateUser for an unknown app", s.CreateUser(ctx, u))
	_, err := s.GetUser(ctx, u.AppID, u.ID)
	wantNotFound(t, "GetUser of the refused user", err)
	if n, err := s.CountUsers(ctx, u.AppID); err != nil || n != 0 {
		t.Errorf("CountUsers(unknown app) = (%d, %v), want 0", n, err)
	}
	// The refused id is free once the app exists.
	mustCreateApp(t, s, storage.App{ID: u.AppID, AccountID: "acc-1", Name: "late"})
	mustCreateUser(t, s, u)
	wantUser(t, s, u)
}

func testUserUpdate(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	u := mustCreateUser(t, s, minimalUser(app.ID, "before"))
	bystander := mustCreateUser(t, s, fullUser(app.ID, "bystander"))

	want := fullUser(app.ID, "After")
	want.ID, want.CreatedAt = u.ID, u.CreatedAt
	calls := 0
	got, err := s.UpdateUser(ctx, app.ID, u.ID, func(x *storage.AppUser) error {
		calls++
		if d := diff(u, *x); d != "" && calls == 1 {
			t.Errorf("fn got a record that differs from the stored one: %s", d)
		}
		*x = want
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateUser: %v", err)
	}
	if d := diff(want, got); d != "" {
		t.Errorf("UpdateUser result differs: %s", d)
	}
	wantUser(t, s, want)
	wantUser(t, s, bystander)
	// Lookups follow the new username; the old one is free.
	if got, err := s.GetUserByUsername(ctx, app.ID, "after"); err != nil || got.ID != u.ID {
		t.Errorf("GetUserByUsername(new name) = (%q, %v), want %q", got.ID, err, u.ID)
	}
	_, err = s.GetUserByUsername(ctx, app.ID, "before")
	wantNotFound(t, "GetUserByUsername(old name)", err)

	// fn cannot move the user: id, app and creation time are kept.
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	got, err = s.UpdateUser(ctx, app.ID, u.ID, func(x *storage.AppUser) error {
		x.ID, x.AppID, x.CreatedAt = "hijacked", other.ID, ms(time.Hour)
		x.Level = 99
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateUser: %v", err)
	}
	want.Level = 99
	if d := diff(want, got); d != "" {
		t.Errorf("UpdateUser changing identity: result differs: %s", d)
	}
	wantUser(t, s, want)
	if n, err := s.CountUsers(ctx, other.ID); err != nil || n != 0 {
		t.Errorf("CountUsers(other app) = (%d, %v), want 0", n, err)
	}

	// Zero values overwrite too.
	zero := storage.AppUser{ID: u.ID, AppID: app.ID, Username: "z"}
	got, err = s.UpdateUser(ctx, app.ID, u.ID, func(x *storage.AppUser) error { *x = zero; return nil })
	if err != nil {
		t.Fatalf("UpdateUser to zero values: %v", err)
	}
	if d := diff(zero, got); d != "" {
		t.Errorf("UpdateUser (zero values) result differs: %s", d)
	}
	wantUser(t, s, zero)
}

func testUserUpdateFnErrorAborts(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	u := mustCreateUser(t, s, fullUser(app.ID, "steady"))
	errBoom := errors.New("boom")
	_, err := s.UpdateUser(ctx, app.ID, u.ID, func(x *storage.AppUser) error {
		x.Username, x.Banned, x.HwidResets = "changed", false, 1000
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("UpdateUser error = %v, want fn's error", err)
	}
	if errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrConflict) {
		t.Errorf("fn's error was turned into a storage sentinel: %v", err)
	}
	wantUser(t, s, u)
	_, err = s.GetUserByUsername(ctx, app.ID, "changed")
	wantNotFound(t, "aborted username change", err)
}

func testUserUpdateConcurrent(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	u := minimalUser(app.ID, "counter")
	mustCreateUser(t, s, u)
	bystander := mustCreateUser(t, s, fullUser(app.ID, "unrelated"))

	const workers = 20
	raceUpdates(t, workers, func(i int) error {
		_, err := s.UpdateUser(ctx, app.ID, u.ID, func(x *storage.AppUser) error {
			x.HwidResets++
			if i%2 == 0 {
				x.IPResets++
			}
			return nil
		})
		return err
	})
	got, err := s.GetUser(ctx, app.ID, u.ID)
	if err != nil {
		t.Fatalf("GetUser: %v", err)
	}
	if got.HwidResets != workers || got.IPResets != workers/2 {
		t.Errorf("HwidResets, IPResets = %d, %d after %d concurrent updates, want %d, %d",
			got.HwidResets, got.IPResets, workers, workers, workers/2)
	}
	wantUser(t, s, bystander)
}

func testUserListSearch(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	mk := func(appID, username, email string, age int) storage.AppUser {
		u := fullUser(appID, username)
		u.Email = email
		u.CreatedAt = ms(time.Duration(age) * time.Minute)
		return mustCreateUser(t, s, u)
	}
	carol := mk(app.ID, "Carol", "carol@Brava.example", 3)
	bravo := mk(app.ID, "BravoTeam", "team@example.com", 1)
	zed := mk(app.ID, "zed", "zed@zulu.example", 5)
	dots := mk(app.ID, "a.b", "dots@example.com", 4)
	axb := mk(app.ID, "axb", "axb@example.com", 2)
	pct := mk(app.ID, "100%_sure", "pct@example.com", 6)
	mk(other.ID, "bravo-elsewhere", "brav@example.com", 0) // another app's: never listed

	cases := []struct {
		search string
		page   storage.Page
		want   []storage.AppUser
		total  int
	}{
		{"BRAV", storage.Page{}, []storage.AppUser{bravo, carol}, 2}, // username or email, any case
		{"brav", storage.Page{Limit: 1}, []storage.AppUser{bravo}, 2},
		{"brav", storage.Page{Limit: 1, Offset: 1}, []storage.AppUser{carol}, 2},
		{"ZULU", storage.Page{}, []storage.AppUser{zed}, 1},
		{"example.com", storage.Page{}, []storage.AppUser{bravo, axb, dots, pct}, 4},
		// A literal substring: no regular expression or LIKE wildcard meaning.
		{"a.b", storage.Page{}, []storage.AppUser{dots}, 1},
		{"%", storage.Page{}, []storage.AppUser{pct}, 1},
		{"_", storage.Page{}, []storage.AppUser{pct}, 1},
		{"0%_S", storage.Page{}, []storage.AppUser{pct}, 1},
		{"(", storage.Page{}, nil, 0},
		{".*", storage.Page{}, nil, 0},
		{"nobody", storage.Page{}, nil, 0},
		{"", storage.Page{}, []storage.AppUser{bravo, axb, carol, dots, zed, pct}, 6},
	}
	for _, c := range cases {
		got, total, err := s.ListUsers(ctx, app.ID, storage.UserQuery{Search: c.search, Page: c.page})
		if err != nil {
			t.Fatalf("ListUsers(search %q): %v", c.search, err)
		}
		if total != c.total {
			t.Errorf("ListUsers(search %q, %+v) total = %d, want %d", c.search, c.page, total, c.total)
		}
		wantSame(t, fmt.Sprintf("ListUsers(search %q, %+v)", c.search, c.page), c.want, got)
	}
}

// testUserListSort checks every sort key in both directions against the order the
// contract promises (ties broken by id, zero times first ascending), and paging within it.
func testUserListSort(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	type row struct {
		name             string
		created, expires time.Duration // offsets from base; -1 means the zero time
		login            time.Duration
	}
	at := func(d time.Duration) time.Time {
		if d == -1 {
			return time.Time{}
		}
		return ms(d)
	}
	// Several users share each time, so that the id tie-break shows in every sort.
	rows := []row{
		{"echo", 3 * time.Minute, time.Hour, -1},
		{"alpha", time.Minute, -1, 2 * time.Minute},
		{"delta", 3 * time.Minute, 2 * time.Hour, 2 * time.Minute},
		{"charlie", 2 * time.Minute, time.Hour, 5 * time.Minute},
		{"bravo", time.Minute, -1, -1},
		{"foxtrot", 4 * time.Minute, 30 * time.Minute, time.Minute},
		{"golf", 2 * time.Minute, time.Hour, 5 * time.Minute},
	}
	var users []storage.AppUser
	for _, r := range rows {
		u := fullUser(app.ID, r.name)
		u.CreatedAt, u.ExpiresAt, u.LastLoginAt = at(r.created), at(r.expires), at(r.login)
		users = append(users, mustCreateUser(t, s, u))
	}

	keys := map[string]func(a, b storage.AppUser) int{
		storage.UserSortUsername:    func(a, b storage.AppUser) int { return strings.Compare(a.Username, b.Username) },
		storage.UserSortCreatedAt:   func(a, b storage.AppUser) int { return a.CreatedAt.Compare(b.CreatedAt) },
		storage.UserSortLastLoginAt: func(a, b storage.AppUser) int { return a.LastLoginAt.Compare(b.LastLoginAt) },
		storage.UserSortExpiresAt:   func(a, b storage.AppUser) int { return a.ExpiresAt.Compare(b.ExpiresAt) },
		"":                          func(a, b storage.AppUser) int { return a.CreatedAt.Compare(b.CreatedAt) }, // the default
	}
	for sortBy, key := range keys {
		for _, desc := range []bool{false, true} {
			want := ordered(users, key, desc)
			for _, p := range []storage.Page{{}, {Limit: 3}, {Limit: 3, Offset: 3}, {Limit: 3, Offset: 6}, {Limit: 2, Offset: 7}} {
				got, total, err := s.ListUsers(ctx, app.ID, storage.UserQuery{SortBy: sortBy, Desc: desc, Page: p})
				if err != nil {
					t.Fatalf("ListUsers(sort %q desc %v): %v", sortBy, desc, err)
				}
				if total != len(users) {
					t.Errorf("ListUsers(sort %q desc %v %+v) total = %d, want %d", sortBy, desc, p, total, len(users))
				}
				np := p.Normalize()
				wantSame(t, fmt.Sprintf("ListUsers(sort %q desc %v %+v)", sortBy, desc, p), window(want, np.Offset, np.Limit), got)
			}
		}
	}
}

func testUserListFilters(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	now := base
	mk := func(name string, banned bool, expires time.Time, age int) storage.AppUser {
		u := fullUser(app.ID, name)
		u.Banned, u.ExpiresAt, u.CreatedAt = banned, expires, ms(time.Duration(age)*time.Minute)
		return mustCreateUser(t, s, u)
	}
	live := mk("live", false, now.Add(time.Millisecond), 1)
	never := mk("never", false, time.Time{}, 2)
	expiredNow := mk("expired-now", false, now, 3)
	expiredOld := mk("expired-old", true, now.Add(-time.Hour), 4)
	bannedLive := mk("banned-live", true, now.Add(time.Hour), 5)
	bannedNever := mk("banned-never", true, time.Time{}, 6)

	cases := []struct {
		name string
		q    storage.UserQuery
		want []storage.AppUser
	}{
		{"no filter", storage.UserQuery{}, []storage.AppUser{live, never, expiredNow, expiredOld, bannedLive, bannedNever}},
		{"banned", storage.UserQuery{Banned: ptr(true)}, []storage.AppUser{expiredOld, bannedLive, bannedNever}},
		{"not banned", storage.UserQuery{Banned: ptr(false)}, []storage.AppUser{live, never, expiredNow}},
		// Expired: ExpiresAt set and not after Now; a zero ExpiresAt never expires.
		{"expired", storage.UserQuery{Expired: true, Now: now}, []storage.AppUser{expiredNow, expiredOld}},
		{"expired later", storage.UserQuery{Expired: true, Now: now.Add(time.Hour)}, []storage.AppUser{live, expiredNow, expiredOld, bannedLive}},
		{"expired and banned", storage.UserQuery{Expired: true, Now: now, Banned: ptr(true)}, []storage.AppUser{expiredOld}},
		{"expired and not banned", storage.UserQuery{Expired: true, Now: now, Banned: ptr(false)}, []storage.AppUser{expiredNow}},
		// In grace: expired, but after ExpiredAfter (now minus the grace).
		{"in a 30-minute grace", storage.UserQuery{Expired: true, Now: now, ExpiredAfter: now.Add(-30 * time.Minute)}, []storage.AppUser{expiredNow}},
		{"in a 2-hour grace", storage.UserQuery{Expired: true, Now: now, ExpiredAfter: now.Add(-2 * time.Hour)}, []storage.AppUser{expiredNow, expiredOld}},
		{"grace bound is exclusive", storage.UserQuery{Expired: true, Now: now, ExpiredAfter: now.Add(-time.Hour)}, []storage.AppUser{expiredNow}},
		{"banned with search", storage.UserQuery{Banned: ptr(true), Search: "NEVER"}, []storage.AppUser{bannedNever}},
		{"search only", storage.UserQuery{Search: "never"}, []storage.AppUser{never, bannedNever}},
		{"banned, newest first", storage.UserQuery{Banned: ptr(true), Desc: true}, []storage.AppUser{bannedNever, bannedLive, expiredOld}},
	}
	for _, c := range cases {
		got, total, err := s.ListUsers(ctx, app.ID, c.q)
		if err != nil {
			t.Fatalf("ListUsers(%s): %v", c.name, err)
		}
		if total != len(c.want) {
			t.Errorf("ListUsers(%s) total = %d, want %d", c.name, total, len(c.want))
		}
		wantSame(t, "ListUsers("+c.name+")", c.want, got)

		// A page of the filtered list keeps the filtered total.
		q := c.q
		q.Page = storage.Page{Limit: 1, Offset: 1}
		got, total, err = s.ListUsers(ctx, app.ID, q)
		if err != nil {
			t.Fatalf("ListUsers(%s, page): %v", c.name, err)
		}
		if total != len(c.want) {
			t.Errorf("ListUsers(%s, page) total = %d, want %d", c.name, total, len(c.want))
		}
		wantSame(t, "ListUsers("+c.name+", page)", window(c.want, 1, 1), got)
	}
}

func testUserDeleteRemovesDevices(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	leaving := mustCreateUser(t, s, fullUser(app.ID, "Leaving"))
	staying := mustCreateUser(t, s, fullUser(app.ID, "staying"))
	for i := range 3 {
		mustCreateDevice(t, s, fullDevice(leaving, fmt.Sprintf("L-%d", i)))
	}
	kept := []storage.Device{
		mustCreateDevice(t, s, fullDevice(staying, "S-0")),
		// The same hwid as one of the leaving user's: hwids are unique per user only.
		mustCreateDevice(t, s, fullDevice(staying, "L-0")),
	}

	if err := s.DeleteUser(ctx, app.ID, leaving.ID); err != nil {
		t.Fatalf("DeleteUser: %v", err)
	}
	_, err := s.GetUser(ctx, app.ID, leaving.ID)
	wantNotFound(t, "GetUser after DeleteUser", err)
	_, err = s.GetUserByUsername(ctx, app.ID, "leaving")
	wantNotFound(t, "GetUserByUsername after DeleteUser", err)
	if devs, total, err := s.ListDevices(ctx, app.ID, storage.DeviceQuery{UserID: leaving.ID}); err != nil || total != 0 || len(devs) != 0 {
		t.Errorf("devices of the deleted user = (%v, %d, %v), want none", recIDs(devs), total, err)
	}
	devs, _, err := s.ListDevices(ctx, app.ID, storage.DeviceQuery{})
	if err != nil {
		t.Fatalf("ListDevices: %v", err)
	}
	wantSame(t, "devices left", ordered(kept, func(a, b storage.Device) int { return a.CreatedAt.Compare(b.CreatedAt) }, true), devs)
	wantUser(t, s, staying)
	wantNotFound(t, "second DeleteUser", s.DeleteUser(ctx, app.ID, leaving.ID))
	if n, err := s.CountUsers(ctx, app.ID); err != nil || n != 1 {
		t.Errorf("CountUsers = (%d, %v), want 1", n, err)
	}

	// The username, the id and the hwids are free again.
	back := mustCreateUser(t, s, leaving)
	mustCreateDevice(t, s, fullDevice(back, "L-0"))
}
