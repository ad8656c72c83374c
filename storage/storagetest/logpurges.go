package storagetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

// logPurgeTests: a purge of an app's logs is stored as an intent with its audit entry in
// one write before any entry goes (issue 21), and a run (the request's, or a resumption
// after a stop) deletes exactly to its cutoff and removes the intent.
var logPurgeTests = []subtest{
	{"LogPurgeWithItsEntry", testLogPurgeWithItsEntry},
	{"LogPurgeResumed", testLogPurgeResumed},
	{"LogPurgeOfNothing", testLogPurgeOfNothing},
}

func newLogPurge(appID string, days int, before time.Time) storage.LogPurge {
	return storage.LogPurge{ID: uniq("purge-"), AppID: appID, Days: days, Before: before, AccountID: "acc", Actor: "owner",
		RequestID: uniq("req-"), CreatedAt: ms(0), TouchedAt: ms(0)}
}

func wantLogPurges(t *testing.T, s storage.Store, what string, want ...storage.LogPurge) {
	t.Helper()
	got, err := s.LogPurges(t.Context())
	if err != nil {
		t.Fatalf("LogPurges (%s): %v", what, err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("LogPurges (%s):\n got %v\nwant %v", what, got, want)
	}
}

// testLogPurgeWithItsEntry: BeginLogPurge stores the intent and its entry (reported
// stored, in the chain once) and deletes nothing; RunLogPurge deletes the app's entries
// older than the cutoff, not those at or after it nor another app's, answers how many and
// removes the intent; nothing is left to recover.
func testLogPurgeWithItsEntry(t *testing.T, s storage.Store) {
	ctx := t.Context()
	acc := storage.Account{ID: uniq("acc")}
	app := mustCreateApp(t, s, minimalApp(acc.ID, uniq("app")))
	other := mustCreateApp(t, s, minimalApp(acc.ID, uniq("other")))
	cut := ms(time.Hour)
	old := mustInsertLogs(t, s, minimalLog(app.ID, "user.login", ms(0)), minimalLog(app.ID, "user.login", cut.Add(-time.Millisecond)))
	kept := mustInsertLogs(t, s, minimalLog(app.ID, "user.login", cut), minimalLog(app.ID, "user.login", cut.Add(time.Minute)))
	otherKept := mustInsertLogs(t, s, minimalLog(other.ID, "user.login", ms(0)))

	p := newLogPurge(app.ID, 30, cut)
	dctx, d := withDraft(ctx, acc.ID, app.ID, "logs", app.ID)
	if err := s.BeginLogPurge(dctx, p); err != nil {
		t.Fatalf("BeginLogPurge: %v", err)
	}
	if !d.wasStored() {
		t.Fatal("the purge's entry was not reported stored with its intent")
	}
	checkChain(t, s, acc.ID, 1, 1)
	wantLogPurges(t, s, "begun", p)
	wantLogs(t, s, app.ID, "after BeginLogPurge", storage.LogQuery{}, append(append([]storage.LogEntry{}, old...), kept...))

	if n, err := s.RunLogPurge(ctx, p); err != nil || n != len(old) {
		t.Fatalf("RunLogPurge = %d, %v; want %d", n, err, len(old))
	}
	wantLogs(t, s, app.ID, "after RunLogPurge", storage.LogQuery{}, kept)
	wantLogs(t, s, other.ID, "the other app after RunLogPurge", storage.LogQuery{}, otherKept)
	wantLogPurges(t, s, "run")
	recoverAudit(t, s)
	if e := checkChain(t, s, acc.ID, 1, 1)[0]; e.RecordType != "logs" || e.RecordID != app.ID {
		t.Fatalf("the purge's entry: %+v", e)
	}
}

// testLogPurgeResumed: an intent left by a stopped node (stored, nothing deleted, entries
// written since) is finished by a later run to its own cutoff, even by two runs at once
// (two nodes resuming it): each entry goes once, the intent goes, the entry stays once.
func testLogPurgeResumed(t *testing.T, s storage.Store) {
	ctx := t.Context()
	acc := storage.Account{ID: uniq("acc")}
	app := mustCreateApp(t, s, minimalApp(acc.ID, uniq("app")))
	cut := ms(time.Hour)
	var old []storage.LogEntry
	for i := range 20 {
		old = append(old, minimalLog(app.ID, "user.login", ms(time.Duration(i)*time.Minute)))
	}
	mustInsertLogs(t, s, old...)
	p := newLogPurge(app.ID, 1, cut)
	dctx, _ := withDraft(ctx, acc.ID, app.ID, "logs", app.ID)
	if err := s.BeginLogPurge(dctx, p); err != nil {
		t.Fatalf("BeginLogPurge: %v", err)
	}
	// Written after the purge was asked, later than its cutoff: kept.
	later := mustInsertLogs(t, s, minimalLog(app.ID, "user.login", cut.Add(time.Second)))

	left, err := s.LogPurges(ctx)
	if err != nil || len(left) != 1 {
		t.Fatalf("LogPurges = %v, %v; want the stopped node's intent", left, err)
	}
	var wg sync.WaitGroup
	counts := make([]int, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() { counts[i], errs[i] = s.RunLogPurge(ctx, left[0]) })
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || counts[0]+counts[1] != len(old) {
		t.Fatalf("two runs at once = %v, %v; want %d entries deleted between them", counts, errs, len(old))
	}
	wantLogs(t, s, app.ID, "after the resumed purge", storage.LogQuery{}, later)
	wantLogPurges(t, s, "resumed")
	recoverAudit(t, s)
	checkChain(t, s, acc.ID, 1, 1)
}

// testLogPurgeOfNothing: a purge that finds nothing before its cutoff removes its intent
// too. (Purges of more than one chunk are each engine's own test, with a small chunk.)
func testLogPurgeOfNothing(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, minimalApp(uniq("acc"), uniq("app")))
	kept := mustInsertLogs(t, s, minimalLog(app.ID, "user.login", ms(time.Hour)))
	empty := newLogPurge(app.ID, 1, ms(0))
	if err := s.BeginLogPurge(ctx, empty); err != nil {
		t.Fatal(err)
	}
	if got, err := s.RunLogPurge(ctx, empty); err != nil || got != 0 {
		t.Fatalf("RunLogPurge of nothing = %d, %v; want 0", got, err)
	}
	wantLogs(t, s, app.ID, "after a purge of nothing", storage.LogQuery{}, kept)
	wantLogPurges(t, s, "nothing to purge")
}

