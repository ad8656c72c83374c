package storagetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var logTests = []subtest{
	{"LogRoundTrip", testLogRoundTrip},
	{"LogInsertThousand", testLogInsertThousand},
	{"LogInsertConflict", testLogInsertConflict},
	{"LogListFilters", testLogListFilters},
	{"LogStatsEventsCount", testLogStatsEventsCount},
	{"LogSeries", testLogSeries},
	{"LogCountries", testLogCountries},
	{"LogDeleteBefore", testLogDeleteBefore},
	{"LogTrim", testLogTrim},
	{"LogApps", testLogApps},
}

// Log levels of SPEC 2.
const (
	levelDebug    = "DEBUG"
	levelInfo     = "INFO"
	levelWarning  = "WARNING"
	levelError    = "ERROR"
	levelCritical = "CRITICAL"
)

func fullLog(appID, event, level, username string, at time.Time) storage.LogEntry {
	n := seq.Add(1)
	return storage.LogEntry{
		ID:        fmt.Sprintf("log-%06d", n),
		AppID:     appID,
		Event:     event,
		Message:   fmt.Sprintf("message %d: %s", n, event),
		Username:  username,
		IP:        fmt.Sprintf("198.51.100.%d", n%250),
		Country:   "NL",
		Level:     level,
		Data:      fmt.Sprintf(`{"n":%d,"nested":{"ok":true}}`, n),
		CreatedAt: at,
	}
}

func minimalLog(appID, event string, at time.Time) storage.LogEntry {
	return storage.LogEntry{ID: uniq("log-min-"), AppID: appID, Event: event, CreatedAt: at}
}

func mustInsertLogs(t *testing.T, s storage.Store, es ...storage.LogEntry) []storage.LogEntry {
	t.Helper()
	if err := s.InsertLogs(t.Context(), es); err != nil {
		t.Fatalf("InsertLogs(%d entries): %v", len(es), err)
	}
	return es
}

func newestLogs(es []storage.LogEntry) []storage.LogEntry {
	return newestFirst(es, func(e storage.LogEntry) time.Time { return e.CreatedAt })
}

// wantLogs fails unless ListLogs(q) answers exactly want (in any order given: the list is
// newest first) with want's length as the total, on the whole and on a middle page.
func wantLogs(t *testing.T, s storage.Store, appID, what string, q storage.LogQuery, want []storage.LogEntry) {
	t.Helper()
	want = newestLogs(want)
	got, total, err := s.ListLogs(t.Context(), appID, q)
	if err != nil {
		t.Fatalf("ListLogs(%s): %v", what, err)
	}
	if total != len(want) {
		t.Errorf("ListLogs(%s) total = %d, want %d", what, total, len(want))
	}
	wantSame(t, "ListLogs("+what+")", window(want, 0, q.Page.Normalize().Limit), got)

	q.Page = storage.Page{Limit: 2, Offset: 1}
	got, total, err = s.ListLogs(t.Context(), appID, q)
	if err != nil {
		t.Fatalf("ListLogs(%s, page): %v", what, err)
	}
	if total != len(want) {
		t.Errorf("ListLogs(%s, page) total = %d, want %d", what, total, len(want))
	}
	wantSame(t, "ListLogs("+what+", page)", window(want, 1, 2), got)
}

func testLogRoundTrip(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	full := fullLog(app.ID, "user.login", levelWarning, "Alice", ms(-time.Hour))
	other := fullLog(app.ID, "session.init", levelDebug, "bob", ms(-2*time.Hour+time.Millisecond))
	other.Country, other.Data = "", ""
	bare := minimalLog(app.ID, "", time.Time{})
	mustInsertLogs(t, s, full, other, bare)
	// The bare entry's zero CreatedAt sorts last, newest first.
	wantLogs(t, s, app.ID, "all", storage.LogQuery{}, []storage.LogEntry{full, other, bare})
	got, _, err := s.ListLogs(ctx, app.ID, storage.LogQuery{})
	if err != nil {
		t.Fatalf("ListLogs: %v", err)
	}
	wantSame(t, "ListLogs", []storage.LogEntry{full, other, bare}, got)

	// An id is written once.
	dup := fullLog(app.ID, "user.login", levelInfo, "x", ms(0))
	dup.ID = full.ID
	wantConflict(t, "InsertLogs with a taken id", s.InsertLogs(ctx, []storage.LogEntry{dup}))
	if err := s.InsertLogs(ctx, nil); err != nil {
		t.Errorf("InsertLogs(nil): %v", err)
	}
	if n, err := s.CountLogs(ctx, app.ID, "", time.Time{}); err != nil || n != 3 {
		t.Errorf("CountLogs = (%d, %v), want 3", n, err)
	}
}

