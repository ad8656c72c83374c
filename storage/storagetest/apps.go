package storagetest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var appTests = []subtest{
	{"AppRoundTrip", testAppRoundTrip},
	{"AppRecordsTimePrecision", testAppRecordsTimePrecision},
	{"AppOwnership", testAppOwnership},
	{"AppNameConflict", testAppNameConflict},
	{"AppBySecretHash", testAppBySecretHash},
	{"AppListAndCount", testAppListAndCount},
	{"AppUpdate", testAppUpdate},
	{"AppUpdateSessionSettings", testAppUpdateSessionSettings},
	{"AppUpdateLicensing", testAppUpdateLicensing},
	{"AppUpdateFnErrorAborts", testAppUpdateFnErrorAborts},
	{"AppUpdateConcurrent", testAppUpdateConcurrent},
	{"AppDeleteCascade", testAppDeleteCascade},
	{"AppCountRecords", testAppCountRecords},
	{"AppStats", testAppStats},
	{"AppStats/NewUsers", testAppStatsNewUsers},
}

func testAppRoundTrip(t *testing.T, s storage.Store) {
	ctx := t.Context()
	full := mustCreateApp(t, s, fullApp("acc-1", "Full App"))
	bare := mustCreateApp(t, s, minimalApp("acc-1", "bare"))

	wantApp(t, s, full)
	wantApp(t, s, bare)
	got, err := s.GetAppBySecretHash(ctx, full.SecretHash)
	if err != nil {
		t.Fatalf("GetAppBySecretHash: %v", err)
	}
	if d := diff(full, got); d != "" {
		t.Errorf("GetAppBySecretHash differs: %s", d)
	}
	got, err = s.GetAppByID(ctx, full.ID)
	if err != nil {
		t.Fatalf("GetAppByID: %v", err)
	}
	if d := diff(full, got); d != "" {
		t.Errorf("GetAppByID differs: %s", d)
	}
	if _, err := s.GetAppByID(ctx, "no-such-app"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("GetAppByID of an unknown id: %v, want ErrNotFound", err)
	}
	list, err := s.ListApps(ctx, "acc-1")
	if err != nil {
		t.Fatalf("ListApps: %v", err)
	}
	// The bare app's zero CreatedAt sorts first.
	wantSame(t, "ListApps", []storage.App{bare, full}, list)
}

// testAppRecordsTimePrecision writes every time field of every record kind at the edges of
// millisecond precision and reads each back as the same instant, in UTC.
func testAppRecordsTimePrecision(t *testing.T, s storage.Store) {
	ctx := t.Context()
	for i, tm := range timeCases {
		a := minimalApp("acc-time", fmt.Sprintf("time%d", i))
		a.CreatedAt, a.UpdatedAt = tm, tm.Add(999*time.Millisecond)
		mustCreateApp(t, s, a)
		wantApp(t, s, a)

		u := minimalUser(a.ID, "u")
		u.ExpiresAt, u.LastHwidResetAt, u.LastIPResetAt = tm, tm.Add(time.Millisecond), tm.Add(-time.Millisecond)
		u.LastLoginAt, u.CreatedAt, u.UpdatedAt = tm.Add(2*time.Millisecond), tm, tm.Add(time.Hour)
		mustCreateUser(t, s, u)
		wantUser(t, s, u)

		l := minimalLicense(a.ID, "K")
		l.ExpiresAt, l.ActivatedAt, l.CreatedAt, l.UpdatedAt = tm, tm.Add(time.Millisecond), tm.Add(-time.Millisecond), tm
		mustCreateLicenses(t, s, l)
		wantLicense(t, s, l)

		tok := minimalAppToken(a.ID, "v")
		tok.ExpiresAt, tok.CreatedAt, tok.UpdatedAt = tm, tm.Add(-time.Millisecond), tm.Add(time.Millisecond)
		mustCreateAppTokens(t, s, tok)
		wantAppToken(t, s, tok)

		d := minimalDevice(u, "hw")
		d.CreatedAt, d.LastSeenAt = tm, tm.Add(time.Millisecond)
		mustCreateDevice(t, s, d)
		devs, _, err := s.ListDevices(ctx, a.ID, storage.DeviceQuery{})
		if err != nil {
			t.Fatalf("ListDevices: %v", err)
		}
		wantSame(t, "ListDevices", []storage.Device{d}, devs)
	}
}

