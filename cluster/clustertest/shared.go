package clustertest

import (
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/cluster"
)

// RunShared runs the subtests that need two engines sharing one backend, as two nodes of a
// cluster do. newPair must return two such engines (with a key prefix of their own, apart
// from other pairs); RunShared closes both when each subtest ends, and also calls Close
// itself. An engine that is one node only may return the same engine twice, and then the
// subtests that need two distinct engines are skipped.
func RunShared(t *testing.T, newPair func(t *testing.T) (cluster.Engine, cluster.Engine)) {
	subtests := []struct {
		name string
		fn   func(t *testing.T, a, b cluster.Engine)
	}{
		{"Shared/Values", testSharedValues},
		{"Shared/Sets", testSharedSets},
		{"Shared/LeasesConcurrentAcquire", testSharedLeases},
		{"Shared/PresenceConcurrentAdmit", testSharedPresence},
		{"Shared/BusDeliversToEveryNode", testSharedBusDeliver},
		{"Shared/BusOrderPerPublisher", testSharedBusOrder},
		{"Shared/BusUnsubscribe", testSharedBusUnsubscribe},
		{"Shared/BusClosedNodeGetsNothing", testSharedBusClose},
	}
	for _, st := range subtests {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			a, b := newPair(t)
			t.Cleanup(func() {
				for _, e := range []cluster.Engine{a, b} {
					if err := e.Close(); err != nil {
						t.Errorf("Close: %v", err)
					}
				}
			})
			st.fn(t, a, b)
		})
	}
}

// testSharedValues: a value set on one node is read, touched and deleted on the other.
func testSharedValues(t *testing.T, a, b cluster.Engine) {
	ctx := ctxT(t)
	setValue(t, a, "session", []byte("s1"), 300*time.Millisecond)
	if v, _, ok := getValue(t, b, "session"); !ok || string(v) != "s1" {
		t.Fatalf("GetValue on the other node = %q, %v; want s1", v, ok)
	}
	if ok, err := b.TouchValue(ctx, "session", time.Minute); err != nil || !ok {
		t.Fatalf("TouchValue on the other node = %v, %v", ok, err)
	}
	time.Sleep(300*time.Millisecond + margin)
	if _, left, ok := getValue(t, a, "session"); !ok || left <= 30*time.Second {
		t.Fatalf("GetValue after the other node's touch = %v, ttl %v; want extended", ok, left)
	}
	if ok, err := a.DeleteValue(ctx, "session"); err != nil || !ok {
		t.Fatalf("DeleteValue = %v, %v", ok, err)
	}
	if _, _, ok := getValue(t, b, "session"); ok {
		t.Fatal("GetValue on the other node after DeleteValue: still there")
	}
}

// testSharedSets: both nodes see one set, its limit counts the members either node added,
// and of takers on both nodes exactly one wins.
func testSharedSets(t *testing.T, a, b cluster.Engine) {
	addMember(t, a, "sessions", "s1", time.Minute, 0)
	time.Sleep(5 * time.Millisecond)
	addMember(t, b, "sessions", "s2", time.Minute, 0)
	time.Sleep(5 * time.Millisecond)
	addMember(t, a, "sessions", "s3", time.Minute, 2)
	wantMembers(t, b, "sessions", "s2", "s3")
	if !takeMember(t, b, "sessions", "s3") {
		t.Fatal("TakeMember on the other node = false")
	}
	wantMembers(t, a, "sessions", "s2")
	runConcurrentTake(t, a, b)
}