func testLogInsertThousand(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	var batch []storage.LogEntry
	for i := range 1000 {
		// Pairs share an instant: the id breaks the tie.
		batch = append(batch, fullLog(app.ID, fmt.Sprintf("event.%d", i%7), levelInfo, fmt.Sprintf("user%d", i), ms(time.Duration(i/2)*time.Second)))
	}
	mustInsertLogs(t, s, batch...)
	if n, err := s.CountLogs(ctx, app.ID, "", time.Time{}); err != nil || n != len(batch) {
		t.Fatalf("CountLogs = (%d, %v), want %d", n, err, len(batch))
	}
	want := newestLogs(batch)
	for off := 0; off < len(want); off += storage.MaxPageSize {
		got, total, err := s.ListLogs(ctx, app.ID, storage.LogQuery{Page: storage.Page{Limit: storage.MaxPageSize, Offset: off}})
		if err != nil {
			t.Fatalf("ListLogs(offset %d): %v", off, err)
		}
		if total != len(batch) {
			t.Errorf("ListLogs total = %d, want %d", total, len(batch))
		}
		wantSame(t, fmt.Sprintf("ListLogs(offset %d)", off), window(want, off, storage.MaxPageSize), got)
	}
}

// testLogInsertConflict: a batch with an entry already stored (a log writer's batch
// written again after a crash) answers ErrConflict, wherever the entry is in it; the
// log writer then writes the entries one by one, and each is stored once.
func testLogInsertConflict(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	stored := mustInsertLogs(t, s, fullLog(app.ID, "user.login", levelInfo, "alice", ms(0)))[0]
	want := 1
	for _, at := range []int{0, 10, 35} {
		var batch []storage.LogEntry
		for i := range 36 {
			if i == at {
				batch = append(batch, stored)
				continue
			}
			batch = append(batch, fullLog(app.ID, "user.login", levelInfo, fmt.Sprintf("user%d", i), ms(time.Duration(i)*time.Second)))
		}
		if err := s.InsertLogs(ctx, batch); !errors.Is(err, storage.ErrConflict) {
			t.Fatalf("InsertLogs with a stored entry at %d = %v, want ErrConflict", at, err)
		}
		for _, e := range batch {
			if err := s.InsertLogs(ctx, []storage.LogEntry{e}); err != nil && !errors.Is(err, storage.ErrConflict) {
				t.Fatalf("InsertLogs(%s) alone: %v", e.ID, err)
			}
		}
		want += 35
		if n, err := s.CountLogs(ctx, app.ID, "", time.Time{}); err != nil || n != want {
			t.Fatalf("after the batch with a stored entry at %d, written again one by one: CountLogs = (%d, %v), want %d", at, n, err, want)
		}
	}
}

