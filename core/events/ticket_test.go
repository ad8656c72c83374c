package events_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/storage"
)

// countedLog is a real store whose own appends (the log writer's rounds) are counted.
type countedLog struct {
	storage.EventLogStore
	appends atomic.Int64
}

func (c *countedLog) AppendEvents(ctx context.Context, recs []storage.EventRecord) error {
	c.appends.Add(1)
	return c.EventLogStore.AppendEvents(ctx, recs)
}

// TestWrittenTicketLeavesTheNextRoundToItsWrite: staged events that a client round wrote
// in its own transaction (WritePendingWith) answer their Wait without waking the log's
// writer, so the events staged meanwhile for the next client round go with that round's
// transaction instead of a write of their own.
func TestWrittenTicketLeavesTheNextRoundToItsWrite(t *testing.T) {
	ctx := t.Context()
	st := openStore(t, t.TempDir())
	log := &countedLog{EventLogStore: st}
	bus := events.NewBus(events.Config{Store: log})
	defer bus.Close()
	round := func(token string) error {
		return bus.WritePendingWith(ctx, func(ctx context.Context) error {
			return st.SaveClientSessions(ctx, []storage.ClientSession{{TokenHash: token, AppID: "app-t"}})
		})
	}
	const n = 50
	for i := range n {
		first, err := bus.Stage(events.Event{Name: events.SessionInit, AppID: "app-t", Message: "first"})
		if err != nil {
			t.Fatal(err)
		}
		if err := round(fmt.Sprintf("first-%d", i)); err != nil {
			t.Fatalf("round: %v", err)
		}
		next, err := bus.Stage(events.Event{Name: events.SessionInit, AppID: "app-t", Message: "next"})
		if err != nil {
			t.Fatal(err)
		}
		if err := first.Wait(ctx); err != nil {
			t.Fatalf("first wait: %v", err)
		}
		if err := round(fmt.Sprintf("next-%d", i)); err != nil {
			t.Fatalf("round: %v", err)
		}
		if err := next.Wait(ctx); err != nil {
			t.Fatalf("next wait: %v", err)
		}
	}
	if got := log.appends.Load(); got != 0 {
		t.Errorf("the log's writer appended %d rounds of its own; want 0 (every event went with a client round)", got)
	}
	stored, err := st.ReadEvents(ctx, 0, 10*n)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 2*n {
		t.Fatalf("stored %d events, want %d", len(stored), 2*n)
	}
}