// testSharedBusDeliver: a message reaches the subscribers of both nodes, whichever node
// publishes it, including a subscription made just before.
func testSharedBusDeliver(t *testing.T, a, b cluster.Engine) {
	onA, onB, onB2 := newRecorder(), newRecorder(), newRecorder()
	subscribe(t, a, "apps", onA.fn)
	subscribe(t, b, "apps", onB.fn)
	subscribe(t, b, "apps", onB2.fn)
	publish(t, a, "apps", []byte("from-a"))
	publish(t, b, "apps", []byte("from-b"))
	for name, r := range map[string]*recorder{"a": onA, "b": onB, "b2": onB2} {
		got := r.waitN(t, 2)
		slices.Sort(got)
		if !slices.Equal(got, []string{"from-a", "from-b"}) {
			t.Errorf("subscriber %s got %q, want from-a and from-b", name, got)
		}
	}
	for name, r := range map[string]*recorder{"a": onA, "b": onB, "b2": onB2} {
		if got := r.quiet(); len(got) != 2 {
			t.Errorf("subscriber %s got %q, want each message once", name, got)
		}
	}
	// Subscribing on one node and publishing on the other at once, on fresh topics.
	for i := range 10 {
		r := newRecorder()
		topic := "fresh:" + strconv.Itoa(i)
		subscribe(t, b, topic, r.fn)
		publish(t, a, topic, []byte(topic))
		if got := r.waitN(t, 1); got[0] != topic {
			t.Fatalf("got %q, want %q", got[0], topic)
		}
	}
}

// testSharedBusOrder: publishers on both nodes, a subscriber on one: each publisher's
// messages arrive in its order.
func testSharedBusOrder(t *testing.T, a, b cluster.Engine) {
	runBusOrder(t, a, b, b)
}

// testSharedBusUnsubscribe: after unsubscribing on one node, messages from the other node
// do not reach that subscriber, and reach the others.
func testSharedBusUnsubscribe(t *testing.T, a, b cluster.Engine) {
	gone, stays := newRecorder(), newRecorder()
	unsub := subscribe(t, b, "t", gone.fn)
	subscribe(t, b, "t", stays.fn)
	publish(t, a, "t", []byte("m1"))
	gone.waitN(t, 1)
	stays.waitN(t, 1)
	unsub()
	publish(t, a, "t", []byte("m2"))
	stays.waitN(t, 2)
	if got := gone.quiet(); len(got) != 1 {
		t.Fatalf("unsubscribed callback got %q, want only [m1]", got)
	}
	// The last subscriber of a node leaves, and comes back.
	solo := newRecorder()
	unsubSolo := subscribe(t, b, "solo", solo.fn)
	unsubSolo()
	publish(t, a, "solo", []byte("nobody"))
	again := newRecorder()
	subscribe(t, b, "solo", again.fn)
	publish(t, a, "solo", []byte("again"))
	again.waitN(t, 1)
	if got := again.quiet(); len(got) != 1 || got[0] != "again" {
		t.Fatalf("resubscribed callback got %q, want [again]: only messages published once subscribed", got)
	}
	if got := solo.quiet(); len(got) != 0 {
		t.Fatalf("unsubscribed callback got %q", got)
	}
}

// testSharedBusClose: a closed node's subscribers get nothing more, and the other node
// publishes on without error.
func testSharedBusClose(t *testing.T, a, b cluster.Engine) {
	if a == b {
		t.Skip("the pair is one engine: nothing can publish once it is closed")
	}
	var (
		mu    sync.Mutex
		calls int
	)
	subscribe(t, b, "t", func([]byte) {
		mu.Lock()
		calls++
		mu.Unlock()
	})
	onA := newRecorder()
	subscribe(t, a, "t", onA.fn)
	publish(t, a, "t", []byte("before"))
	onA.waitN(t, 1)
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	mu.Lock()
	atClose := calls
	mu.Unlock()
	publish(t, a, "t", []byte("after"))
	onA.waitN(t, 2)
	time.Sleep(busQuiet)
	mu.Lock()
	defer mu.Unlock()
	if calls != atClose {
		t.Fatalf("closed node's subscriber called %d times after Close", calls-atClose)
	}
	if err := b.Publish(ctxT(t), "t", nil); !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("Publish on the closed node = %v, want ErrUnavailable", err)
	}
}
