package storagetest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var eventTests = []subtest{
	{"EventAppendRead", testEventAppendRead},
	{"EventConcurrentAppends", testEventConcurrentAppends},
	{"EventCursors", testEventCursors},
	{"EventCompaction", testEventCompaction},
	{"EventOutbox", testEventOutbox},
}

func newEvent(appID, typ string, at time.Time) storage.EventRecord {
	id := uniq("evt-")
	return storage.EventRecord{ID: id, AppID: appID, Type: typ, Payload: []byte(fmt.Sprintf(`{"id":%q,"n":1}`, id)), At: at}
}

func mustAppend(t *testing.T, s storage.Store, evs ...storage.EventRecord) []storage.EventRecord {
	t.Helper()
	if err := s.AppendEvents(t.Context(), evs); err != nil {
		t.Fatalf("AppendEvents(%d): %v", len(evs), err)
	}
	return evs
}

func readAll(t *testing.T, s storage.Store, after int64) []storage.EventRecord {
	t.Helper()
	var out []storage.EventRecord
	for range 1000 {
		page, err := s.ReadEvents(t.Context(), after, 100)
		if err != nil {
			t.Fatalf("ReadEvents(%d): %v", after, err)
		}
		if len(page) == 0 {
			return out
		}
		out = append(out, page...)
		after = page[len(page)-1].Pos
	}
	t.Fatal("ReadEvents never ended")
	return nil
}

func testEventAppendRead(t *testing.T, s storage.Store) {
	ctx := t.Context()
	if p, err := s.LastEventPos(ctx); err != nil || p != 0 {
		t.Fatalf("LastEventPos of an empty log = %d, %v; want 0", p, err)
	}
	if got, err := s.ReadEvents(ctx, 0, 10); err != nil || len(got) != 0 {
		t.Fatalf("ReadEvents of an empty log = %v, %v", got, err)
	}
	evs := mustAppend(t, s, newEvent("app-a", "user.login", ms(0)), newEvent("app-b", "app.update", ms(time.Second)),
		newEvent("app-a", "license.activate", ms(2*time.Second)), storage.EventRecord{ID: uniq("evt-"), Type: "account.plan"})
	wantSeq := []int64{1, 1, 2, 1}
	for i, e := range evs {
		if e.Seq != wantSeq[i] {
			t.Errorf("event %d: Seq = %d, want %d", i, e.Seq, wantSeq[i])
		}
		if i > 0 && e.Pos <= evs[i-1].Pos {
			t.Errorf("event %d: Pos %d not after %d", i, e.Pos, evs[i-1].Pos)
		}
	}
	if evs[0].Pos <= 0 {
		t.Errorf("first Pos = %d, want positive", evs[0].Pos)
	}
	got := readAll(t, s, 0)
	if len(got) != len(evs) {
		t.Fatalf("read %d events, want %d", len(got), len(evs))
	}
	for i, e := range got {
		w := evs[i]
		if e.ID != w.ID || e.Pos != w.Pos || e.Seq != w.Seq || e.Type != w.Type || e.AppID != w.AppID ||
			!bytes.Equal(e.Payload, w.Payload) && !(len(e.Payload) == 0 && len(w.Payload) == 0) || !e.At.Equal(w.At) {
			t.Errorf("event %d read back as %+v, want %+v", i, e, w)
		}
		if !e.At.IsZero() && e.At.Location() != time.UTC {
			t.Errorf("event %d: At in %v, want UTC", i, e.At.Location())
		}
	}
	if after := readAll(t, s, evs[1].Pos); len(after) != 2 || after[0].ID != evs[2].ID {
		t.Errorf("ReadEvents after the second answered %d events, want the last two", len(after))
	}
	if page, err := s.ReadEvents(ctx, 0, 2); err != nil || len(page) != 2 || page[1].ID != evs[1].ID {
		t.Errorf("ReadEvents limit 2 = %d events, %v", len(page), err)
	}
	if p, err := s.LastEventPos(ctx); err != nil || p != evs[3].Pos {
		t.Errorf("LastEventPos = %d, %v; want %d", p, err, evs[3].Pos)
	}
	if err := s.AppendEvents(ctx, nil); err != nil {
		t.Errorf("AppendEvents(nil): %v", err)
	}
	// The sequence goes on from the stored one.
	more := mustAppend(t, s, newEvent("app-a", "user.login", ms(3*time.Second)))
	if more[0].Seq != 3 || more[0].Pos <= evs[3].Pos {
		t.Errorf("next app-a event: Seq %d Pos %d, want 3 and after %d", more[0].Seq, more[0].Pos, evs[3].Pos)
	}
}

