package events_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/storage"
)

// TestNotesSkipTheLogAndReachTheNotesConsumers: a ws.connect published with a change is
// handed to the consumer registered for notes (the log writer) and to no other, and is not
// stored in the log; the change is stored and consumed as before.
func TestNotesSkipTheLogAndReachTheNotesConsumers(t *testing.T) {
	store := openStore(t, t.TempDir())
	bus := events.NewBus(events.Config{Store: store})
	defer bus.Close()
	logs := newRecorder(3) // two notes and the change
	others := newRecorder(1)
	bus.Consume(events.ConsumerConfig{Name: "logs", Shared: true, Notes: true, Handle: logs.handle})
	bus.Consume(events.ConsumerConfig{Name: "webhooks", Shared: true, Handle: others.handle})
	bus.Start()
	ctx := t.Context()
	note := events.Event{Name: events.WSConnect, AppID: "a", Username: "u", Level: events.LevelDebug, Message: "client socket connected"}
	if err := bus.Publish(ctx, note, events.Event{Name: events.UserLogin, AppID: "a", Message: "change"}); err != nil {
		t.Fatal(err)
	}
	if err := bus.Publish(ctx, note); err != nil {
		t.Fatal(err)
	}
	got := logs.wait(t, "the notes and the change reach the log writer")
	notes := 0
	for _, e := range got {
		if e.Name == events.WSConnect {
			notes++
			if e.ID == "" || e.At.IsZero() || e.Level != events.LevelDebug || e.Username != "u" {
				t.Fatalf("note handed as %+v: want an id, a time and what was published", e)
			}
		}
	}
	if notes != 2 {
		t.Fatalf("the log writer got %d notes, want 2: %+v", notes, got)
	}
	for _, e := range others.wait(t, "the change reaches the other consumer") {
		if e.Name != events.UserLogin {
			t.Fatalf("a consumer without Notes got %s", e.Name)
		}
	}
	recs, err := store.ReadEvents(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Type != string(events.UserLogin) {
		t.Fatalf("the log holds %d events (%v), want the change alone", len(recs), recs)
	}
}

// TestNotesAreRetriedAndFlushedAtClose: a notes consumer that fails is handed the same
// notes again; notes queued when the log closes are handed before Close returns.
func TestNotesAreRetriedAndFlushedAtClose(t *testing.T) {
	store := openStore(t, t.TempDir())
	bus := events.NewBus(events.Config{Store: store})
	var failures atomic.Int64
	failures.Store(1)
	rec := newRecorder(2)
	bus.Consume(events.ConsumerConfig{Name: "logs", Shared: true, Notes: true, Handle: func(ctx context.Context, evs []events.Event) error {
		if failures.Add(-1) >= 0 {
			return storage.ErrUnavailable
		}
		return rec.handle(ctx, evs)
	}})
	bus.Start()
	for range 2 {
		if err := bus.Publish(t.Context(), events.Event{Name: events.WSConnect, AppID: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	bus.Close() // at once: the notes wait for their batch
	got := rec.wait(t, "the notes handed after a failure, by Close")
	if len(got) != 2 || got[0].ID == got[1].ID {
		t.Fatalf("handed %d notes (%+v), want the 2 once each", len(got), got)
	}
	if n := bus.NotesStored(); n != 0 {
		t.Fatalf("%d notes dropped", n)
	}
	if err := bus.Publish(t.Context(), events.Event{Name: events.WSConnect, AppID: "a"}); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("a note after Close = %v, want ErrClosed", err)
	}
}

// TestRefusedNotesGoToTheLog: notes that their consumer keeps refusing are not dropped:
// they are stored in the durable log, where every consumer reads them at least once.
func TestRefusedNotesGoToTheLog(t *testing.T) {
	store := openStore(t, t.TempDir())
	bus := events.NewBus(events.Config{Store: store})
	defer bus.Close()
	var refusing atomic.Bool
	refusing.Store(true)
	logs := newRecorder(1)
	bus.Consume(events.ConsumerConfig{Name: "logs", Shared: true, Notes: true, Handle: func(ctx context.Context, evs []events.Event) error {
		if refusing.Load() {
			return storage.ErrUnavailable
		}
		return logs.handle(ctx, evs)
	}})
	bus.Start()
	if err := bus.Publish(t.Context(), events.Event{Name: events.WSConnect, AppID: "a"}); err != nil {
		t.Fatal(err)
	}
	// NotesStored counts the batch as it is handed to the log's writer; the log holds it
	// once the writer's round is stored.
	var recs []storage.EventRecord
	for deadline := time.Now().Add(20 * time.Second); len(recs) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("a note its consumer kept refusing never went to the log")
		}
		time.Sleep(20 * time.Millisecond)
		var err error
		if recs, err = store.ReadEvents(t.Context(), 0, 10); err != nil {
			t.Fatal(err)
		}
	}
	if len(recs) != 1 || recs[0].Type != string(events.WSConnect) || bus.NotesStored() != 1 {
		t.Fatalf("the log holds %v (%d notes stored), want the refused note", recs, bus.NotesStored())
	}
	refusing.Store(false) // the consumer recovers and reads it from the log
	if got := logs.wait(t, "the refused note, read back from the log"); len(got) != 1 || got[0].Name != events.WSConnect {
		t.Fatalf("the consumer got %+v, want the note", got)
	}
}

// TestNotesBeyondTheQueueGoToTheLog: notes published past the queue's bound (10,000 on a
// node) go to the durable log instead, stamped as the queued ones, and every note still
// reaches the notes consumer once: the queued ones from the queue, the others from the log.
func TestNotesBeyondTheQueueGoToTheLog(t *testing.T) {
	store := openStore(t, t.TempDir())
	bus := events.NewBus(events.Config{Store: store})
	defer bus.Close()
	const queued, beyond = 10_000, 3
	logs := newRecorder(queued + beyond)
	bus.Consume(events.ConsumerConfig{Name: "logs", Shared: true, Notes: true, Handle: logs.handle})
	bus.Start()
	notes := make([]events.Event, queued+beyond)
	for i := range notes {
		notes[i] = events.Event{Name: events.WSConnect, AppID: "a", Username: "u"}
	}
	if err := bus.Publish(t.Context(), notes...); err != nil {
		t.Fatal(err)
	}
	if n := bus.NotesStored(); n != beyond {
		t.Fatalf("NotesStored = %d, want the %d beyond the queue", n, beyond)
	}
	recs, err := store.ReadEvents(t.Context(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != beyond {
		t.Fatalf("the log holds %d events, want the %d notes beyond the queue", len(recs), beyond)
	}
	ids := map[string]bool{}
	for _, e := range logs.wait(t, "every note, queued or logged") {
		if e.ID == "" || e.At.IsZero() || e.Level != events.LevelInfo || ids[e.ID] {
			t.Fatalf("a note handed as %+v (twice: %v): want each once, stamped", e, ids[e.ID])
		}
		ids[e.ID] = true
	}
}
