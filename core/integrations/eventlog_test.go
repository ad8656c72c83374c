package integrations_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/integrations"
	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/mongo"
	"github.com/keyward/keyward/storage/storagetest"
)

// TestSlowReceiverLosesNothing: events keep arriving while the receiver takes 5 s per
// answer; none is dropped (the event log and the delivery queue hold them), and once the
// receiver recovers every event is delivered, each once (its delivery id is made from
// the event's id). SQLite; FerretDB (MongoDB wire) on request, see below. The store-level
// figure for 50,000 events is core/events' TestBacklogIsNotDropped.
// KEYWARD_TEST_SLOW_RECEIVER_EVENTS sets how many events arrive (default 5,000 on SQLite
// and 100 on FerretDB, 1,000 with KEYWARD_TEST_SLOW_RECEIVER_FERRET=1, to keep make test
// cheap; the figure is 50,000: the test logs the catch-up rate).
// KEYWARD_TEST_SLOW_RECEIVER_HISTORY=N first stores N finished deliveries (history_seed_test.go).
func TestSlowReceiverLosesNothing(t *testing.T) {
	count := func(def int) int {
		v := os.Getenv("KEYWARD_TEST_SLOW_RECEIVER_EVENTS")
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 || n%100 != 0 {
			t.Fatalf("KEYWARD_TEST_SLOW_RECEIVER_EVENTS=%q: want a multiple of 100", v)
		}
		return n
	}
	t.Run("sqlite", func(t *testing.T) {
		f := newFixture(t)
		s := f.open(t)
		defer s.Close()
		slowReceiver(t, f, s, count(5_000))
	})
	t.Run("ferretdb", func(t *testing.T) {
		// FerretDB 1.24 on SQLite never finds a document through its _id index: every
		// update of a delivery scans the queue's table in SQL, so a catch-up costs time
		// in n² there (see storage/mongo updateDelivery) and the default count is small.
		// KEYWARD_TEST_SLOW_RECEIVER_FERRET=1 runs 1,000.
		def := 100
		if os.Getenv("KEYWARD_TEST_SLOW_RECEIVER_FERRET") != "" {
			def = 1_000
		}
		f := newFixture(t)
		s := openFerretStore(t, "kwtest_slowhook_")
		f.seed(t, s)
		slowReceiver(t, f, s, count(def))
	})
}

// slowReceiver publishes n events to s's log while f's receiver takes 5 s per answer,
// then lets it recover and checks that every event is delivered once.
func slowReceiver(t *testing.T, f *fixture, s storage.Store, n int) {
	seedHistory(t, f, s)
	f.hold.Store(int64(5 * time.Second))
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

// openFerretStore opens a store of its own on the shared FerretDB (a database named from
// prefix), dropped and closed when the test ends.
func openFerretStore(t *testing.T, prefix string) *mongo.Store {
	t.Helper()
	s, err := mongo.Open(t.Context(), mongo.Config{URI: testenv.MongoURI(t), Database: testenv.UniqueName(prefix), Sealer: storagetest.TestSealer(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.Database().Drop(ctx)
		_ = s.Close()
	})
	return s
}