// testEventConcurrentAppends: appenders racing (as nodes of a cluster do) never share a
// position or an app's seq, every app's seqs are 1..n without holes, and they grow with
// the position.
func testEventConcurrentAppends(t *testing.T, s storage.Store) {
	const workers, rounds = 6, 8
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				batch := []storage.EventRecord{newEvent("app-x", "user.login", ms(0)), newEvent(fmt.Sprintf("app-%d", w%2), "user.login", ms(0)),
					newEvent("app-x", "user.logout", ms(time.Duration(r)*time.Millisecond))}
				if err := s.AppendEvents(t.Context(), batch); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("AppendEvents: %v", err)
	}
	all := readAll(t, s, 0)
	if len(all) != workers*rounds*3 {
		t.Fatalf("read %d events, want %d", len(all), workers*rounds*3)
	}
	lastSeq := map[string]int64{}
	ids := map[string]bool{}
	for i, e := range all {
		if i > 0 && e.Pos <= all[i-1].Pos {
			t.Fatalf("positions not increasing at %d", i)
		}
		if ids[e.ID] {
			t.Fatalf("event %s stored twice", e.ID)
		}
		ids[e.ID] = true
		if e.Seq != lastSeq[e.AppID]+1 {
			t.Fatalf("app %s: seq %d after %d (pos %d)", e.AppID, e.Seq, lastSeq[e.AppID], e.Pos)
		}
		lastSeq[e.AppID] = e.Seq
	}
}

func testEventCursors(t *testing.T, s storage.Store) {
	ctx := t.Context()
	if p, err := s.EventCursor(ctx, "logs"); err != nil || p != 0 {
		t.Fatalf("EventCursor of a new consumer = %d, %v; want 0", p, err)
	}
	steps := []struct{ set, want int64 }{{5, 5}, {3, 5}, {9, 9}}
	for _, st := range steps {
		if err := s.SetEventCursor(ctx, "logs", st.set); err != nil {
			t.Fatalf("SetEventCursor(%d): %v", st.set, err)
		}
		if p, err := s.EventCursor(ctx, "logs"); err != nil || p != st.want {
			t.Errorf("after SetEventCursor(%d): %d, %v; want %d", st.set, p, err, st.want)
		}
	}
	if p, err := s.EventCursor(ctx, "webhooks"); err != nil || p != 0 {
		t.Errorf("another consumer's cursor = %d, %v; want 0", p, err)
	}
}

func testEventCompaction(t *testing.T, s storage.Store) {
	ctx := t.Context()
	var evs []storage.EventRecord
	for i := range 10 {
		app := "app-a"
		if i%3 == 2 {
			app = "app-b"
		}
		evs = append(evs, mustAppend(t, s, newEvent(app, "user.login", ms(time.Duration(i)*time.Minute)))...)
	}
	// Nothing consumed, nothing young enough: nothing goes.
	if n, err := s.CompactEvents(ctx, 0, ms(time.Hour), 100); err != nil || n != 0 {
		t.Fatalf("CompactEvents through 0 = %d, %v", n, err)
	}
	if n, err := s.CompactEvents(ctx, evs[9].Pos, ms(-time.Hour), 100); err != nil || n != 0 {
		t.Fatalf("CompactEvents before the oldest = %d, %v", n, err)
	}
	// Limited: the oldest two go.
	if n, err := s.CompactEvents(ctx, evs[9].Pos, ms(time.Hour), 2); err != nil || n != 2 {
		t.Fatalf("CompactEvents limit 2 = %d, %v; want 2", n, err)
	}
	if left := readAll(t, s, 0); len(left) != 8 || left[0].ID != evs[2].ID {
		t.Fatalf("after compacting 2: %d left starting %v, want 8 starting %s", len(left), left[0].ID, evs[2].ID)
	}
	// Through event 5, before minute 5: events 2..4 go (event 5 is at minute 5).
	if _, err := s.CompactEvents(ctx, evs[5].Pos, ms(5*time.Minute), 100); err != nil {
		t.Fatalf("CompactEvents: %v", err)
	}
	left := readAll(t, s, 0)
	if len(left) != 5 || left[0].ID != evs[5].ID {
		t.Fatalf("after compacting through event 5 before minute 5: %d left starting %s, want 5 starting %s", len(left), left[0].ID, evs[5].ID)
	}
	// Everything consumed and old: each app keeps its newest.
	if _, err := s.CompactEvents(ctx, evs[9].Pos, ms(time.Hour), 100); err != nil {
		t.Fatalf("CompactEvents all: %v", err)
	}
	left = readAll(t, s, 0)
	if len(left) != 2 || left[0].ID != evs[8].ID || left[1].ID != evs[9].ID {
		t.Fatalf("after compacting all: %v, want the newest of each app (events 8 and 9)", left)
	}
	// The sequences and positions go on.
	next := mustAppend(t, s, newEvent("app-b", "user.login", ms(0)), newEvent("app-a", "user.login", ms(0)))
	if next[0].Seq != 4 || next[1].Seq != 8 || next[0].Pos <= evs[9].Pos {
		t.Errorf("after compaction: app-b seq %d (want 4), app-a seq %d (want 8), pos %d after %d", next[0].Seq, next[1].Seq, next[0].Pos, evs[9].Pos)
	}
}