// LogPurgeChunks checks a purge of more entries than a chunk of the engine (set small by
// the engine's own test): every entry before the cutoff goes, entries created at the
// same instant across a chunk's edge included, and none at or after it.
func LogPurgeChunks(t *testing.T, s storage.Store, chunk int) {
	ctx := t.Context()
	app := mustCreateApp(t, s, minimalApp(uniq("acc"), uniq("app")))
	n := 4*chunk + 3
	batch := make([]storage.LogEntry, 0, n)
	for i := range n {
		// Three entries an instant: some chunks end in the middle of an instant.
		batch = append(batch, storage.LogEntry{ID: fmt.Sprintf("%s-%05d", app.ID, i), AppID: app.ID, Event: "user.login",
			CreatedAt: ms(time.Duration(i/3) * time.Millisecond)})
	}
	mustInsertLogs(t, s, batch...)
	kept := mustInsertLogs(t, s, minimalLog(app.ID, "user.login", ms(time.Hour)))
	p := newLogPurge(app.ID, 1, ms(time.Hour))
	if err := s.BeginLogPurge(ctx, p); err != nil {
		t.Fatal(err)
	}
	if got, err := s.RunLogPurge(ctx, p); err != nil || got != n {
		t.Fatalf("RunLogPurge = %d, %v; want %d", got, err, n)
	}
	wantLogs(t, s, app.ID, "after the purge in chunks", storage.LogQuery{}, kept)
	wantLogPurges(t, s, "in chunks")
}

// BenchLogPurge times a purge of n entries of one app: "intent" stores the intent (no
// audit entry: the edge's is one insert more) and runs it; "direct" is DeleteLogsBefore,
// the purge before intents. The entries are inserted with the timer stopped.
func BenchLogPurge(b *testing.B, s storage.Store, n int) {
	app := uniq("bench-app")
	fill := func(b *testing.B) {
		b.StopTimer()
		batch := make([]storage.LogEntry, 0, n)
		for i := range n {
			batch = append(batch, storage.LogEntry{ID: uniq("bench-log-"), AppID: app, Event: "user.login",
				CreatedAt: ms(time.Duration(i) * time.Millisecond)})
		}
		if err := s.InsertLogs(b.Context(), batch); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.Run("intent", func(b *testing.B) {
		for range b.N {
			fill(b)
			p := newLogPurge(app, 1, ms(time.Hour))
			if err := s.BeginLogPurge(b.Context(), p); err != nil {
				b.Fatal(err)
			}
			if got, err := s.RunLogPurge(b.Context(), p); err != nil || got != n {
				b.Fatalf("RunLogPurge = %d, %v", got, err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		for range b.N {
			fill(b)
			if got, err := s.DeleteLogsBefore(b.Context(), app, ms(time.Hour)); err != nil || got != n {
				b.Fatalf("DeleteLogsBefore = %d, %v", got, err)
			}
		}
	})
}
