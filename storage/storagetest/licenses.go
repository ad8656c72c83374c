package storagetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var licenseTests = []subtest{
	{"LicenseRoundTrip", testLicenseRoundTrip},
	{"LicenseConflict", testLicenseConflict},
	{"LicenseScopedToApp", testLicenseScopedToApp},
	{"LicenseUnknownApp", testLicenseUnknownApp},
	{"LicenseCreateThousand", testLicenseCreateThousand},
	{"LicenseCreateAllOrNothing", testLicenseCreateAllOrNothing},
	{"LicenseUpdate", testLicenseUpdate},
	{"LicenseUpdateConcurrent", testLicenseUpdateConcurrent},
	{"LicenseListSearch", testLicenseListSearch},
	{"LicenseListSort", testLicenseListSort},
	{"LicenseListFilters", testLicenseListFilters},
	{"LicenseDelete", testLicenseDelete},
	{"LicenseDeleteByIDs", testLicenseDeleteByIDs},
	{"LicenseDeleteWhere", testLicenseDeleteWhere},
}

func testLicenseRoundTrip(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	full := fullLicense(app.ID, "ABCD-EFGH-1234")
	bare := minimalLicense(app.ID, "BARE-0000")
	mustCreateLicenses(t, s, full, bare)

	wantLicense(t, s, full)
	wantLicense(t, s, bare)
	got, err := s.GetLicenseByKey(ctx, app.ID, full.Key)
	if err != nil {
		t.Fatalf("GetLicenseByKey: %v", err)
	}
	if d := diff(full, got); d != "" {
		t.Errorf("GetLicenseByKey differs: %s", d)
	}
	// Keys are compared as stored.
	for _, k := range []string{strings.ToLower(full.Key), "ABCD", full.Key + " "} {
		_, err := s.GetLicenseByKey(ctx, app.ID, k)
		wantNotFound(t, fmt.Sprintf("GetLicenseByKey(%q)", k), err)
	}
	list, total, err := s.ListLicenses(ctx, app.ID, storage.LicenseQuery{})
	if err != nil {
		t.Fatalf("ListLicenses: %v", err)
	}
	if total != 2 {
		t.Errorf("ListLicenses total = %d, want 2", total)
	}
	wantSame(t, "ListLicenses", []storage.License{bare, full}, list)
	if n, err := s.CountLicenses(ctx, app.ID); err != nil || n != 2 {
		t.Errorf("CountLicenses = (%d, %v), want 2", n, err)
	}
	// An empty batch is no error and writes nothing.
	if err := s.CreateLicenses(ctx, nil); err != nil {
		t.Errorf("CreateLicenses(nil): %v", err)
	}
}

func testLicenseConflict(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	app2 := mustCreateApp(t, s, fullApp("acc-1", "app2"))
	first := mustCreateLicenses(t, s, fullLicense(app.ID, "KEY-1"))[0]
	second := mustCreateLicenses(t, s, fullLicense(app.ID, "KEY-2"))[0]

	sameID := fullLicense(app2.ID, "KEY-NEW")
	sameID.ID = first.ID
	for name, l := range map[string]storage.License{
		"the same key":                 fullLicense(app.ID, "KEY-1"),
		"the same id (in another app)": sameID,
		"an identical license":         first,
	} {
		wantConflict(t, "CreateLicenses with "+name, s.CreateLicenses(ctx, []storage.License{l}))
	}
	if n, err := s.CountLicenses(ctx, app.ID); err != nil || n != 2 {
		t.Errorf("CountLicenses after refused creates = (%d, %v), want 2", n, err)
	}
	if n, err := s.CountLicenses(ctx, app2.ID); err != nil || n != 0 {
		t.Errorf("CountLicenses(app2) after a refused create = (%d, %v), want 0", n, err)
	}
	wantLicense(t, s, first)

	// The key is free in another app, and a key differing in case is another key.
	mustCreateLicenses(t, s, fullLicense(app2.ID, "KEY-1"), fullLicense(app.ID, "key-1"))

	_, err := s.UpdateLicense(ctx, app.ID, second.ID, func(l *storage.License) error { l.Key = "KEY-1"; return nil })
	wantConflict(t, "UpdateLicense to a taken key", err)
	wantLicense(t, s, second)
	// A changed key frees the old one.
	if _, err := s.UpdateLicense(ctx, app.ID, second.ID, func(l *storage.License) error { l.Key = "KEY-3"; return nil }); err != nil {
		t.Fatalf("UpdateLicense changing the key: %v", err)
	}
	mustCreateLicenses(t, s, fullLicense(app.ID, "KEY-2"))
	if got, err := s.GetLicenseByKey(ctx, app.ID, "KEY-3"); err != nil || got.ID != second.ID {
		t.Errorf("GetLicenseByKey(new key) = (%q, %v), want %q", got.ID, err, second.ID)
	}
}

