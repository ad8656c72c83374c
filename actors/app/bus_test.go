package app

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/keyward/keyward/cluster/memory"
)

// failingBus refuses every subscription.
type failingBus struct{}

func (failingBus) Subscribe(context.Context, string, func([]byte)) (func(), error) {
	return nil, errors.New("bus down")
}

// TestAppActorOwnsItsSubscription: the app's actor subscribes to its topic before its
// first socket registers (a delivery published once Join returned reaches the socket),
// keeps one subscription for all its sockets, and ends it with the last; a subscription
// that fails refuses the registration.
func TestAppActorOwnsItsSubscription(t *testing.T) {
	bus := memory.New(memory.Config{})
	t.Cleanup(func() { bus.Close() })
	f := &fakeApps{version: map[string]int{"a": 1}}
	dir := NewApps(f.load, AppsConfig{})
	defer dir.Close()
	var mu sync.Mutex
	got := map[string][]int{} // payload → sockets it reached
	dir.SetBus(BusConfig{Bus: bus, TopicPrefix: "t:", Deliver: deliverFunc(func(appID string, payload []byte, sockets []Member) {
		mu.Lock()
		got[appID+"/"+string(payload)] = append(got[appID+"/"+string(payload)], len(sockets))
		mu.Unlock()
	})})
	ctx := context.Background()
	if err := dir.Join(ctx, "a", "s1", plain("s1")); err != nil {
		t.Fatal(err)
	}
	if err := dir.Join(ctx, "a", "s2", plain("s2")); err != nil {
		t.Fatal(err)
	}
	if n := dir.Topics(); n != 1 {
		t.Fatalf("topics with two sockets of one app: %d, want 1", n)
	}
	if err := bus.Publish(ctx, "t:a", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the delivery", func() bool { mu.Lock(); defer mu.Unlock(); return len(got["a/hello"]) == 1 })
	mu.Lock()
	if got["a/hello"][0] != 2 {
		t.Fatalf("the delivery reached %v sockets, want 2", got["a/hello"])
	}
	mu.Unlock()
	dir.Leave("a", "s1")
	if n := dir.Topics(); n != 1 {
		t.Fatalf("topics with one socket left: %d", n)
	}
	dir.Leave("a", "s2")
	if n := dir.Topics(); n != 0 {
		t.Fatalf("topics after the last socket left: %d", n)
	}

	down := NewApps(f.load, AppsConfig{})
	defer down.Close()
	down.SetBus(BusConfig{Bus: failingBus{}, Deliver: deliverFunc(func(string, []byte, []Member) {})})
	if err := down.Join(ctx, "a", "s1", plain("s1")); err == nil {
		t.Fatal("a socket registered without its app's subscription")
	}
	if socks, _ := down.Sockets(ctx, "a"); len(socks) != 0 || down.Topics() != 0 {
		t.Fatalf("after a failed subscription: sockets %v, topics %d", socks, down.Topics())
	}
}

// probe is a bus whose deliveries to an app's actor make it panic ("panic") or report how
// many sockets it holds ("count", on counts): a way for a test to act inside an
// AppActor's Receive with messages alone.
type probe struct {
	bus    *memory.Engine
	counts chan int
}

func newProbe(t *testing.T, dirs ...*Apps[int]) *probe {
	t.Helper()
	p := &probe{bus: memory.New(memory.Config{}), counts: make(chan int, 16)}
	t.Cleanup(func() { p.bus.Close() })
	for _, dir := range dirs {
		dir.SetBus(BusConfig{Bus: p.bus, TopicPrefix: "probe:", Deliver: deliverFunc(func(_ string, payload []byte, sockets []Member) {
			switch string(payload) {
			case "panic":
				panic("on purpose")
			case "count":
				p.counts <- len(sockets)
			}
		})})
	}
	return p
}

// send publishes payload to appID's actor.
func (p *probe) send(t *testing.T, appID, payload string) {
	t.Helper()
	if err := p.bus.Publish(context.Background(), "probe:"+appID, []byte(payload)); err != nil {
		t.Fatal(err)
	}
}
