package integrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/integrations"
)

// TestSlowReceiverLosesNothing: events keep arriving while the receiver takes 5 s per
// answer; none is dropped (the event log and the delivery queue hold them), and once the
// receiver recovers every event is delivered, each once (its delivery id is made from
// the event's id). The store-level figure for 50,000 events is core/events'
// TestBacklogIsNotDropped.
func TestSlowReceiverLosesNothing(t *testing.T) {
	const n = 5_000
	f := newFixture(t)
	f.hold.Store(int64(5 * time.Second))
	s := f.open(t)
	defer s.Close()
	w := integrations.NewWorker(s, integrations.WorkerConfig{Client: f.client, Log: quiet()})
	d := integrations.NewDispatcher(s, w.Wake, quiet(), nil)
	bus := events.NewBus(events.Config{Store: s, Log: quiet()})
	bus.Consume(events.ConsumerConfig{Name: "webhooks", Shared: true, Handle: d.HandleBatch})
	bus.Start()
	ctx, stop := context.WithCancel(context.Background())
	workerDone := make(chan error, 1)
	go func() { workerDone <- w.Run(ctx) }()
	defer func() { stop(); <-workerDone }()
	defer bus.Close()
	for i := 0; i < n; i += 100 {
		batch := make([]events.Event, 100)
		for j := range batch {
			batch[j] = events.Event{Name: events.UserLogin, AppID: f.appID, Data: map[string]any{"n": i + j}}
		}
		if err := bus.Publish(t.Context(), batch...); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	f.hold.Store(0) // the receiver recovers
	start := time.Now()
	var got []string
	for i := 0; ; i++ {
		got = f.received()
		if len(got) >= n || i == 1800 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	seen := map[string]int{}
	for _, id := range got {
		seen[id]++
	}
	t.Logf("%d deliveries received (%d distinct) %v after the receiver recovered", len(got), len(seen), time.Since(start).Round(time.Millisecond))
	if len(seen) != n {
		t.Fatalf("%d distinct events delivered, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("event %s delivered %d times", id, c)
		}
	}
}