// outbox is a storage.EventOutbox that records what the engine did with it.
type outbox struct {
	mu     sync.Mutex
	recs   []storage.EventRecord
	takes  int
	stored []storage.EventRecord
}

func (o *outbox) Take() []storage.EventRecord {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.takes++
	if o.stored != nil {
		return nil
	}
	return append([]storage.EventRecord(nil), o.recs...)
}

func (o *outbox) Stored(recs []storage.EventRecord) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stored = append([]storage.EventRecord(nil), recs...)
}

// testEventOutbox checks the contract of storage.EventOutbox: an engine either stores a
// change's events with it (Stored, each with its Pos and Seq, and in the log) or leaves
// them (Stored not called, nothing in the log); a change that fails stores none of them.
func testEventOutbox(t *testing.T, s storage.Store) {
	ctx := t.Context()
	acc := fullAccount("outbox")
	if err := s.CreateAccount(ctx, acc); err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	app := mustCreateApp(t, s, fullApp(acc.ID, "Outbox"))
	mustAppend(t, s, newEvent(app.ID, "app.update", ms(0))) // the app's seq goes on from 1

	// A change that fails (its updater refuses) stores none of its events.
	failed := &outbox{recs: []storage.EventRecord{newEvent(app.ID, "app.update", ms(time.Second))}}
	refused := fmt.Errorf("refused")
	_, err := s.UpdateApp(storage.WithEventOutbox(ctx, failed), acc.ID, app.ID, func(a *storage.App) error { return refused })
	if err == nil {
		t.Fatal("UpdateApp whose updater failed answered nil")
	}
	if failed.stored != nil {
		t.Fatalf("a failed change reported its events stored: %+v", failed.stored)
	}

	ob := &outbox{recs: []storage.EventRecord{newEvent(app.ID, "app.update", ms(2*time.Second)), newEvent(app.ID, "app.pause", ms(2*time.Second))}}
	if _, err := s.UpdateApp(storage.WithEventOutbox(ctx, ob), acc.ID, app.ID, func(a *storage.App) error {
		a.Description = "changed with its events"
		return nil
	}); err != nil {
		t.Fatalf("UpdateApp: %v", err)
	}
	got := readAll(t, s, 0)
	if ob.stored == nil {
		// The engine wrote no events with the change (MongoDB): the producer appends them.
		if len(got) != 1 {
			t.Fatalf("the engine did not take the outbox but the log holds %d events, want 1", len(got))
		}
		return
	}
	if len(got) != 3 {
		t.Fatalf("the log holds %d events after a change with 2, want 3: %+v", len(got), got)
	}
	for i, want := range ob.recs {
		st, e := ob.stored[i], got[i+1]
		if st.ID != want.ID || e.ID != want.ID || st.Pos != e.Pos || st.Seq != e.Seq || e.Seq != int64(i+2) || e.Type != want.Type ||
			!bytes.Equal(e.Payload, want.Payload) {
			t.Errorf("event %d: stored %+v, in the log %+v, want id %s seq %d type %s", i, st, e, want.ID, i+2, want.Type)
		}
	}
	// The outbox is written once: a later write with the same context adds nothing.
	if _, err := s.UpdateApp(storage.WithEventOutbox(ctx, ob), acc.ID, app.ID, func(a *storage.App) error { return nil }); err != nil {
		t.Fatalf("UpdateApp again: %v", err)
	}
	if n := len(readAll(t, s, 0)); n != 3 {
		t.Fatalf("the log holds %d events after a second write with a stored outbox, want 3", n)
	}
}