func testLicenseScopedToApp(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	l := mustCreateLicenses(t, s, fullLicense(app.ID, "MINE"))[0]

	_, err := s.GetLicense(ctx, other.ID, l.ID)
	wantNotFound(t, "GetLicense from another app", err)
	_, err = s.GetLicenseByKey(ctx, other.ID, l.Key)
	wantNotFound(t, "GetLicenseByKey from another app", err)
	_, err = s.UpdateLicense(ctx, other.ID, l.ID, func(*storage.License) error {
		t.Error("UpdateLicense called fn for a license of another app")
		return nil
	})
	wantNotFound(t, "UpdateLicense from another app", err)
	wantNotFound(t, "DeleteLicense from another app", s.DeleteLicense(ctx, other.ID, l.ID))
	if n, err := s.DeleteLicenses(ctx, other.ID, []string{l.ID}); err != nil || n != 0 {
		t.Errorf("DeleteLicenses from another app = (%d, %v), want 0", n, err)
	}
	for _, f := range []string{storage.LicenseFilterUsed, storage.LicenseFilterBanned, storage.LicenseFilterExpired} {
		if n, err := s.DeleteLicensesWhere(ctx, other.ID, f, ms(1000*24*time.Hour)); err != nil || n != 0 {
			t.Errorf("DeleteLicensesWhere(%s) from another app = (%d, %v), want 0", f, n, err)
		}
	}
	_, err = s.UpdateLicense(ctx, app.ID, "missing", func(*storage.License) error {
		t.Error("UpdateLicense called fn for a missing license")
		return nil
	})
	wantNotFound(t, "UpdateLicense(missing)", err)
	_, err = s.GetLicense(ctx, app.ID, "missing")
	wantNotFound(t, "GetLicense(missing)", err)
	wantLicense(t, s, l)
}

func testLicenseUnknownApp(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	good := fullLicense(app.ID, "GOOD")
	orphan := fullLicense("no-such-app", "ORPHAN")
	wantNotFound(t, "CreateLicenses for an unknown app", s.CreateLicenses(ctx, []storage.License{orphan}))
	// A batch with one license of an unknown app is refused whole.
	wantNotFound(t, "CreateLicenses with one license of an unknown app", s.CreateLicenses(ctx, []storage.License{good, orphan}))
	for _, l := range []storage.License{good, orphan} {
		_, err := s.GetLicense(ctx, l.AppID, l.ID)
		wantNotFound(t, "GetLicense of a refused license", err)
	}
	if n, err := s.CountLicenses(ctx, app.ID); err != nil || n != 0 {
		t.Errorf("CountLicenses after refused batches = (%d, %v), want 0", n, err)
	}
	mustCreateLicenses(t, s, good)
	wantLicense(t, s, good)
}

// licenseBatch makes n licenses of the app with distinct keys and creation times.
func licenseBatch(appID, prefix string, n int) []storage.License {
	out := make([]storage.License, n)
	for i := range out {
		l := fullLicense(appID, fmt.Sprintf("%s-%05d", prefix, i))
		l.CreatedAt = ms(time.Duration(i) * time.Second)
		l.UsedCount = i % 3
		out[i] = l
	}
	return out
}

func testLicenseCreateThousand(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	batch := licenseBatch(app.ID, "BULK", 1000)
	mustCreateLicenses(t, s, batch...)

	if n, err := s.CountLicenses(ctx, app.ID); err != nil || n != len(batch) {
		t.Fatalf("CountLicenses = (%d, %v), want %d", n, err, len(batch))
	}
	// Every license reads back exactly, page by page in key order.
	want := ordered(batch, func(a, b storage.License) int { return strings.Compare(a.Key, b.Key) }, false)
	for off := 0; off < len(want); off += storage.MaxPageSize {
		got, total, err := s.ListLicenses(ctx, app.ID, storage.LicenseQuery{SortBy: storage.LicenseSortKey,
			Page: storage.Page{Limit: storage.MaxPageSize, Offset: off}})
		if err != nil {
			t.Fatalf("ListLicenses(offset %d): %v", off, err)
		}
		if total != len(batch) {
			t.Errorf("ListLicenses total = %d, want %d", total, len(batch))
		}
		wantSame(t, fmt.Sprintf("ListLicenses(offset %d)", off), window(want, off, storage.MaxPageSize), got)
	}
}

