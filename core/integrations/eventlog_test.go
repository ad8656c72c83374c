package integrations_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/integrations"
)

// TestSlowReceiverLosesNothing: events keep arriving while the receiver takes 5 s per
// answer; none is dropped (the event log and the delivery queue hold them), and once the
// receiver recovers every event is delivered, each once (its delivery id is made from
// the event's id). The store-level figure for 50,000 events is core/events'
// TestBacklogIsNotDropped. KEYWARD_TEST_SLOW_RECEIVER_EVENTS sets how many events
// arrive (default 5,000; the figure is 50,000: it logs the catch-up rate).
func TestSlowReceiverLosesNothing(t *testing.T) {
	n := 5_000
	if v := os.Getenv("KEYWARD_TEST_SLOW_RECEIVER_EVENTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 100 || n%100 != 0 {
			t.Fatalf("KEYWARD_TEST_SLOW_RECEIVER_EVENTS=%q: want a multiple of 100", v)
		}
	}
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
	begun := time.Now()
	for i := 0; i < n; i += 100 {
		batch := make([]events.Event, 100)
		for j := range batch {
			batch[j] = events.Event{Name: events.UserLogin, AppID: f.appID, Data: map[string]any{"n": i + j}}
		}
		if err := bus.Publish(t.Context(), batch...); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	published := time.Now()
	t.Logf("%d events stored in %v while the receiver took 5 s per answer; %d delivered meanwhile", n, time.Since(begun).Round(time.Millisecond), len(f.received()))
	f.hold.Store(0) // the receiver recovers
	start := time.Now()
	// A bound, not a figure: 3 minutes, and 5 ms more per event on this busy machine.
	deadline := start.Add(3*time.Minute + time.Duration(n)*5*time.Millisecond)
	var got []string
	for {
		got = f.received()
		if len(got) >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(start)
	if took > 0 {
		t.Logf("catch-up: %.0f deliveries/s after the receiver recovered (%v after the last event was stored)", float64(len(got))/took.Seconds(), time.Since(published).Round(time.Millisecond))
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