func testLogListFilters(t *testing.T, s storage.Store) {
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	at := func(m int) time.Time { return ms(time.Duration(m) * time.Minute) }
	mk := func(event, level, username string, m int) storage.LogEntry {
		return fullLog(app.ID, event, level, username, at(m))
	}
	e1 := mk("user.login", levelInfo, "Alice", 0)
	e2 := mk("user.login", levelError, "bob", 1)
	e3 := mk("user.login_failed", levelWarning, "ALICE.B", 2)
	e4 := mk("file.download", levelInfo, "a.b", 3)
	e5 := mk("user.login", levelInfo, "100%_off", 4)
	e6 := mk("user.register", levelDebug, "(x)", 4) // the same instant as e5
	e7 := mk("user.login", levelCritical, "", 5)
	e8 := mk("user.login", levelInfo, "alice", 6)
	e9 := mk("file.download", levelError, "aXb", 7)
	mustInsertLogs(t, s, e1, e2, e3, e4, e5, e6, e7, e8, e9)
	// Another app's entries, alike: never listed.
	var noise []storage.LogEntry
	for _, e := range []storage.LogEntry{e1, e2, e3, e4, e5, e6, e7, e8, e9} {
		noise = append(noise, fullLog(other.ID, e.Event, e.Level, e.Username, e.CreatedAt))
	}
	mustInsertLogs(t, s, noise...)

	all := []storage.LogEntry{e1, e2, e3, e4, e5, e6, e7, e8, e9}
	cases := []struct {
		name string
		q    storage.LogQuery
		want []storage.LogEntry
	}{
		{"no filter", storage.LogQuery{}, all},
		{"event", storage.LogQuery{Event: "user.login"}, []storage.LogEntry{e1, e2, e5, e7, e8}},
		{"event is exact", storage.LogQuery{Event: "user"}, nil},
		{"level", storage.LogQuery{Level: levelInfo}, []storage.LogEntry{e1, e4, e5, e8}},
		{"level is exact", storage.LogQuery{Level: "info"}, nil},
		{"username, any case", storage.LogQuery{Username: "alice"}, []storage.LogEntry{e1, e3, e8}},
		{"username substring", storage.LogQuery{Username: "LIC"}, []storage.LogEntry{e1, e3, e8}},
		{"username '.' literal", storage.LogQuery{Username: "A.B"}, []storage.LogEntry{e4}},
		{"username LIKE wildcards literal", storage.LogQuery{Username: "%_"}, []storage.LogEntry{e5}},
		{"username regex group literal", storage.LogQuery{Username: "(X)"}, []storage.LogEntry{e6}},
		{"username character class literal", storage.LogQuery{Username: "[a-z]"}, nil},
		{"start inclusive", storage.LogQuery{Start: at(4)}, []storage.LogEntry{e5, e6, e7, e8, e9}},
		{"end inclusive", storage.LogQuery{End: at(2)}, []storage.LogEntry{e1, e2, e3}},
		{"start and end at one instant", storage.LogQuery{Start: at(4), End: at(4)}, []storage.LogEntry{e5, e6}},
		{"between", storage.LogQuery{Start: at(1).Add(time.Millisecond), End: at(6).Add(-time.Millisecond)},
			[]storage.LogEntry{e3, e4, e5, e6, e7}},
		{"event and time", storage.LogQuery{Event: "user.login", Start: at(2), End: at(5)}, []storage.LogEntry{e5, e7}},
		{"event, level and username", storage.LogQuery{Event: "user.login", Level: levelInfo, Username: "ALI"}, []storage.LogEntry{e1, e8}},
		{"level and time", storage.LogQuery{Level: levelError, Start: at(2)}, []storage.LogEntry{e9}},
		{"nothing before", storage.LogQuery{End: at(-1)}, nil},
	}
	for _, c := range cases {
		wantLogs(t, s, app.ID, c.name, c.q, c.want)
	}
	// Paging through all, newest first, with the tie of e5 and e6 broken by id.
	for _, p := range []storage.Page{{Limit: 4}, {Limit: 4, Offset: 4}, {Limit: 4, Offset: 8}, {Limit: 3, Offset: 20}} {
		got, total, err := s.ListLogs(t.Context(), app.ID, storage.LogQuery{Page: p})
		if err != nil {
			t.Fatalf("ListLogs(%+v): %v", p, err)
		}
		if total != len(all) {
			t.Errorf("ListLogs(%+v) total = %d, want %d", p, total, len(all))
		}
		wantSame(t, fmt.Sprintf("ListLogs(%+v)", p), window(newestLogs(all), p.Offset, p.Limit), got)
	}
	wantLogs(t, s, "no-such-app", "unknown app", storage.LogQuery{}, nil)
}