func testAppOwnership(t *testing.T, s storage.Store) {
	ctx := t.Context()
	p := populate(t, s, "acc-owner", "Mine", 2, 3, 1)
	app := p.app

	wantNotFound(t, "GetApp by another account", func() error { _, err := s.GetApp(ctx, "acc-other", app.ID); return err }())
	_, err := s.UpdateApp(ctx, "acc-other", app.ID, func(*storage.App) error {
		t.Error("UpdateApp called fn for another account's app")
		return nil
	})
	wantNotFound(t, "UpdateApp by another account", err)
	wantNotFound(t, "DeleteApp by another account", s.DeleteApp(ctx, "acc-other", app.ID))

	// Nothing of the app or its records was touched.
	wantApp(t, s, app)
	if got := countRecords(t, s, app.ID); got != p.counts() {
		t.Errorf("records after another account's DeleteApp = %+v, want %+v", got, p.counts())
	}
	if list, err := s.ListApps(ctx, "acc-other"); err != nil || len(list) != 0 {
		t.Errorf("ListApps(another account) = (%v, %v), want no apps", recIDs(list), err)
	}
	if n, err := s.CountApps(ctx, "acc-other"); err != nil || n != 0 {
		t.Errorf("CountApps(another account) = (%d, %v), want 0", n, err)
	}

	// Missing apps, for the owner too.
	wantNotFound(t, "GetApp(missing)", func() error { _, err := s.GetApp(ctx, app.AccountID, "missing"); return err }())
	_, err = s.UpdateApp(ctx, app.AccountID, "missing", func(*storage.App) error {
		t.Error("UpdateApp called fn for a missing app")
		return nil
	})
	wantNotFound(t, "UpdateApp(missing)", err)
	wantNotFound(t, "DeleteApp(missing)", s.DeleteApp(ctx, app.AccountID, "missing"))
}

func testAppNameConflict(t *testing.T, s storage.Store) {
	ctx := t.Context()
	first := mustCreateApp(t, s, fullApp("acc-a", "My App"))
	other := mustCreateApp(t, s, fullApp("acc-a", "Other"))

	dupName := fullApp("acc-a", "MY APP")
	dupID := fullApp("acc-a", "Fresh")
	dupID.ID = first.ID
	dupIDOtherAccount := fullApp("acc-b", "Fresh")
	dupIDOtherAccount.ID = first.ID
	for name, a := range map[string]storage.App{
		"the name in another case":    dupName,
		"the same id":                 dupID,
		"the id of another's app":     dupIDOtherAccount,
		"an identical app":            first,
		"the name, lower-cased":       fullApp("acc-a", "my app"),
		"the other name, upper-cased": fullApp("acc-a", "OTHER"),
	} {
		wantConflict(t, "CreateApp with "+name, s.CreateApp(ctx, a))
	}
	if n, err := s.CountApps(ctx, "acc-a"); err != nil || n != 2 {
		t.Errorf("CountApps after refused creates = (%d, %v), want 2", n, err)
	}
	if n, err := s.CountApps(ctx, "acc-b"); err != nil || n != 0 {
		t.Errorf("CountApps(acc-b) after a refused create = (%d, %v), want 0", n, err)
	}
	wantApp(t, s, first)

	// The same name is free in another account.
	elsewhere := mustCreateApp(t, s, fullApp("acc-b", "my app"))
	wantApp(t, s, elsewhere)

	// Renaming onto a taken name is refused; changing one's own case is not a conflict.
	_, err := s.UpdateApp(ctx, "acc-a", other.ID, func(a *storage.App) error { a.Name = "mY aPP"; return nil })
	wantConflict(t, "UpdateApp to a taken name", err)
	wantApp(t, s, other)
	want := first
	want.Name = "MY APP"
	got, err := s.UpdateApp(ctx, "acc-a", first.ID, func(a *storage.App) error { a.Name = "MY APP"; return nil })
	if err != nil {
		t.Fatalf("UpdateApp changing own case: %v", err)
	}
	if d := diff(want, got); d != "" {
		t.Errorf("UpdateApp changing own case differs: %s", d)
	}
	// A rename frees the old name.
	if _, err := s.UpdateApp(ctx, "acc-a", other.ID, func(a *storage.App) error { a.Name = "Renamed"; return nil }); err != nil {
		t.Fatalf("UpdateApp rename: %v", err)
	}
	mustCreateApp(t, s, fullApp("acc-a", "other"))

	// A deleted app's name is free again.
	if err := s.DeleteApp(ctx, "acc-a", first.ID); err != nil {
		t.Fatalf("DeleteApp: %v", err)
	}
	mustCreateApp(t, s, fullApp("acc-a", "my app"))
}

