package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/keyward/keyward/cluster/internal/fanout"
	"github.com/keyward/keyward/cluster/memory"
	"github.com/keyward/keyward/internal/supervise"
)

// TestSubscriberPanicIsOwned: a bus subscriber that panics, on purpose, is recovered,
// logged and counted by the engine's owner, and the bus goes on delivering; the owner's
// stop ends the janitor and the delivery, and Close still returns.
func TestSubscriberPanicIsOwned(t *testing.T) {
	owner, err := supervise.New(supervise.Config{MinBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := memory.New(memory.Config{Goroutines: owner, SweepInterval: time.Millisecond})
	ctx := context.Background()
	got := make(chan string, 10)
	if _, err := e.Subscribe(ctx, "t", func(p []byte) {
		if string(p) == "boom" {
			panic("on purpose in a subscriber")
		}
		got <- string(p)
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.Publish(ctx, "t", []byte("boom")); err != nil {
		t.Fatal(err)
	}
	// A message taken with the one that panicked is lost (at most once): publish until one
	// arrives.
	for i := 0; ; i++ {
		if err := e.Publish(ctx, "t", []byte("after")); err != nil {
			t.Fatal(err)
		}
		select {
		case <-got:
		case <-time.After(50 * time.Millisecond):
			if i == 1200 {
				t.Fatal("no delivery after the subscriber's panic")
			}
			continue
		}
		break
	}
	if owner.Panics(fanout.Kind) != 1 || owner.Running(fanout.Kind) != 1 || owner.Running("cluster-janitor") != 1 {
		t.Fatalf("fanout: %d panics, %d running; janitor: %d running", owner.Panics(fanout.Kind), owner.Running(fanout.Kind), owner.Running("cluster-janitor"))
	}
	if err := owner.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}