func testLogStatsEventsCount(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	since := base
	after := func(d time.Duration) time.Time { return since.Add(d) }
	mustInsertLogs(t, s,
		fullLog(app.ID, "user.login", levelInfo, "a", after(-time.Millisecond)), // before since
		fullLog(app.ID, "user.login", levelInfo, "b", since),
		fullLog(app.ID, "user.login", levelError, "c", after(time.Minute)),
		fullLog(app.ID, "user.register", levelInfo, "d", after(2*time.Minute)),
		fullLog(app.ID, "user.login_failed", levelWarning, "e", after(3*time.Hour)),
		fullLog(app.ID, "user.login_failed", levelWarning, "f", after(3*time.Hour)),
		fullLog(app.ID, "app.update", levelDebug, "g", after(5*time.Hour)),
		fullLog(other.ID, "user.login", levelInfo, "a", after(time.Minute)),
		fullLog(other.ID, "only.other", levelCritical, "a", after(time.Minute)),
	)

	for _, c := range []struct {
		name  string
		app   string
		since time.Time
		want  storage.LogStats
	}{
		{"since", app.ID, since, storage.LogStats{Total: 6,
			ByLevel: map[string]int{levelInfo: 2, levelError: 1, levelWarning: 2, levelDebug: 1},
			ByEvent: map[string]int{"user.login": 2, "user.register": 1, "user.login_failed": 2, "app.update": 1}}},
		{"a millisecond later", app.ID, after(time.Millisecond), storage.LogStats{Total: 5,
			ByLevel: map[string]int{levelInfo: 1, levelError: 1, levelWarning: 2, levelDebug: 1},
			ByEvent: map[string]int{"user.login": 1, "user.register": 1, "user.login_failed": 2, "app.update": 1}}},
		{"all time", app.ID, time.Time{}, storage.LogStats{Total: 7,
			ByLevel: map[string]int{levelInfo: 3, levelError: 1, levelWarning: 2, levelDebug: 1},
			ByEvent: map[string]int{"user.login": 3, "user.register": 1, "user.login_failed": 2, "app.update": 1}}},
		{"after everything", app.ID, after(6 * time.Hour), storage.LogStats{}},
		{"unknown app", "no-such-app", time.Time{}, storage.LogStats{}},
	} {
		got, err := s.LogStats(ctx, c.app, c.since)
		if err != nil {
			t.Fatalf("LogStats(%s): %v", c.name, err)
		}
		if got.Total != c.want.Total || !maps.Equal(got.ByLevel, c.want.ByLevel) || !maps.Equal(got.ByEvent, c.want.ByEvent) {
			t.Errorf("LogStats(%s) = %+v, want %+v", c.name, got, c.want)
		}
	}

	events, err := s.LogEvents(ctx, app.ID)
	if err != nil {
		t.Fatalf("LogEvents: %v", err)
	}
	if want := []string{"app.update", "user.login", "user.login_failed", "user.register"}; !slices.Equal(events, want) {
		t.Errorf("LogEvents = %q, want %q", events, want)
	}
	if events, err := s.LogEvents(ctx, "no-such-app"); err != nil || len(events) != 0 {
		t.Errorf("LogEvents(unknown app) = (%q, %v), want none", events, err)
	}

	for _, c := range []struct {
		app, event string
		since      time.Time
		want       int
	}{
		{app.ID, "user.login", since, 2},
		{app.ID, "user.login", after(time.Millisecond), 1},
		{app.ID, "user.login", time.Time{}, 3},
		{app.ID, "user.login_failed", after(3 * time.Hour), 2},
		{app.ID, "user.login_failed", after(3*time.Hour + time.Millisecond), 0},
		{app.ID, "only.other", time.Time{}, 0},
		{app.ID, "user", time.Time{}, 0},
		{app.ID, "", since, 6}, // every event
		{other.ID, "user.login", since, 1},
		{"no-such-app", "user.login", time.Time{}, 0},
	} {
		if got, err := s.CountLogs(ctx, c.app, c.event, c.since); err != nil || got != c.want {
			t.Errorf("CountLogs(%s, %q, %v) = (%d, %v), want %d", c.app, c.event, c.since, got, err, c.want)
		}
	}
}