func testAppBySecretHash(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreateApp(t, s, fullApp("acc-1", "a"))
	b := mustCreateApp(t, s, fullApp("acc-2", "b"))
	// Apps without a secret must never be found by the empty hash.
	mustCreateApp(t, s, minimalApp("acc-1", "nosecret1"))
	mustCreateApp(t, s, minimalApp("acc-2", "nosecret2"))

	for _, want := range []storage.App{a, b} {
		got, err := s.GetAppBySecretHash(ctx, want.SecretHash)
		if err != nil {
			t.Fatalf("GetAppBySecretHash(%q): %v", want.SecretHash, err)
		}
		if d := diff(want, got); d != "" {
			t.Errorf("GetAppBySecretHash(%q) differs: %s", want.SecretHash, d)
		}
	}
	for _, h := range []string{"", strings.ToUpper(a.SecretHash), a.SecretHash[:10], "deadbeef"} {
		_, err := s.GetAppBySecretHash(ctx, h)
		wantNotFound(t, fmt.Sprintf("GetAppBySecretHash(%q)", h), err)
	}

	// Rotating the secret moves the lookup.
	old := a.SecretHash
	if _, err := s.UpdateApp(ctx, a.AccountID, a.ID, func(x *storage.App) error {
		x.SecretHash, x.SecretLast6 = "rotated-"+old, "abcdef"
		return nil
	}); err != nil {
		t.Fatalf("UpdateApp: %v", err)
	}
	_, err := s.GetAppBySecretHash(ctx, old)
	wantNotFound(t, "GetAppBySecretHash(old secret)", err)
	got, err := s.GetAppBySecretHash(ctx, "rotated-"+old)
	if err != nil || got.ID != a.ID || got.SecretLast6 != "abcdef" {
		t.Errorf("GetAppBySecretHash(new secret) = (%q %q, %v), want %q", got.ID, got.SecretLast6, err, a.ID)
	}
}

func testAppListAndCount(t *testing.T, s storage.Store) {
	ctx := t.Context()
	if list, err := s.ListApps(ctx, "acc-1"); err != nil || len(list) != 0 {
		t.Fatalf("ListApps on an empty store = (%v, %v), want none", recIDs(list), err)
	}
	var apps []storage.App
	for i, name := range []string{"delta", "alpha", "charlie", "bravo", "echo"} {
		a := fullApp("acc-1", name)
		a.CreatedAt = ms(time.Duration(i) * time.Minute)
		apps = append(apps, a)
	}
	// Two apps created at the same instant: the id breaks the tie.
	tie := fullApp("acc-1", "tie")
	tie.CreatedAt = apps[2].CreatedAt
	apps = append(apps, tie)
	// Inserted newest first, so that insertion order is not the answer.
	for i := len(apps) - 1; i >= 0; i-- {
		mustCreateApp(t, s, apps[i])
	}
	mustCreateApp(t, s, fullApp("acc-2", "alpha"))
	mustCreateApp(t, s, fullApp("acc-2", "zulu"))

	want := ordered(apps, func(a, b storage.App) int { return a.CreatedAt.Compare(b.CreatedAt) }, false)
	list, err := s.ListApps(ctx, "acc-1")
	if err != nil {
		t.Fatalf("ListApps: %v", err)
	}
	wantSame(t, "ListApps", want, list)
	for acc, n := range map[string]int{"acc-1": len(apps), "acc-2": 2, "acc-3": 0} {
		if got, err := s.CountApps(ctx, acc); err != nil || got != n {
			t.Errorf("CountApps(%s) = (%d, %v), want %d", acc, got, err, n)
		}
	}
}

