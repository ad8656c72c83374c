package clustertest

import (
	"context"
	"testing"
	"time"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/cluster/internal/fanout"
	"github.com/keyward/keyward/internal/supervise"
)

// SubscriberPanicIsOwned checks an engine made with owner as its goroutines' owner: a bus
// subscriber that panics, on purpose, is recovered, logged and counted by the owner, and
// the bus goes on delivering; the owner's stop ends the engine's loops (loopKind, the
// engine's own loop that must be running, e.g. its janitor or Redis receive loop) and
// the delivery, and Close still returns.
func SubscriberPanicIsOwned(t *testing.T, e cluster.Engine, owner *supervise.Supervisor, loopKind string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := make(chan string, 100)
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
	if owner.Panics(fanout.Kind) != 1 || owner.Running(fanout.Kind) != 1 || owner.Running(loopKind) != 1 {
		t.Fatalf("fanout: %d panics, %d running; %s: %d running", owner.Panics(fanout.Kind), owner.Running(fanout.Kind), loopKind, owner.Running(loopKind))
	}
	if err := owner.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}