func wantBuckets(t *testing.T, what string, got, want []storage.Bucket) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
		return
	}
	for i := range want {
		if !got[i].Start.Equal(want[i].Start) || got[i].Start.Location() != time.UTC || got[i].Count != want[i].Count {
			t.Errorf("%s: bucket %d = {%v %d}, want {%v %d} (UTC)", what, i, got[i].Start, got[i].Count, want[i].Start, want[i].Count)
		}
	}
}

func testLogSeries(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	day0 := time.Date(2024, time.March, 5, 0, 0, 0, 0, time.UTC)
	at := func(day int, h, m, sec, msec int) time.Time {
		return time.Date(2024, time.March, 5+day, h, m, sec, msec*1_000_000, time.UTC)
	}
	login := func(t time.Time) storage.LogEntry { return fullLog(app.ID, "user.login", levelInfo, "u", t) }
	mustInsertLogs(t, s,
		login(at(-1, 23, 59, 59, 999)),
		login(at(0, 0, 0, 0, 0)),
		login(at(0, 0, 59, 59, 999)),
		login(at(0, 1, 0, 0, 0)),
		login(at(0, 1, 30, 0, 0)),
		login(at(0, 5, 0, 0, 0)),
		login(at(0, 23, 59, 59, 999)),
		login(at(1, 0, 0, 0, 0)),
		login(at(1, 12, 0, 0, 0)),
		login(at(3, 3, 0, 0, 0)), // day 2 has none: left out
		fullLog(app.ID, "user.register", levelInfo, "u", at(0, 2, 0, 0, 0)),
		fullLog(other.ID, "user.login", levelInfo, "u", at(0, 0, 30, 0, 0)),
	)
	hour := func(day, h int) time.Time { return at(day, h, 0, 0, 0) }
	b := func(start time.Time, n int) storage.Bucket { return storage.Bucket{Start: start, Count: n} }

	for _, c := range []struct {
		name   string
		event  string
		since  time.Time
		hourly bool
		want   []storage.Bucket
	}{
		{"hourly", "user.login", day0, true, []storage.Bucket{
			b(hour(0, 0), 2), b(hour(0, 1), 2), b(hour(0, 5), 1), b(hour(0, 23), 1), b(hour(1, 0), 1), b(hour(1, 12), 1), b(hour(3, 3), 1)}},
		{"hourly from an hour on", "user.login", hour(0, 1), true, []storage.Bucket{
			b(hour(0, 1), 2), b(hour(0, 5), 1), b(hour(0, 23), 1), b(hour(1, 0), 1), b(hour(1, 12), 1), b(hour(3, 3), 1)}},
		// An instant inside a bucket: the bucket counts the entries from it on only.
		{"hourly from mid-hour", "user.login", at(0, 0, 30, 0, 0), true, []storage.Bucket{
			b(hour(0, 0), 1), b(hour(0, 1), 2), b(hour(0, 5), 1), b(hour(0, 23), 1), b(hour(1, 0), 1), b(hour(1, 12), 1), b(hour(3, 3), 1)}},
		{"daily", "user.login", day0, false, []storage.Bucket{b(day0, 6), b(hour(1, 0), 2), b(hour(3, 0), 1)}},
		{"daily from the day before", "user.login", day0.Add(-24 * time.Hour), false, []storage.Bucket{
			b(hour(-1, 0), 1), b(day0, 6), b(hour(1, 0), 2), b(hour(3, 0), 1)}},
		{"daily, every event", "", day0, false, []storage.Bucket{b(day0, 7), b(hour(1, 0), 2), b(hour(3, 0), 1)}},
		{"hourly, another event", "user.register", day0, true, []storage.Bucket{b(hour(0, 2), 1)}},
		{"after everything", "user.login", hour(4, 0), true, nil},
		{"unknown event", "user.logout", day0, false, nil},
	} {
		got, err := s.LogSeries(ctx, app.ID, c.event, c.since, c.hourly)
		if err != nil {
			t.Fatalf("LogSeries(%s): %v", c.name, err)
		}
		wantBuckets(t, "LogSeries("+c.name+")", got, c.want)
	}

	// Buckets are floored before 1970 too.
	epoch := mustCreateApp(t, s, fullApp("acc-1", "epoch"))
	mustInsertLogs(t, s,
		fullLog(epoch.ID, "e", levelInfo, "u", time.Date(1969, 12, 31, 23, 30, 0, 0, time.UTC)),
		fullLog(epoch.ID, "e", levelInfo, "u", time.Date(1970, 1, 1, 0, 10, 0, 0, time.UTC)))
	got, err := s.LogSeries(ctx, epoch.ID, "e", time.Time{}, true)
	if err != nil {
		t.Fatalf("LogSeries(before 1970, hourly): %v", err)
	}
	wantBuckets(t, "LogSeries(before 1970, hourly)", got, []storage.Bucket{
		b(time.Date(1969, 12, 31, 23, 0, 0, 0, time.UTC), 1), b(time.Unix(0, 0).UTC(), 1)})
	got, err = s.LogSeries(ctx, epoch.ID, "e", time.Time{}, false)
	if err != nil {
		t.Fatalf("LogSeries(before 1970, daily): %v", err)
	}
	wantBuckets(t, "LogSeries(before 1970, daily)", got, []storage.Bucket{
		b(time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC), 1), b(time.Unix(0, 0).UTC(), 1)})
}

