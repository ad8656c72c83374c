package app

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/cluster"
)

// leaseholder is a test socket with a lease and no actor of its own.
type leaseholder string

func (leaseholder) Kind() string        { return "plain" }
func (l leaseholder) LeaseUser() string { return "user-" + string(l) }

// gatedLeases records the renewals and releases; a renewal waits for its gate when one
// is set.
type gatedLeases struct {
	mu       sync.Mutex
	renewals [][]cluster.SocketLease
	released []string
	gate     chan struct{}
	started  chan struct{}
}

func (g *gatedLeases) Renew(ctx context.Context, _ string, sockets []cluster.SocketLease, _ time.Duration) (cluster.Renewal, error) {
	g.mu.Lock()
	g.renewals = append(g.renewals, slices.Clone(sockets))
	gate, started := g.gate, g.started
	g.mu.Unlock()
	if gate != nil {
		started <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
			return cluster.Renewal{}, ctx.Err()
		}
	}
	return cluster.Renewal{}, nil
}

func (g *gatedLeases) Release(_ context.Context, _ string, ids ...string) (int, error) {
	g.mu.Lock()
	g.released = append(g.released, ids...)
	g.mu.Unlock()
	return len(ids), nil
}

func (g *gatedLeases) releasedIDs() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.released)
}

// TestTheAppActorKeepsTheLeases: a renewal is one engine call for the app's leaseholders
// (a socket without a lease is left out); a Leave answers after the socket's lease was
// released; a socket that left while a renewal was under way is released again when the
// renewal's answer comes in.
func TestTheAppActorKeepsTheLeases(t *testing.T) {
	f := &fakeApps{version: map[string]int{"a": 1}}
	dir := NewApps(f.load, AppsConfig{})
	defer dir.Close()
	g := &gatedLeases{}
	dir.SetLeases(LeaseConfig{Presence: g, TTL: time.Hour})
	ctx := context.Background()
	for id, m := range map[string]Member{"x": leaseholder("x"), "y": leaseholder("y"), "dash": plain("dash")} {
		if err := dir.Join(ctx, "a", id, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := dir.RenewNow(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	got := g.renewals
	g.mu.Unlock()
	if len(got) != 1 || len(got[0]) != 2 {
		t.Fatalf("renewals %v; want one call for the two leaseholders", got)
	}
	if !dir.Leave("a", "x") {
		t.Fatal("x was not held")
	}
	if r := g.releasedIDs(); !slices.Equal(r, []string{"x"}) {
		t.Fatalf("released after x's Leave: %v", r)
	}
	dir.Leave("a", "dash")
	if r := g.releasedIDs(); len(r) != 1 {
		t.Fatalf("a socket without a lease was released: %v", r)
	}

	// y leaves while a renewal that includes it is under way.
	g.mu.Lock()
	g.gate, g.started = make(chan struct{}), make(chan struct{}, 1)
	g.mu.Unlock()
	renewed := make(chan error, 1)
	go func() { renewed <- dir.RenewNow(ctx, "a") }()
	<-g.started
	if !dir.Leave("a", "y") {
		t.Fatal("y was not held")
	}
	close(g.gate)
	if err := <-renewed; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "y released again after the renewal", func() bool {
		n := 0
		for _, id := range g.releasedIDs() {
			if id == "y" {
				n++
			}
		}
		return n == 2
	})
}