// testLicenseCreateAllOrNothing makes batches fail on a key or id that exists, at the
// start, in the middle and at the end, and on keys repeated within the batch: each time
// nothing of the batch may be left, and the existing licenses must be untouched.
func testLicenseCreateAllOrNothing(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	existing := mustCreateLicenses(t, s, fullLicense(app.ID, "EXISTING"))[0]
	foreign := mustCreateLicenses(t, s, fullLicense(other.ID, "FOREIGN"))[0]

	const n = 300
	fresh := func() []storage.License { return licenseBatch(app.ID, uniq("B"), n) }
	withKey := func(at int, key string) []storage.License {
		b := fresh()
		b[at].Key = key
		return b
	}
	withID := func(at int, id string) []storage.License {
		b := fresh()
		b[at].ID = id
		return b
	}
	cases := map[string][]storage.License{
		"an existing key first":           withKey(0, existing.Key),
		"an existing key in the middle":   withKey(n/2, existing.Key),
		"an existing key last":            withKey(n-1, existing.Key),
		"an existing id in the middle":    withID(n/2, existing.ID),
		"another app's license id last":   withID(n-1, foreign.ID),
		"a key repeated within the batch": withKey(n-1, fmt.Sprintf("%s-%05d", "dup", 0)),
	}
	dup := cases["a key repeated within the batch"]
	dup[0].Key = dup[n-1].Key
	for name, batch := range cases {
		wantConflict(t, "CreateLicenses with "+name, s.CreateLicenses(ctx, batch))
		if got, err := s.CountLicenses(ctx, app.ID); err != nil || got != 1 {
			t.Errorf("after the batch with %s: CountLicenses = (%d, %v), want 1 (nothing inserted)", name, got, err)
		}
		for _, l := range batch {
			if l.ID == existing.ID || l.ID == foreign.ID {
				continue
			}
			if _, err := s.GetLicense(ctx, app.ID, l.ID); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("after the batch with %s: license %s of the batch: error = %v, want ErrNotFound", name, l.ID, err)
				break
			}
		}
		wantLicense(t, s, existing)
		wantLicense(t, s, foreign)
	}
	if n, err := s.CountLicenses(ctx, other.ID); err != nil || n != 1 {
		t.Errorf("CountLicenses(other app) = (%d, %v), want 1", n, err)
	}

	// Nothing of the refused batches stands in the way of the same licenses now.
	ok := cases["an existing key in the middle"]
	ok[n/2].Key = "NOW-FREE"
	mustCreateLicenses(t, s, ok...)
	if got, err := s.CountLicenses(ctx, app.ID); err != nil || got != n+1 {
		t.Errorf("CountLicenses after a good batch = (%d, %v), want %d", got, err, n+1)
	}
}

