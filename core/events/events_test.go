package events_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/sqlite"
)

// openStore opens a SQLite store in a temporary file (the embedded engine).
func openStore(t *testing.T, dir string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(dir, "keyward.db")})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// recorder collects what a consumer handles and says when it has n events.
type recorder struct {
	mu   sync.Mutex
	evs  []events.Event
	want int
	got  chan struct{}
}

func newRecorder(want int) *recorder { return &recorder{want: want, got: make(chan struct{})} }

func (r *recorder) handle(_ context.Context, evs []events.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	before := len(r.evs)
	r.evs = append(r.evs, evs...)
	if before < r.want && len(r.evs) >= r.want {
		close(r.got)
	}
	return nil
}

func (r *recorder) wait(t *testing.T, what string) []events.Event {
	t.Helper()
	select {
	case <-r.got:
	case <-time.After(2 * time.Minute): // a bound, not a figure: -race on a busy machine
		r.mu.Lock()
		defer r.mu.Unlock()
		t.Fatalf("%s: %d events handled, want %d", what, len(r.evs), r.want)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]events.Event(nil), r.evs...)
}

func TestPublishStoresAndConsumersReadInOrder(t *testing.T) {
	store := openStore(t, t.TempDir())
	bus := events.NewBus(events.Config{Store: store})
	defer bus.Close()
	rec := newRecorder(200)
	bus.Consume(events.ConsumerConfig{Name: "logs", Shared: true, Handle: rec.handle})
	var stored atomic.Int64
	bus.OnStored(func(e events.Event) {
		if e.Pos <= 0 || e.Seq <= 0 || e.ID == "" {
			t.Errorf("OnStored got %+v without id, pos or seq", e)
		}
		stored.Add(1)
	})
	bus.Start()
	// Concurrent publishers: each publishes its events in order.
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if err := bus.Publish(t.Context(), events.Event{Name: events.UserLogin, AppID: fmt.Sprintf("app-%d", w),
					Data: map[string]any{"i": i, "w": w}}); err != nil {
					t.Errorf("Publish: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if stored.Load() != 200 {
		t.Errorf("OnStored ran %d times, want 200", stored.Load())
	}
	// Every acknowledged event is in the store.
	if last, err := store.LastEventPos(t.Context()); err != nil || last < 200 {
		t.Fatalf("LastEventPos = %d, %v; want >= 200", last, err)
	}
	got := rec.wait(t, "logs")
	next := map[string]int64{}
	ids := map[string]bool{}
	for _, e := range got {
		if ids[e.ID] {
			t.Fatalf("event %s handled twice", e.ID)
		}
		ids[e.ID] = true
		w := e.Data["w"]
		// From the database numbers come back as json.Number; from this node's recent
		// events as published: both print the same.
		n, _ := strconv.ParseInt(fmt.Sprint(e.Data["i"]), 10, 64)
		if n != next[fmt.Sprint(w)] {
			t.Fatalf("app %s: event %d handled after %d", e.AppID, n, next[fmt.Sprint(w)]-1)
		}
		next[fmt.Sprint(w)]++
		if e.Level != events.LevelInfo || e.At.IsZero() {
			t.Errorf("event %s: level %q at %v; want INFO and a time", e.ID, e.Level, e.At)
		}
	}
}

func TestConsumerRetriesAndResumesFromItsCursor(t *testing.T) {
	dir := t.TempDir()
	store := openStore(t, dir)
	bus := events.NewBus(events.Config{Store: store})
	var calls atomic.Int64
	rec := newRecorder(10)
	bus.Consume(events.ConsumerConfig{Name: "webhooks", Shared: true, Batch: 3, Handle: func(ctx context.Context, evs []events.Event) error {
		if calls.Add(1) <= 2 {
			return errors.New("receiver down") // the same events come again
		}
		return rec.handle(ctx, evs)
	}})
	bus.Start()
	for i := range 10 {
		if err := bus.Publish(t.Context(), events.Event{Name: events.LicenseActivate, AppID: "a", Message: fmt.Sprint(i)}); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	got := rec.wait(t, "after failures")
	for i, e := range got[:10] {
		if e.Message != fmt.Sprint(i) {
			t.Fatalf("event %d is %q: lost or reordered by the retries", i, e.Message)
		}
	}
	bus.Close()
	if err := bus.Publish(t.Context(), events.Event{Name: events.UserLogin, AppID: "a"}); !errors.Is(err, events.ErrClosed) {
		t.Errorf("Publish after Close = %v, want ErrClosed", err)
	}
	// Events stored while no consumer runs are handled at the next start, and the ones
	// handled before are not handed again.
	bus2 := events.NewBus(events.Config{Store: store})
	defer bus2.Close()
	for i := range 5 {
		if err := bus2.Publish(t.Context(), events.Event{Name: events.UserLogin, AppID: "a", Message: fmt.Sprint("later", i)}); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	rec2 := newRecorder(5)
	bus2.Consume(events.ConsumerConfig{Name: "webhooks", Shared: true, Handle: rec2.handle})
	bus2.Start()
	got2 := rec2.wait(t, "after restart")
	if len(got2) != 5 || got2[0].Message != "later0" {
		t.Errorf("after restart the consumer got %d events starting %q, want the 5 new ones", len(got2), got2[0].Message)
	}
}

func TestNodeConsumerStartsAtTheEnd(t *testing.T) {
	store := openStore(t, t.TempDir())
	bus := events.NewBus(events.Config{Store: store})
	defer bus.Close()
	if err := bus.Publish(t.Context(), events.Event{Name: events.AppUpdate, AppID: "old"}); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	rec := newRecorder(1)
	bus.Consume(events.ConsumerConfig{Name: "app-actors", Types: events.SnapshotChanges, Handle: rec.handle})
	bus.Start()
	// A node consumer reads from where the log ended when it started: wait until it has
	// read its start (its cursor is set), then publish.
	for i := 0; bus.Consumers()[0].Cursor() == 0; i++ {
		if i > 3000 {
			t.Fatal("the consumer never started")
		}
		time.Sleep(time.Millisecond)
	}
	if err := bus.Publish(t.Context(), events.Event{Name: events.UserLogin, AppID: "new"},
		events.Event{Name: events.RuleCreate, AppID: "new"}); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	got := rec.wait(t, "app-actors")
	if len(got) != 1 || got[0].AppID != "new" || got[0].Name != events.RuleCreate {
		t.Errorf("node consumer got %+v, want only the new rule.create", got)
	}
}

// TestBacklogIsNotDropped: a consumer that is blocked while 50,000 events arrive (a
// webhook receiver answering slowly) loses none of them; they are handled in order once
// it recovers, and its lag says how far behind it was.
func TestBacklogIsNotDropped(t *testing.T) {
	const n = 50_000
	store := openStore(t, t.TempDir())
	bus := events.NewBus(events.Config{Store: store})
	defer bus.Close()
	release := make(chan struct{})
	rec := newRecorder(n)
	c := bus.Consume(events.ConsumerConfig{Name: "webhooks", Shared: true, Handle: func(ctx context.Context, evs []events.Event) error {
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		return rec.handle(ctx, evs)
	}})
	bus.Start()
	var wg sync.WaitGroup
	for w := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n / 10 / 100 {
				batch := make([]events.Event, 100)
				for j := range batch {
					batch[j] = events.Event{Name: events.UserLogin, AppID: fmt.Sprintf("app-%d", w), Data: map[string]any{"n": i*100 + j}}
				}
				if err := bus.Publish(t.Context(), batch...); err != nil {
					t.Errorf("Publish: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if last, err := store.LastEventPos(t.Context()); err != nil || last != n {
		t.Fatalf("stored %d events (%v), want %d", last, err, n)
	}
	start := time.Now()
	close(release)
	got := rec.wait(t, "backlog")
	took := time.Since(start)
	if len(got) != n {
		t.Fatalf("handled %d events, want %d", len(got), n)
	}
	for i, e := range got {
		if e.Pos != int64(i+1) {
			t.Fatalf("event %d has pos %d: lost, repeated or reordered", i, e.Pos)
		}
	}
	t.Logf("caught up with %d events in %v (%.0f events/s); lag now %d", n, took, float64(n)/took.Seconds(), c.Lag())
}

func TestCompactionKeepsWhatAConsumerNeeds(t *testing.T) {
	store := openStore(t, t.TempDir())
	now := time.Now()
	clock := func() time.Time { return now }
	bus := events.NewBus(events.Config{Store: store, Now: clock, KeepFor: time.Minute, MaxAge: time.Hour})
	defer bus.Close()
	for i := range 10 {
		if err := bus.Publish(t.Context(), events.Event{Name: events.UserLogin, AppID: "a", At: now.Add(-2 * time.Hour).Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	if err := bus.Publish(t.Context(), events.Event{Name: events.UserLogin, AppID: "a", At: now.Add(-30 * time.Minute)}); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	bus.Consume(events.ConsumerConfig{Name: "logs", Shared: true, Handle: func(context.Context, []events.Event) error { return nil }})
	if err := store.SetEventCursor(t.Context(), "logs", 5); err != nil {
		t.Fatal(err)
	}
	// MaxAge removes the events older than an hour whatever the cursor (but the app's newest).
	if err := bus.Compact(t.Context()); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	left, err := store.ReadEvents(t.Context(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Pos != 11 {
		t.Errorf("after compaction %d events left, want the young one (pos 11)", len(left))
	}
}

var _ storage.EventLogStore = (*sqlite.Store)(nil)

// publishRecorder is a Publisher that is not the event log.
type publishRecorder struct{ got []events.Event }

func (p *publishRecorder) Publish(_ context.Context, es ...events.Event) error {
	p.got = append(p.got, es...)
	return nil
}

func TestChangeStoresEventsInTheChangesTransaction(t *testing.T) {
	ctx := t.Context()
	store := openStore(t, t.TempDir())
	bus := events.NewBus(events.Config{Store: store})
	defer bus.Close()
	var mu sync.Mutex
	var heard []events.Event
	bus.OnStored(func(e events.Event) {
		mu.Lock()
		heard = append(heard, e)
		mu.Unlock()
	})
	if err := store.CreateAccount(ctx, storage.Account{ID: "acc-1", Username: "owner", Email: "owner@example.org"}); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateApp(ctx, storage.App{ID: "app-1", AccountID: "acc-1", Name: "One"}); err != nil {
		t.Fatal(err)
	}

	// A change that fails writes none of its events.
	octx, ch := events.Begin(ctx, bus)
	if _, err := store.UpdateApp(octx, "acc-1", "app-1", func(a *storage.App) error {
		ch.Set(events.Event{Name: events.AppUpdate, AppID: a.ID})
		return errors.New("refused")
	}); err == nil {
		t.Fatal("UpdateApp with a failing updater answered nil")
	}
	if pos, err := store.LastEventPos(ctx); err != nil || pos != 0 {
		t.Fatalf("after a failed change the log's head is %d, %v; want 0", pos, err)
	}

	// A change that succeeds writes its events in its transaction: they are in the log
	// before Commit, which only announces them.
	octx, ch = events.Begin(ctx, bus)
	if _, err := store.UpdateApp(octx, "acc-1", "app-1", func(a *storage.App) error {
		a.Paused = true
		ch.Set(events.Event{Name: events.AppUpdate, AppID: a.ID, Data: map[string]any{"paused": a.Paused}})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	stored, err := store.ReadEvents(ctx, 0, 10)
	if err != nil || len(stored) != 1 {
		t.Fatalf("after the change and before Commit the log holds %d events (%v), want 1", len(stored), err)
	}
	if err := ch.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if stored[0].ID != ch.Events()[0].ID || stored[0].Seq != 1 || stored[0].Type != string(events.AppUpdate) {
		t.Fatalf("stored %+v, want the change's event %s with seq 1", stored[0], ch.Events()[0].ID)
	}
	mu.Lock()
	if len(heard) != 1 || heard[0].ID != stored[0].ID || heard[0].Pos != stored[0].Pos {
		t.Errorf("OnStored heard %+v, want the event at position %d once", heard, stored[0].Pos)
	}
	mu.Unlock()
	if pos, _ := store.LastEventPos(ctx); pos != stored[0].Pos {
		t.Fatalf("Commit wrote again: the log's head is %d, want %d", pos, stored[0].Pos)
	}

	// Over a Publisher that is not the log (or an engine that takes no outbox), Commit
	// publishes the events.
	rec := &publishRecorder{}
	octx, ch = events.Begin(ctx, rec)
	ch.Add(events.Event{Name: events.AppDelete, AppID: "app-1"})
	if _, err := store.UpdateApp(octx, "acc-1", "app-1", func(*storage.App) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := ch.Commit(ctx); err != nil || len(rec.got) != 1 || rec.got[0].ID != ch.Events()[0].ID {
		t.Fatalf("Commit over a recorder: %v, published %+v", err, rec.got)
	}
}

// TestSkipLocalHandlesOnlyOtherNodesEvents: a node's consumer with SkipLocal leaves the
// events this node stored (its OnStored hooks had them) and handles the other nodes'.
func TestSkipLocalHandlesOnlyOtherNodesEvents(t *testing.T) {
	ctx := t.Context()
	store := openStore(t, t.TempDir())
	bus := events.NewBus(events.Config{Store: store})
	defer bus.Close()
	var local atomic.Int64
	bus.OnStored(func(events.Event) { local.Add(1) })
	rec := newRecorder(1)
	c := bus.Consume(events.ConsumerConfig{Name: "app-actors", SkipLocal: true, Handle: rec.handle})
	bus.Start()
	for i := range 5 {
		if err := bus.Publish(ctx, events.Event{Name: events.AppUpdate, AppID: "app-" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	// Another node's event: stored in the log, not through this bus.
	other, err := events.Encode(events.Event{ID: "other-node", Name: events.AppUpdate, AppID: "app-9", At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.AppendEvents(ctx, []storage.EventRecord{other}); err != nil {
		t.Fatal(err)
	}
	bus.Wake()
	got := rec.wait(t, "the other node's event")
	deadline := time.Now().Add(30 * time.Second)
	for c.Cursor() < other.Pos && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(got) != 1 || got[0].ID != "other-node" || local.Load() != 5 {
		t.Fatalf("handled %+v and heard %d locally; want only the other node's event handled and 5 heard", got, local.Load())
	}
}

// TestWritePendingWithStoresStagedEventsInTheWrite: the round of staged events is written
// by the write's own transaction (a sign-in's session copies), and when the write fails
// it is appended after it, so that its publishers are answered either way.
func TestWritePendingWithStoresStagedEventsInTheWrite(t *testing.T) {
	ctx := t.Context()
	store := openStore(t, t.TempDir())
	bus := events.NewBus(events.Config{Store: store})
	defer bus.Close()
	if err := store.CreateAccount(ctx, storage.Account{ID: "acc-1", Username: "owner", Email: "owner@example.org"}); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateApp(ctx, storage.App{ID: "app-1", AccountID: "acc-1", Name: "One"}); err != nil {
		t.Fatal(err)
	}
	ticket, err := bus.Stage(events.Event{Name: events.UserLogin, AppID: "app-1"}, events.Event{Name: events.LicenseActivate, AppID: "app-1"})
	if err != nil {
		t.Fatal(err)
	}
	var inWrite int64
	err = bus.WritePendingWith(ctx, func(ctx context.Context) error {
		if _, err := store.UpdateApp(ctx, "acc-1", "app-1", func(a *storage.App) error { a.Description = "x"; return nil }); err != nil {
			return err
		}
		inWrite, _ = store.LastEventPos(ctx) // before WritePendingWith could append them itself
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ticket.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if inWrite != 2 {
		t.Fatalf("the log's head right after the write is %d, want 2: the staged events were not in its transaction", inWrite)
	}

	// A write that fails: the staged events are appended after it.
	ticket, err = bus.Stage(events.Event{Name: events.UserLogin, AppID: "app-1"})
	if err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	err = bus.WritePendingWith(ctx, func(ctx context.Context) error {
		_, err := store.UpdateApp(ctx, "acc-1", "app-1", func(*storage.App) error { return refused })
		return err
	})
	if !errors.Is(err, refused) {
		t.Fatalf("WritePendingWith answered %v, want the write's error", err)
	}
	if err := ticket.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if pos, _ := store.LastEventPos(ctx); pos != 3 {
		t.Fatalf("after a failed write the log's head is %d, want 3 (the staged event appended after it)", pos)
	}
}

// TestCountedChangeStoresItsCountWithTheChange: a bulk delete's event names how many
// records it removed; the engine tells the count in the delete's transaction, so the event
// is stored with it (and a delete that removed nothing stores none). Over a Publisher that
// is not the log, the producer's Counted makes the event and Commit publishes it.
func TestCountedChangeStoresItsCountWithTheChange(t *testing.T) {
	ctx := t.Context()
	store := openStore(t, t.TempDir())
	bus := events.NewBus(events.Config{Store: store})
	defer bus.Close()
	if err := store.CreateAccount(ctx, storage.Account{ID: "acc-1", Username: "owner", Email: "owner@example.org"}); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateApp(ctx, storage.App{ID: "app-1", AccountID: "acc-1", Name: "One"}); err != nil {
		t.Fatal(err)
	}
	now := storage.Truncate(time.Now())
	var ls []storage.License
	for i := range 3 {
		ls = append(ls, storage.License{ID: fmt.Sprintf("lic-%d", i), AppID: "app-1", Key: fmt.Sprintf("KEY-%d", i), Enabled: true, CreatedAt: now, UpdatedAt: now})
	}
	if err := store.CreateLicenses(ctx, ls); err != nil {
		t.Fatal(err)
	}
	counted := func(n int) []events.Event {
		if n == 0 {
			return nil
		}
		return []events.Event{{Name: events.LicenseDelete, AppID: "app-1", Data: map[string]any{"count": n}}}
	}
	deleteIDs := func(pub events.Publisher, ids ...string) *events.Change {
		t.Helper()
		octx, ch := events.Begin(ctx, pub)
		ch.OnCount(counted)
		n, err := store.DeleteLicenses(octx, "app-1", ids)
		if err != nil {
			t.Fatal(err)
		}
		ch.Counted(n)
		if err := ch.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		return ch
	}

	ch := deleteIDs(bus, "lic-0", "lic-1", "nobody")
	stored, err := store.ReadEvents(ctx, 0, 10)
	if err != nil || len(stored) != 1 {
		t.Fatalf("after the bulk delete the log holds %d events (%v), want 1", len(stored), err)
	}
	got, err := events.Decode(stored[0])
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != ch.Events()[0].ID || fmt.Sprint(got.Data["count"]) != "2" {
		t.Fatalf("stored %+v, want the change's event %s with count 2", got, ch.Events()[0].ID)
	}
	// A delete that removed nothing stores no event.
	deleteIDs(bus, "lic-0")
	if pos, _ := store.LastEventPos(ctx); pos != stored[0].Pos {
		t.Fatalf("a delete of nothing wrote an event: the log's head is %d, want %d", pos, stored[0].Pos)
	}
	rec := &publishRecorder{}
	deleteIDs(rec, "lic-2")
	if len(rec.got) != 1 || fmt.Sprint(rec.got[0].Data["count"]) != "1" {
		t.Fatalf("over a recorder the delete published %+v, want one event with count 1", rec.got)
	}
}
