package app

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/cluster/memory"
)

// TestAnAppChangeRevalidatesAtOnce: an app change reaches the actor of the app on every
// node as a message (Announce on one node, ListenChanges on the others); an actor that
// holds sockets reloads its snapshot and runs the OnChange tick at once (not at its
// period), over the new snapshot; a change during a run makes it run again after; an
// actor without sockets only drops its snapshot.
func TestAnAppChangeRevalidatesAtOnce(t *testing.T) {
	bus := memory.New(memory.Config{})
	defer bus.Close()
	f := &fakeApps{version: map[string]int{"a": 1, "b": 1}}
	type run struct {
		node    string
		version int
		sockets int
	}
	runs := make(chan run, 16)
	gate := make(chan struct{}) // the first run on node B waits on it
	atGate := make(chan int, 1) // and says which version it read
	var gated sync.Once
	node := func(name string) *Apps[int] {
		dir := NewApps(f.load, AppsConfig{})
		t.Cleanup(dir.Close)
		dir.SetTicks(tickFunc(func(ctx context.Context, appID string, sockets []Member) {
			v, err := dir.Snapshot(ctx, appID)
			if err != nil {
				t.Error(err)
			}
			if name == "B" {
				gated.Do(func() { atGate <- v; <-gate })
			}
			runs <- run{node: name, version: v, sockets: len(sockets)}
		}), Tick{Every: time.Hour, OnChange: true})
		unsubscribe, err := dir.ListenChanges(context.Background(), bus)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(unsubscribe)
		return dir
	}
	a, b := node("A"), node("B")
	ctx := context.Background()
	for i, dir := range []*Apps[int]{a, b} {
		for _, id := range []string{"s1", "s2"} {
			if err := dir.Join(ctx, "a", id, plain(id)); err != nil {
				t.Fatal(i, err)
			}
		}
	}
	if _, err := b.Snapshot(ctx, "b"); err != nil { // an actor without sockets
		t.Fatal(err)
	}
	loads := f.loads.Load()

	f.set("a", 2)
	if err := a.Announce(ctx, bus, "a"); err != nil {
		t.Fatal(err)
	}
	next := func() run {
		t.Helper()
		select {
		case r := <-runs:
			return r
		case <-time.After(30 * time.Second):
			t.Fatal("no revalidation within 30 s of the change")
			return run{}
		}
	}
	// Node A revalidates (once or twice: its own announcement comes back over the bus).
	if r := next(); r.node != "A" || r.version != 2 || r.sockets != 2 {
		t.Fatalf("first run %+v, want node A with version 2 over 2 sockets", r)
	}
	// Node B's run is under way (gated) when a second change arrives: it runs again after.
	select {
	case v := <-atGate:
		if v != 2 {
			t.Fatalf("node B revalidated over version %d, want 2", v)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("node B did not revalidate within 30 s of the change on node A")
	}
	f.set("a", 3)
	b.Invalidate("a")
	close(gate)
	sawB3 := false
	for deadline := time.After(30 * time.Second); !sawB3; {
		select {
		case r := <-runs:
			sawB3 = r.node == "B" && r.version == 3
		case <-deadline:
			t.Fatal("node B did not revalidate again after a change during its run")
		}
	}
	// The actor of "b" holds no sockets: its snapshot was not reloaded for "a"'s change.
	if got := f.loads.Load() - loads; got > 4 {
		t.Fatalf("%d loads for two changes of app a on two nodes, want at most 4", got)
	}
	b.Invalidate("b")
	time.Sleep(50 * time.Millisecond)
	if got := f.loads.Load() - loads; got > 4 {
		t.Fatalf("an actor without sockets reloaded on a change (%d loads)", got)
	}
}