func testLicenseUpdate(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	l := mustCreateLicenses(t, s, minimalLicense(app.ID, "BEFORE"))[0]
	bystander := mustCreateLicenses(t, s, fullLicense(app.ID, "BYSTANDER"))[0]

	want := fullLicense(app.ID, "AFTER")
	want.ID, want.CreatedAt = l.ID, l.CreatedAt
	got, err := s.UpdateLicense(ctx, app.ID, l.ID, func(x *storage.License) error {
		*x = want
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateLicense: %v", err)
	}
	if d := diff(want, got); d != "" {
		t.Errorf("UpdateLicense result differs: %s", d)
	}
	wantLicense(t, s, want)
	wantLicense(t, s, bystander)
	_, err = s.GetLicenseByKey(ctx, app.ID, "BEFORE")
	wantNotFound(t, "GetLicenseByKey(old key)", err)

	got, err = s.UpdateLicense(ctx, app.ID, l.ID, func(x *storage.License) error {
		x.ID, x.AppID, x.CreatedAt = "hijacked", "other-app", ms(time.Hour)
		x.Note = "kept the rest"
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateLicense: %v", err)
	}
	want.Note = "kept the rest"
	if d := diff(want, got); d != "" {
		t.Errorf("UpdateLicense changing identity: result differs: %s", d)
	}
	wantLicense(t, s, want)

	zero := storage.License{ID: l.ID, AppID: app.ID, Key: "Z"}
	got, err = s.UpdateLicense(ctx, app.ID, l.ID, func(x *storage.License) error { *x = zero; return nil })
	if err != nil {
		t.Fatalf("UpdateLicense to zero values: %v", err)
	}
	if d := diff(zero, got); d != "" {
		t.Errorf("UpdateLicense (zero values) result differs: %s", d)
	}
	wantLicense(t, s, zero)

	errBoom := errors.New("boom")
	_, err = s.UpdateLicense(ctx, app.ID, l.ID, func(x *storage.License) error {
		x.UsedCount = 77
		return errBoom
	})
	if !errors.Is(err, errBoom) || errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrConflict) {
		t.Errorf("UpdateLicense with a failing fn: error = %v, want fn's error only", err)
	}
	wantLicense(t, s, zero)
}

func testLicenseUpdateConcurrent(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	l := mustCreateLicenses(t, s, minimalLicense(app.ID, "COUNTER"))[0]
	bystander := mustCreateLicenses(t, s, fullLicense(app.ID, "BYSTANDER"))[0]

	const workers = 20
	raceUpdates(t, workers, func(i int) error {
		_, err := s.UpdateLicense(ctx, app.ID, l.ID, func(x *storage.License) error {
			x.UsedCount++
			x.UsedBy = fmt.Sprintf("user%d", i)
			if i%2 == 0 {
				x.Level++
			}
			return nil
		})
		return err
	})
	got, err := s.GetLicense(ctx, app.ID, l.ID)
	if err != nil {
		t.Fatalf("GetLicense: %v", err)
	}
	if got.UsedCount != workers || got.Level != workers/2 {
		t.Errorf("UsedCount, Level = %d, %d after %d concurrent updates, want %d, %d",
			got.UsedCount, got.Level, workers, workers, workers/2)
	}
	wantLicense(t, s, bystander)
}

func testLicenseListSearch(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	mk := func(appID, key, usedBy, note string, age int) storage.License {
		l := fullLicense(appID, key)
		l.UsedBy, l.Note, l.CreatedAt = usedBy, note, ms(time.Duration(age)*time.Minute)
		return mustCreateLicenses(t, s, l)[0]
	}
	a := mk(app.ID, "AAAA-1111", "", "", 1)
	b := mk(app.ID, "BBBB-2222", "Alice", "", 2)
	c := mk(app.ID, "CCCC-3333", "", "Gift for ALICE's team", 3)
	d := mk(app.ID, "DDDD-A.B0", "bob", "promo 50%_off", 4)
	e := mk(app.ID, "EEEE-AXB0", "carol", "(beta)", 5)
	mk(other.ID, "AAAA-1111", "alice", "alice", 0) // another app's: never listed

	cases := []struct {
		search string
		want   []storage.License
	}{
		{"aaaa", []storage.License{a}},              // key, any case
		{"alice", []storage.License{b, c}},          // usedBy or note
		{"-2222", []storage.License{b}},             // part of a key
		{"a.b", []storage.License{d}},               // '.' is literal
		{"%_", []storage.License{d}},                // LIKE wildcards are literal
		{"(BETA)", []storage.License{e}},            // regex groups are literal
		{"[a-z]", nil},                              // character classes too
		{"", []storage.License{a, b, c, d, e}},      // everything
		{"nothing like it", []storage.License(nil)}, // no match
	}
	for _, c := range cases {
		got, total, err := s.ListLicenses(ctx, app.ID, storage.LicenseQuery{Search: c.search})
		if err != nil {
			t.Fatalf("ListLicenses(search %q): %v", c.search, err)
		}
		if total != len(c.want) {
			t.Errorf("ListLicenses(search %q) total = %d, want %d", c.search, total, len(c.want))
		}
		wantSame(t, fmt.Sprintf("ListLicenses(search %q)", c.search), c.want, got)
	}
	got, total, err := s.ListLicenses(ctx, app.ID, storage.LicenseQuery{Search: "alice", Page: storage.Page{Limit: 1, Offset: 1}})
	if err != nil {
		t.Fatalf("ListLicenses: %v", err)
	}
	if total != 2 {
		t.Errorf("ListLicenses(search, page 2) total = %d, want 2", total)
	}
	wantSame(t, "ListLicenses(search, page 2)", []storage.License{c}, got)
}

func testLicenseListSort(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	type row struct {
		key              string
		created, expires time.Duration // -1: the zero time
		used             int
	}
	at := func(d time.Duration) time.Time {
		if d == -1 {
			return time.Time{}
		}
		return ms(d)
	}
	rows := []row{
		{"KEY-E", 3 * time.Minute, time.Hour, 0},
		{"KEY-A", time.Minute, -1, 5},
		{"KEY-D", 3 * time.Minute, 2 * time.Hour, 5},
		{"KEY-C", 2 * time.Minute, time.Hour, 1},
		{"KEY-B", time.Minute, -1, 0},
		{"KEY-F", 4 * time.Minute, 30 * time.Minute, 12},
		{"KEY-G", 2 * time.Minute, time.Hour, 0},
	}
	var ls []storage.License
	for _, r := range rows {
		l := fullLicense(app.ID, r.key)
		l.CreatedAt, l.ExpiresAt, l.UsedCount = at(r.created), at(r.expires), r.used
		ls = append(ls, l)
	}
	mustCreateLicenses(t, s, ls...)

	keys := map[string]func(a, b storage.License) int{
		storage.LicenseSortKey:       func(a, b storage.License) int { return strings.Compare(a.Key, b.Key) },
		storage.LicenseSortCreatedAt: func(a, b storage.License) int { return a.CreatedAt.Compare(b.CreatedAt) },
		storage.LicenseSortExpiresAt: func(a, b storage.License) int { return a.ExpiresAt.Compare(b.ExpiresAt) },
		storage.LicenseSortUsedCount: func(a, b storage.License) int { return a.UsedCount - b.UsedCount },
		"":                           func(a, b storage.License) int { return a.CreatedAt.Compare(b.CreatedAt) },
	}
	for sortBy, key := range keys {
		for _, desc := range []bool{false, true} {
			want := ordered(ls, key, desc)
			for _, p := range []storage.Page{{}, {Limit: 3}, {Limit: 3, Offset: 3}, {Limit: 3, Offset: 6}, {Limit: 4, Offset: 10}} {
				got, total, err := s.ListLicenses(ctx, app.ID, storage.LicenseQuery{SortBy: sortBy, Desc: desc, Page: p})
				if err != nil {
					t.Fatalf("ListLicenses(sort %q desc %v): %v", sortBy, desc, err)
				}
				if total != len(ls) {
					t.Errorf("ListLicenses(sort %q desc %v %+v) total = %d, want %d", sortBy, desc, p, total, len(ls))
				}
				np := p.Normalize()
				wantSame(t, fmt.Sprintf("ListLicenses(sort %q desc %v %+v)", sortBy, desc, p), window(want, np.Offset, np.Limit), got)
			}
		}
	}
}

func testLicenseListFilters(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	now := base
	mk := func(key string, used int, banned bool, expires time.Time, age int) storage.License {
		l := fullLicense(app.ID, key)
		l.UsedCount, l.Banned, l.ExpiresAt, l.CreatedAt = used, banned, expires, ms(time.Duration(age)*time.Minute)
		return l
	}
	fresh := mk("FRESH", 0, false, time.Time{}, 1)
	used := mk("USED", 2, false, now.Add(time.Hour), 2)
	expiredNow := mk("EXPIRED-NOW", 0, false, now, 3)
	usedExpired := mk("USED-EXPIRED", 1, false, now.Add(-time.Millisecond), 4)
	banned := mk("BANNED", 0, true, now.Add(time.Millisecond), 5)
	bannedUsedExpired := mk("BANNED-USED-EXPIRED", 9, true, now.Add(-24*time.Hour), 6)
	mustCreateLicenses(t, s, fresh, used, expiredNow, usedExpired, banned, bannedUsedExpired)

	cases := []struct {
		name string
		q    storage.LicenseQuery
		want []storage.License
	}{
		{"no filter", storage.LicenseQuery{}, []storage.License{fresh, used, expiredNow, usedExpired, banned, bannedUsedExpired}},
		{"used", storage.LicenseQuery{Used: ptr(true)}, []storage.License{used, usedExpired, bannedUsedExpired}},
		{"unused", storage.LicenseQuery{Used: ptr(false)}, []storage.License{fresh, expiredNow, banned}},
		{"banned", storage.LicenseQuery{Banned: ptr(true)}, []storage.License{banned, bannedUsedExpired}},
		{"not banned", storage.LicenseQuery{Banned: ptr(false)}, []storage.License{fresh, used, expiredNow, usedExpired}},
		{"expired", storage.LicenseQuery{Expired: true, Now: now}, []storage.License{expiredNow, usedExpired, bannedUsedExpired}},
		{"expired a bit later", storage.LicenseQuery{Expired: true, Now: now.Add(time.Millisecond)},
			[]storage.License{expiredNow, usedExpired, banned, bannedUsedExpired}},
		{"used, expired, not banned", storage.LicenseQuery{Used: ptr(true), Expired: true, Now: now, Banned: ptr(false)},
			[]storage.License{usedExpired}},
		{"unused with search", storage.LicenseQuery{Used: ptr(false), Search: "expired"}, []storage.License{expiredNow}},
		{"used, by used count, descending", storage.LicenseQuery{Used: ptr(true), SortBy: storage.LicenseSortUsedCount, Desc: true},
			[]storage.License{bannedUsedExpired, used, usedExpired}},
	}
	for _, c := range cases {
		got, total, err := s.ListLicenses(ctx, app.ID, c.q)
		if err != nil {
			t.Fatalf("ListLicenses(%s): %v", c.name, err)
		}
		if total != len(c.want) {
			t.Errorf("ListLicenses(%s) total = %d, want %d", c.name, total, len(c.want))
		}
		wantSame(t, "ListLicenses("+c.name+")", c.want, got)

		q := c.q
		q.Page = storage.Page{Limit: 2, Offset: 1}
		got, total, err = s.ListLicenses(ctx, app.ID, q)
		if err != nil {
			t.Fatalf("ListLicenses(%s, page): %v", c.name, err)
		}
		if total != len(c.want) {
			t.Errorf("ListLicenses(%s, page) total = %d, want %d", c.name, total, len(c.want))
		}
		wantSame(t, "ListLicenses("+c.name+", page)", window(c.want, 1, 2), got)
	}
}

func testLicenseDelete(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	ls := mustCreateLicenses(t, s, fullLicense(app.ID, "ONE"), fullLicense(app.ID, "TWO"))

	if err := s.DeleteLicense(ctx, app.ID, ls[0].ID); err != nil {
		t.Fatalf("DeleteLicense: %v", err)
	}
	_, err := s.GetLicense(ctx, app.ID, ls[0].ID)
	wantNotFound(t, "GetLicense after DeleteLicense", err)
	_, err = s.GetLicenseByKey(ctx, app.ID, "ONE")
	wantNotFound(t, "GetLicenseByKey after DeleteLicense", err)
	wantNotFound(t, "second DeleteLicense", s.DeleteLicense(ctx, app.ID, ls[0].ID))
	wantNotFound(t, "DeleteLicense(missing)", s.DeleteLicense(ctx, app.ID, "missing"))
	wantLicense(t, s, ls[1])
	// The key and the id are free again.
	mustCreateLicenses(t, s, ls[0])
}

func testLicenseDeleteByIDs(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	ls := mustCreateLicenses(t, s, licenseBatch(app.ID, "DEL", 10)...)
	foreign := mustCreateLicenses(t, s, fullLicense(other.ID, "FOREIGN"))[0]

	n, err := s.DeleteLicenses(ctx, app.ID, []string{ls[1].ID, "unknown-1", ls[4].ID, foreign.ID, ls[7].ID, "unknown-2", ls[4].ID})
	if err != nil {
		t.Fatalf("DeleteLicenses: %v", err)
	}
	if n != 3 {
		t.Errorf("DeleteLicenses answered %d, want 3 (unknown ids, repeats and another app's license do not count)", n)
	}
	gone := map[string]bool{ls[1].ID: true, ls[4].ID: true, ls[7].ID: true}
	for _, l := range ls {
		if gone[l.ID] {
			_, err := s.GetLicense(ctx, app.ID, l.ID)
			wantNotFound(t, "GetLicense of a deleted license", err)
		} else {
			wantLicense(t, s, l)
		}
	}
	wantLicense(t, s, foreign)

	for name, ids := range map[string][]string{"no ids": nil, "only unknown ids": {"x", "y"}, "ids already gone": {ls[1].ID}} {
		if n, err := s.DeleteLicenses(ctx, app.ID, ids); err != nil || n != 0 {
			t.Errorf("DeleteLicenses(%s) = (%d, %v), want 0", name, n, err)
		}
	}

	// Many ids in one call.
	many := mustCreateLicenses(t, s, licenseBatch(app.ID, "MANY", 700)...)
	ids := recIDs(many)
	ids = append(ids, "unknown-3")
	if n, err := s.DeleteLicenses(ctx, app.ID, ids); err != nil || n != len(many) {
		t.Errorf("DeleteLicenses(%d ids) = (%d, %v), want %d", len(ids), n, err, len(many))
	}
	if got, err := s.CountLicenses(ctx, app.ID); err != nil || got != len(ls)-3 {
		t.Errorf("CountLicenses = (%d, %v), want %d", got, err, len(ls)-3)
	}
}

func testLicenseDeleteWhere(t *testing.T, s storage.Store) {
	ctx := t.Context()
	now := base
	setup := func() (storage.App, storage.App, map[string]storage.License) {
		app := mustCreateApp(t, s, fullApp("acc-1", uniq("app")))
		other := mustCreateApp(t, s, fullApp("acc-1", uniq("other")))
		mk := func(appID, key string, used int, banned bool, expires time.Time) storage.License {
			l := fullLicense(appID, key)
			l.UsedCount, l.Banned, l.ExpiresAt = used, banned, expires
			return l
		}
		ls := map[string]storage.License{
			"fresh":         mk(app.ID, "FRESH", 0, false, time.Time{}),
			"used":          mk(app.ID, "USED", 3, false, now.Add(time.Hour)),
			"expired-now":   mk(app.ID, "EXPIRED-NOW", 0, false, now),
			"expired-later": mk(app.ID, "EXPIRED-LATER", 0, false, now.Add(time.Millisecond)),
			"banned":        mk(app.ID, "BANNED", 0, true, time.Time{}),
			"all":           mk(app.ID, "ALL", 1, true, now.Add(-time.Hour)),
		}
		for _, l := range ls {
			mustCreateLicenses(t, s, l)
		}
		// The other app has one of each kind, all of which must survive.
		mustCreateLicenses(t, s, mk(other.ID, "O-USED", 5, false, time.Time{}), mk(other.ID, "O-BANNED", 0, true, time.Time{}),
			mk(other.ID, "O-EXPIRED", 0, false, now.Add(-time.Hour)))
		return app, other, ls
	}
	cases := []struct {
		filter string
		gone   []string
	}{
		{storage.LicenseFilterUsed, []string{"used", "all"}},
		{storage.LicenseFilterExpired, []string{"expired-now", "all"}},
		{storage.LicenseFilterBanned, []string{"banned", "all"}},
	}
	for _, c := range cases {
		app, other, ls := setup()
		n, err := s.DeleteLicensesWhere(ctx, app.ID, c.filter, now)
		if err != nil {
			t.Fatalf("DeleteLicensesWhere(%s): %v", c.filter, err)
		}
		if n != len(c.gone) {
			t.Errorf("DeleteLicensesWhere(%s) answered %d, want %d", c.filter, n, len(c.gone))
		}
		for name, l := range ls {
			if slices.Contains(c.gone, name) {
				_, err := s.GetLicense(ctx, app.ID, l.ID)
				wantNotFound(t, fmt.Sprintf("after DeleteLicensesWhere(%s): GetLicense(%s)", c.filter, name), err)
			} else {
				wantLicense(t, s, l)
			}
		}
		if got, err := s.CountLicenses(ctx, other.ID); err != nil || got != 3 {
			t.Errorf("after DeleteLicensesWhere(%s): CountLicenses(other app) = (%d, %v), want 3", c.filter, got, err)
		}
		// Nothing left to match: a second call deletes nothing.
		if n, err := s.DeleteLicensesWhere(ctx, app.ID, c.filter, now); err != nil || n != 0 {
			t.Errorf("second DeleteLicensesWhere(%s) = (%d, %v), want 0", c.filter, n, err)
		}
	}

	// An unknown filter is an error and deletes nothing.
	app, _, _ := setup()
	if _, err := s.DeleteLicensesWhere(ctx, app.ID, "everything", now); err == nil {
		t.Error("DeleteLicensesWhere with an unknown filter succeeded, want an error")
	}
	if got, err := s.CountLicenses(ctx, app.ID); err != nil || got != 6 {
		t.Errorf("CountLicenses after an unknown filter = (%d, %v), want 6", got, err)
	}
}