func cc(country string, n int) storage.CountryCount {
	return storage.CountryCount{Country: country, Count: n}
}

func testLogCountries(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	since := base
	var es []storage.LogEntry
	add := func(appID, country string, n int, at time.Time) {
		for range n {
			e := fullLog(appID, "user.login", levelInfo, "u", at)
			e.Country = country
			es = append(es, e)
		}
	}
	add(app.ID, "US", 3, since.Add(time.Hour))
	add(app.ID, "DE", 3, since)
	add(app.ID, "FR", 1, since.Add(2*time.Hour))
	add(app.ID, "GB", 1, since.Add(time.Minute))
	add(app.ID, "GB", 1, since.Add(-time.Millisecond)) // before since
	add(app.ID, "", 4, since.Add(time.Hour))           // unknown: never counted
	add(other.ID, "ZA", 5, since.Add(time.Hour))
	mustInsertLogs(t, s, es...)

	for _, c := range []struct {
		name  string
		app   string
		since time.Time
		want  []storage.CountryCount
	}{
		// Most first; equal counts by country code.
		{"since", app.ID, since, []storage.CountryCount{cc("DE", 3), cc("US", 3), cc("FR", 1), cc("GB", 1)}},
		{"all time", app.ID, time.Time{}, []storage.CountryCount{cc("DE", 3), cc("US", 3), cc("GB", 2), cc("FR", 1)}},
		{"later", app.ID, since.Add(time.Hour), []storage.CountryCount{cc("US", 3), cc("FR", 1)}},
		{"after everything", app.ID, since.Add(3 * time.Hour), nil},
		{"another app", other.ID, time.Time{}, []storage.CountryCount{cc("ZA", 5)}},
		{"unknown app", "no-such-app", time.Time{}, nil},
	} {
		got, err := s.LogCountries(ctx, c.app, c.since)
		if err != nil {
			t.Fatalf("LogCountries(%s): %v", c.name, err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("LogCountries(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}

func testLogDeleteBefore(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreateApp(t, s, fullApp("acc-1", "a"))
	b := mustCreateApp(t, s, fullApp("acc-1", "b"))
	cut := base
	mk := func(appID string, d time.Duration) storage.LogEntry {
		return fullLog(appID, "x", levelInfo, "u", cut.Add(d))
	}
	a1, a2, a3, a4 := mk(a.ID, -2*time.Hour), mk(a.ID, -time.Millisecond), mk(a.ID, 0), mk(a.ID, time.Hour)
	b1, b2 := mk(b.ID, -time.Hour), mk(b.ID, time.Hour)
	mustInsertLogs(t, s, a1, a2, a3, a4, b1, b2)

	if n, err := s.DeleteLogsBefore(ctx, a.ID, cut); err != nil || n != 2 {
		t.Errorf("DeleteLogsBefore(a) = (%d, %v), want 2", n, err)
	}
	wantLogs(t, s, a.ID, "a after DeleteLogsBefore(a)", storage.LogQuery{}, []storage.LogEntry{a3, a4})
	wantLogs(t, s, b.ID, "b after DeleteLogsBefore(a)", storage.LogQuery{}, []storage.LogEntry{b1, b2})
	if n, err := s.DeleteLogsBefore(ctx, a.ID, cut); err != nil || n != 0 {
		t.Errorf("second DeleteLogsBefore(a) = (%d, %v), want 0", n, err)
	}

	// Every app's entries.
	if n, err := s.DeleteLogsBefore(ctx, "", cut.Add(time.Hour)); err != nil || n != 2 {
		t.Errorf("DeleteLogsBefore(all apps) = (%d, %v), want 2", n, err)
	}
	wantLogs(t, s, a.ID, "a after DeleteLogsBefore(all)", storage.LogQuery{}, []storage.LogEntry{a4})
	wantLogs(t, s, b.ID, "b after DeleteLogsBefore(all)", storage.LogQuery{}, []storage.LogEntry{b2})
	if n, err := s.DeleteLogsBefore(ctx, "", cut.Add(time.Hour)); err != nil || n != 0 {
		t.Errorf("second DeleteLogsBefore(all apps) = (%d, %v), want 0", n, err)
	}
}

func testLogTrim(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreateApp(t, s, fullApp("acc-1", "a"))
	b := mustCreateApp(t, s, fullApp("acc-1", "b"))
	var entries []storage.LogEntry
	for _, m := range []int{3, 0, 1, 1, 2, 3, 3, 4, 6, 5} { // ties at 1 and 3 minutes
		entries = append(entries, fullLog(a.ID, "x", levelInfo, "u", ms(time.Duration(m)*time.Minute)))
	}
	mustInsertLogs(t, s, entries...)
	bs := mustInsertLogs(t, s, fullLog(b.ID, "x", levelInfo, "u", ms(0)), fullLog(b.ID, "x", levelInfo, "u", ms(time.Minute)))
	newest := newestLogs(entries)

	left := len(entries)
	for _, c := range []struct {
		keep, deleted int
	}{
		{4, 6}, // keeps 6, 5, 4 and the newest id of the three at 3 minutes
		{4, 0},
		{10, 0},
		{1, 3},
		{0, 1},
		{0, 0},
	} {
		n, err := s.TrimLogs(ctx, a.ID, c.keep)
		if err != nil || n != c.deleted {
			t.Errorf("TrimLogs(keep %d) = (%d, %v), want %d", c.keep, n, err, c.deleted)
		}
		left -= c.deleted
		wantLogs(t, s, a.ID, fmt.Sprintf("after TrimLogs(keep %d)", c.keep), storage.LogQuery{}, window(newest, 0, left))
		wantLogs(t, s, b.ID, fmt.Sprintf("the other app after TrimLogs(keep %d)", c.keep), storage.LogQuery{}, bs)
	}
	if n, err := s.TrimLogs(ctx, "no-such-app", 0); err != nil || n != 0 {
		t.Errorf("TrimLogs(unknown app) = (%d, %v), want 0", n, err)
	}
}

func testLogApps(t *testing.T, s storage.Store) {
	ctx := t.Context()
	var apps []storage.App
	for i, n := range []int{5, 3, 1, 0} {
		app := mustCreateApp(t, s, fullApp("acc-1", fmt.Sprintf("app%d", i)))
		apps = append(apps, app)
		for j := range n {
			mustInsertLogs(t, s, fullLog(app.ID, "x", levelInfo, "u", ms(time.Duration(j)*time.Second)))
		}
	}
	for _, c := range []struct {
		moreThan int
		want     []string
	}{
		{5, nil},
		{4, []string{apps[0].ID}},
		{3, []string{apps[0].ID}},
		{2, []string{apps[0].ID, apps[1].ID}},
		{0, []string{apps[0].ID, apps[1].ID, apps[2].ID}},
	} {
		got, err := s.LogApps(ctx, c.moreThan)
		if err != nil {
			t.Fatalf("LogApps(%d): %v", c.moreThan, err)
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(c.want))
		if !slices.Equal(got, want) {
			t.Errorf("LogApps(%d) = %q, want %q", c.moreThan, got, want)
		}
	}
}
