package events_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/internal/supervise"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/sqlite"
)

// panickyStore is a real SQLite store whose event methods panic once each, on purpose.
type panickyStore struct {
	*sqlite.Store
	append, read, compact atomic.Bool // set: the next call panics
}

func (s *panickyStore) AppendEvents(ctx context.Context, evs []storage.EventRecord) error {
	if s.append.CompareAndSwap(true, false) {
		panic("on purpose in AppendEvents")
	}
	return s.Store.AppendEvents(ctx, evs)
}

// ReadEvents is read by the consumer only (the compaction does not).
func (s *panickyStore) ReadEvents(ctx context.Context, after int64, n int) ([]storage.EventRecord, error) {
	if s.read.CompareAndSwap(true, false) {
		panic("on purpose in ReadEvents")
	}
	return s.Store.ReadEvents(ctx, after, n)
}

func (s *panickyStore) CompactEvents(ctx context.Context, through int64, before time.Time, limit int) (int, error) {
	if s.compact.CompareAndSwap(true, false) {
		panic("on purpose in CompactEvents")
	}
	return s.Store.CompactEvents(ctx, through, before, limit)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i == 3000 {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEveryLoopKindSurvivesAPanic: the writer, the notifier, the compaction and a consumer
// each panic once, on purpose, under the owner given in Config.Goroutines. The publisher
// whose round was being written gets an error (not a hang); each panic is counted and its
// loop runs again; later publishes are stored, notified and consumed; Close stops them all.
func TestEveryLoopKindSurvivesAPanic(t *testing.T) {
	store := &panickyStore{Store: openStore(t, t.TempDir())}
	store.read.Store(true)
	store.compact.Store(true)
	g, err := supervise.New(supervise.Config{MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Stop(context.Background()) }()
	var notified atomic.Int64
	var panicNotify atomic.Bool
	panicNotify.Store(true)
	bus := events.NewBus(events.Config{Store: store, Goroutines: g, CompactEvery: 5 * time.Millisecond,
		Notify: func() {
			if panicNotify.CompareAndSwap(true, false) {
				panic("on purpose in Notify")
			}
			notified.Add(1)
		}})
	defer bus.Close()
	rec := newRecorder(2)
	bus.Consume(events.ConsumerConfig{Name: "logs", Shared: true, Handle: rec.handle})
	bus.Start()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store.append.Store(true)
	err = bus.Publish(ctx, events.Event{Name: events.UserLogin, AppID: "a", Message: "lost"})
	if !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("Publish while the writer panicked = %v, want an unavailable error naming the panic", err)
	}
	for i := range 2 {
		if err := bus.Publish(ctx, events.Event{Name: events.UserLogin, AppID: "a", Message: "kept"}); err != nil {
			t.Fatalf("Publish %d after the panic: %v", i, err)
		}
	}
	got := rec.wait(t, "the consumer restarted after its panic")
	for _, e := range got {
		if e.Message != "kept" {
			t.Fatalf("the consumer handled %q: the failed round was stored", e.Message)
		}
	}
	eventually(t, "notifications after the notifier's panic", func() bool { return notified.Load() > 0 })
	for _, kind := range []string{"events-writer", "events-notifier", "events-compaction", "events-consumer-logs"} {
		eventually(t, kind+" panicked once and runs again", func() bool {
			return g.Panics(kind) == 1 && g.Restarts(kind) == 1 && g.Running(kind) == 1
		})
	}
	bus.Close()
	for _, kind := range []string{"events-writer", "events-notifier", "events-compaction", "events-consumer-logs"} {
		// Close returns once each loop did its last work; the owner then sees it return.
		eventually(t, kind+" ended by Close", func() bool { return g.Running(kind) == 0 })
	}
}

// TestOwnerStopStopsTheLog: the owner's Stop ends every loop without Close; a publish
// after it is refused rather than left waiting.
func TestOwnerStopStopsTheLog(t *testing.T) {
	store := openStore(t, t.TempDir())
	g, err := supervise.New(supervise.Config{})
	if err != nil {
		t.Fatal(err)
	}
	bus := events.NewBus(events.Config{Store: store, Goroutines: g})
	defer bus.Close()
	rec := newRecorder(1)
	bus.Consume(events.ConsumerConfig{Name: "logs", Shared: true, Handle: rec.handle})
	bus.Start()
	if err := bus.Publish(t.Context(), events.Event{Name: events.UserLogin, AppID: "a"}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "the event consumed")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := g.Stop(ctx); err != nil {
		t.Fatalf("Stop = %v", err)
	}
	if err := bus.Publish(ctx, events.Event{Name: events.UserLogin, AppID: "a"}); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("Publish after the owner's stop = %v, want ErrClosed", err)
	}
}