func testAppUpdate(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreateApp(t, s, minimalApp("acc-1", "before"))
	bystander := mustCreateApp(t, s, fullApp("acc-1", "bystander"))

	want := fullApp("acc-1", "After")
	want.ID, want.CreatedAt = a.ID, a.CreatedAt
	calls := 0
	got, err := s.UpdateApp(ctx, a.AccountID, a.ID, func(x *storage.App) error {
		calls++
		if d := diff(a, *x); d != "" && calls == 1 {
			t.Errorf("fn got a record that differs from the stored one: %s", d)
		}
		*x = want
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateApp: %v", err)
	}
	if d := diff(want, got); d != "" {
		t.Errorf("UpdateApp result differs: %s", d)
	}
	wantApp(t, s, want)
	wantApp(t, s, bystander)

	// fn cannot move the app: id, account and creation time are kept.
	got, err = s.UpdateApp(ctx, a.AccountID, a.ID, func(x *storage.App) error {
		x.ID, x.AccountID, x.CreatedAt = "hijacked", "acc-thief", ms(time.Hour)
		x.Description = "kept the rest"
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateApp: %v", err)
	}
	want.Description = "kept the rest"
	if d := diff(want, got); d != "" {
		t.Errorf("UpdateApp changing identity: result differs: %s", d)
	}
	wantApp(t, s, want)
	_, err = s.GetApp(ctx, "acc-thief", "hijacked")
	wantNotFound(t, "GetApp(hijacked id)", err)

	// Zero values overwrite too.
	zero := storage.App{ID: a.ID, AccountID: a.AccountID, Name: "z"}
	got, err = s.UpdateApp(ctx, a.AccountID, a.ID, func(x *storage.App) error { *x = zero; return nil })
	if err != nil {
		t.Fatalf("UpdateApp to zero values: %v", err)
	}
	if d := diff(zero, got); d != "" {
		t.Errorf("UpdateApp (zero values) result differs: %s", d)
	}
	wantApp(t, s, zero)
}

// testAppUpdateSessionSettings changes only SessionTimeout and PlainFiles, back and forth,
// and reads them back through every read of an app.
func testAppUpdateSessionSettings(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreateApp(t, s, fullApp("acc-1", "settings"))
	bystander := mustCreateApp(t, s, fullApp("acc-1", "bystander"))
	want := a
	for _, c := range []struct {
		timeout int
		plain   bool
	}{{0, false}, {86400, false}, {60, true}, {0, true}} {
		want.SessionTimeout, want.PlainFiles = c.timeout, c.plain
		want.UpdatedAt = want.UpdatedAt.Add(time.Second)
		got, err := s.UpdateApp(ctx, a.AccountID, a.ID, func(x *storage.App) error {
			x.SessionTimeout, x.PlainFiles, x.UpdatedAt = c.timeout, c.plain, want.UpdatedAt
			return nil
		})
		if err != nil {
			t.Fatalf("UpdateApp(timeout %d, plain %v): %v", c.timeout, c.plain, err)
		}
		if d := diff(want, got); d != "" {
			t.Errorf("UpdateApp(timeout %d, plain %v) result differs: %s", c.timeout, c.plain, d)
		}
		wantApp(t, s, want)
		if got, err := s.GetAppByID(ctx, a.ID); err != nil || diff(want, got) != "" {
			t.Errorf("GetAppByID after UpdateApp(timeout %d, plain %v) = (%+v, %v), want %+v", c.timeout, c.plain, got, err, want)
		}
		if got, err := s.GetAppBySecretHash(ctx, a.SecretHash); err != nil || diff(want, got) != "" {
			t.Errorf("GetAppBySecretHash after UpdateApp(timeout %d, plain %v) = (%+v, %v), want %+v", c.timeout, c.plain, got, err, want)
		}
		list, err := s.ListApps(ctx, a.AccountID)
		if err != nil {
			t.Fatalf("ListApps: %v", err)
		}
		wantSame(t, "ListApps", ordered([]storage.App{want, bystander}, func(x, y storage.App) int { return x.CreatedAt.Compare(y.CreatedAt) }, false), list)
	}
	wantApp(t, s, bystander)
}

func testAppUpdateFnErrorAborts(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreateApp(t, s, fullApp("acc-1", "steady"))
	errBoom := errors.New("boom")
	_, err := s.UpdateApp(ctx, a.AccountID, a.ID, func(x *storage.App) error {
		x.Name, x.Paused = "changed", false
		return fmt.Errorf("wrapped: %w", errBoom)
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("UpdateApp error = %v, want fn's error", err)
	}
	if errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrConflict) {
		t.Errorf("fn's error was turned into a storage sentinel: %v", err)
	}
	wantApp(t, s, a)
}

// testAppUpdateConcurrent runs read-modify-write updaters of one app at once: the
// description is a counter each one increments, so a lost update shows.
func testAppUpdateConcurrent(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := fullApp("acc-1", "counter")
	a.Description = "0"
	mustCreateApp(t, s, a)
	bystander := mustCreateApp(t, s, fullApp("acc-1", "unrelated"))

	const workers = 20
	raceUpdates(t, workers, func(i int) error {
		_, err := s.UpdateApp(ctx, a.AccountID, a.ID, func(x *storage.App) error {
			n, err := strconv.Atoi(x.Description)
			if err != nil {
				return err
			}
			x.Description = strconv.Itoa(n + 1)
			if i%2 == 0 {
				x.Version += "+"
			}
			return nil
		})
		return err
	})
	got, err := s.GetApp(ctx, a.AccountID, a.ID)
	if err != nil {
		t.Fatalf("GetApp: %v", err)
	}
	if got.Description != strconv.Itoa(workers) {
		t.Errorf("counter = %s after %d concurrent increments, want %d", got.Description, workers, workers)
	}
	if want := a.Version + strings.Repeat("+", workers/2); got.Version != want {
		t.Errorf("Version = %q, want %q", got.Version, want)
	}
	wantApp(t, s, bystander)
}

// testAppDeleteCascade deletes an app with records of every kind and checks that all of
// them went, while an app next to it (same account, same user names and keys) keeps all
// of its own.
func testAppDeleteCascade(t *testing.T, s storage.Store) {
	ctx := t.Context()
	doomed := populate(t, s, "acc-1", "Doomed", 3, 4, 2)
	kept := populate(t, s, "acc-1", "Kept", 2, 5, 3)
	otherAccount := populate(t, s, "acc-2", "Doomed", 1, 1, 1)

	if got := countRecords(t, s, doomed.app.ID); got != doomed.counts() {
		t.Fatalf("records of the doomed app before DeleteApp = %+v, want %+v", got, doomed.counts())
	}
	if err := s.DeleteApp(ctx, "acc-1", doomed.app.ID); err != nil {
		t.Fatalf("DeleteApp: %v", err)
	}

	if got := countRecords(t, s, doomed.app.ID); got != (recordCounts{}) {
		t.Errorf("records of the deleted app = %+v, want none", got)
	}
	if c, err := s.CountAppRecords(ctx, doomed.app.ID); err != nil || c != (storage.AppCounts{}) {
		t.Errorf("CountAppRecords(deleted app) = (%+v, %v), want all zero", c, err)
	}
	for _, p := range []populated{kept, otherAccount} {
		if got := countRecords(t, s, p.app.ID); got != p.counts() {
			t.Errorf("records of %s after deleting another app = %+v, want %+v", p.app.Name, got, p.counts())
		}
		wantApp(t, s, p.app)
		for _, u := range p.users {
			wantUser(t, s, u)
		}
		for _, l := range p.licenses {
			wantLicense(t, s, l)
		}
		for _, tok := range p.tokens {
			wantAppToken(t, s, tok)
		}
	}

	_, err := s.GetApp(ctx, "acc-1", doomed.app.ID)
	wantNotFound(t, "GetApp after DeleteApp", err)
	_, err = s.GetAppBySecretHash(ctx, doomed.app.SecretHash)
	wantNotFound(t, "GetAppBySecretHash after DeleteApp", err)
	_, err = s.GetUser(ctx, doomed.app.ID, doomed.users[0].ID)
	wantNotFound(t, "GetUser of the deleted app", err)
	_, err = s.GetLicenseByKey(ctx, doomed.app.ID, doomed.licenses[0].Key)
	wantNotFound(t, "GetLicenseByKey of the deleted app", err)
	_, err = s.GetTokenByValue(ctx, doomed.app.ID, doomed.tokens[0].Value)
	wantNotFound(t, "GetTokenByValue of the deleted app", err)
	wantNotFound(t, "second DeleteApp", s.DeleteApp(ctx, "acc-1", doomed.app.ID))

	// The app created again under the same id starts empty, and its records' ids, names,
	// keys and values are all free again.
	mustCreateApp(t, s, doomed.app)
	if got := countRecords(t, s, doomed.app.ID); got != (recordCounts{}) {
		t.Errorf("records of the re-created app = %+v, want none", got)
	}
	u := mustCreateUser(t, s, doomed.users[0])
	mustCreateDevice(t, s, doomed.devices[0])
	mustCreateLicenses(t, s, doomed.licenses...)
	mustCreateAppTokens(t, s, doomed.tokens...)
	wantUser(t, s, u)
}

func testAppCountRecords(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := populate(t, s, "acc-1", "counted", 3, 5, 2)
	b := populate(t, s, "acc-1", "neighbour", 1, 7, 4)
	empty := mustCreateApp(t, s, fullApp("acc-1", "empty"))

	for _, c := range []struct {
		app  string
		want storage.AppCounts
	}{
		{a.app.ID, storage.AppCounts{Users: 3, Licenses: 5, Tokens: 2}},
		{b.app.ID, storage.AppCounts{Users: 1, Licenses: 7, Tokens: 4}},
		{empty.ID, storage.AppCounts{}},
		{"no-such-app", storage.AppCounts{}},
	} {
		got, err := s.CountAppRecords(ctx, c.app)
		if err != nil {
			t.Fatalf("CountAppRecords(%s): %v", c.app, err)
		}
		if got != c.want {
			t.Errorf("CountAppRecords(%s) = %+v, want %+v", c.app, got, c.want)
		}
	}

	// The counts follow deletions.
	if err := s.DeleteUser(ctx, a.app.ID, a.users[0].ID); err != nil {
		t.Fatalf("DeleteUser: %v", err)
	}
	if err := s.DeleteToken(ctx, a.app.ID, a.tokens[0].ID); err != nil {
		t.Fatalf("DeleteToken: %v", err)
	}
	got, err := s.CountAppRecords(ctx, a.app.ID)
	if err != nil {
		t.Fatalf("CountAppRecords: %v", err)
	}
	if want := (storage.AppCounts{Users: 2, Licenses: 5, Tokens: 1}); got != want {
		t.Errorf("CountAppRecords after deletes = %+v, want %+v", got, want)
	}
}

// testAppStatsNewUsers counts users created at or after NewSince, and none without it.
func testAppStatsNewUsers(t *testing.T, s storage.Store) {
	app := mustCreateApp(t, s, fullApp("acc-1", "growth"))
	since := base.Add(-24 * time.Hour)
	for i, created := range []time.Time{since.Add(-time.Millisecond), since, base, base.Add(-time.Hour)} {
		u := minimalUser(app.ID, fmt.Sprintf("grown-%d", i))
		u.CreatedAt = created
		mustCreateUser(t, s, u)
	}
	got, err := s.AppStats(t.Context(), app.ID, storage.AppStatsQuery{Now: base, DayStart: base, WeekStart: base, NewSince: since})
	if err != nil || got.NewUsers != 3 || got.Users != 4 {
		t.Errorf("AppStats with NewSince = (%+v, %v), want 3 new of 4", got, err)
	}
	got, err = s.AppStats(t.Context(), app.ID, storage.AppStatsQuery{Now: base, DayStart: base, WeekStart: base})
	if err != nil || got.NewUsers != 0 {
		t.Errorf("AppStats without NewSince = (%+v, %v), want no new users counted", got, err)
	}
}

// testAppStats checks every figure on a data set where each user sits on a boundary of
// at least one of them.
func testAppStats(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "stats"))
	other := populate(t, s, "acc-1", "noise", 3, 4, 0) // must not be counted

	q := storage.AppStatsQuery{Now: base, DayStart: base.Add(-10 * time.Hour), WeekStart: base.Add(-5 * 24 * time.Hour)}
	user := func(name string, enabled, banned bool, expires, lastLogin time.Time) {
		u := minimalUser(app.ID, name)
		u.Enabled, u.Banned, u.ExpiresAt, u.LastLoginAt = enabled, banned, expires, lastLogin
		mustCreateUser(t, s, u)
	}
	never := time.Time{}
	// name, enabled, banned, expires, last login
	user("active-today", true, false, never, q.Now.Add(-time.Hour))                                  // active, day, week
	user("active-expiring", true, false, q.Now.Add(time.Millisecond), q.DayStart)                    // active, day (at the instant), week
	user("expired-now", true, false, q.Now, q.DayStart.Add(-time.Millisecond))                       // expired at Now; week only
	user("banned-week", true, true, never, q.WeekStart)                                              // banned; week (at the instant)
	user("disabled", false, false, never, never)                                                     // not active, never logged in
	user("banned-expired", true, true, q.Now.Add(-24*time.Hour), q.WeekStart.Add(-time.Millisecond)) // banned; no login figure
	user("long-expired", true, false, ms(-365*24*time.Hour), never)                                  // expired

	lic := func(key string, used int) storage.License {
		l := minimalLicense(app.ID, key)
		l.UsedCount = used
		return l
	}
	mustCreateLicenses(t, s, lic("A", 0), lic("B", 1), lic("C", 0), lic("D", 3), lic("E", 0))

	got, err := s.AppStats(ctx, app.ID, q)
	if err != nil {
		t.Fatalf("AppStats: %v", err)
	}
	want := storage.AppStats{
		Users: 7, ActiveUsers: 2, BannedUsers: 2, Licenses: 5, UsedLicenses: 2,
		LoginsSinceDay: 2, LoginsSinceWeek: 4,
	}
	if got != want {
		t.Errorf("AppStats = %+v, want %+v", got, want)
	}

	// The noise app has its own figures: fullUser users are banned, fullLicense ones used.
	got, err = s.AppStats(ctx, other.app.ID, q)
	if err != nil {
		t.Fatalf("AppStats(noise): %v", err)
	}
	want = storage.AppStats{Users: 3, BannedUsers: 3, Licenses: 4, UsedLicenses: 4, LoginsSinceDay: 3, LoginsSinceWeek: 3}
	if got != want {
		t.Errorf("AppStats(noise) = %+v, want %+v", got, want)
	}

	got, err = s.AppStats(ctx, "no-such-app", q)
	if err != nil || got != (storage.AppStats{}) {
		t.Errorf("AppStats(unknown app) = (%+v, %v), want all zero", got, err)
	}
}

// testAppUpdateLicensing: the licensing members (signing key, signing switch, grace,
// license file deadline) are written and read back by every read path, and can be set
// on an app created without them.
func testAppUpdateLicensing(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreateApp(t, s, minimalApp("acc-1", "licensing"))
	want, err := s.GetApp(ctx, a.AccountID, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want.SigningKey != "" || want.SignResponses || want.GraceSeconds != 0 || want.LicenseFileDays != 0 {
		t.Fatalf("a new app has licensing members set: %+v", want)
	}
	if want.Portal != (storage.AppPortal{}) {
		t.Fatalf("a new app has its buyer portal set: %+v", want.Portal)
	}
	for _, c := range []struct {
		key         string
		sign        bool
		grace, days int
		portal      storage.AppPortal
	}{{"a2V5LW9uZQ", true, 86400, 30, storage.AppPortal{Enabled: true, PortalSwitches: storage.PortalSwitches{SeatRelease: true, Downloads: true}}},
		{"a2V5LXR3bw", false, 0, 1, storage.AppPortal{PortalSwitches: storage.PortalSwitches{HWIDReset: true, Resend: true}}},
		{"", false, 60, 0, storage.AppPortal{}}} {
		want.SigningKey, want.SignResponses, want.GraceSeconds, want.LicenseFileDays, want.Portal = c.key, c.sign, c.grace, c.days, c.portal
		got, err := s.UpdateApp(ctx, a.AccountID, a.ID, func(x *storage.App) error {
			x.SigningKey, x.SignResponses, x.GraceSeconds, x.LicenseFileDays, x.Portal = c.key, c.sign, c.grace, c.days, c.portal
			return nil
		})
		if err != nil {
			t.Fatalf("UpdateApp(%+v): %v", c, err)
		}
		if d := diff(want, got); d != "" {
			t.Errorf("UpdateApp(%+v) result differs: %s", c, d)
		}
		wantApp(t, s, want)
		if got, err := s.GetAppByID(ctx, a.ID); err != nil || diff(want, got) != "" {
			t.Errorf("GetAppByID after UpdateApp(%+v) = (%+v, %v)", c, got, err)
		}
		list, err := s.ListApps(ctx, a.AccountID)
		if err != nil || len(list) != 1 || diff(want, list[0]) != "" {
			t.Errorf("ListApps after UpdateApp(%+v) = (%+v, %v)", c, list, err)
		}
	}
}
