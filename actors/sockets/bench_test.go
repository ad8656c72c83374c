package sockets

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/core/realtime"
)

// counter is a Peer that only counts.
type counter struct{ n chan struct{} }

func (c counter) Send([]byte) bool             { c.n <- struct{}{}; return true }
func (c counter) SendShared(*wire.Shared) bool { return c.Send(nil) }
func (counter) Close(wire.Disconnect)          {}

// BenchmarkClientChat times a client chat message from the socket's reader to the
// dashboard's writer queue, through the memory engine's bus (the embedded default).
func BenchmarkClientChat(b *testing.B) {
	known := sessions{"tok-u1": user("u1")}
	node, _ := memoryPair(b, known)
	ctx := b.Context()
	// Each reading of the clock is a window after the last: the socket's rate is not what
	// is measured.
	var clock atomic.Int64
	node.d.Now = func() time.Time { return time.Unix(0, clock.Add(int64(realtime.ClientWindow))) }
	c, err := node.ConnectClient(ctx, client.Caller{IP: "192.0.2.1"}, "tok-u1", &recorder{})
	if err != nil {
		b.Fatal(err)
	}
	got := counter{n: make(chan struct{}, 1024)}
	if _, err := node.ConnectDashboard(ctx, "app", got); err != nil {
		b.Fatal(err)
	}
	<-got.n // online_count
	<-got.n // sessions
	msg := []byte(`{"type":"chat","message":"hello"}`)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		node.ClientMessage(ctx, c, msg)
		<-got.n
	}
}

// countingPeer counts the frames it is handed.
type countingPeer struct{ n *atomic.Int64 }

func (p countingPeer) Send([]byte) bool             { p.n.Add(1); return true }
func (p countingPeer) SendShared(*wire.Shared) bool { p.n.Add(1); return true }
func (p countingPeer) Close(wire.Disconnect)        {}

// BenchmarkBroadcastFanOut: one broadcast to the 500 client sockets of an app on one
// node, from the REST call to the frame in every socket's queue (through the app's actor
// and each socket's actor). ns/delivery is the cost per socket:
// go test -run x -bench BroadcastFanOut ./actors/sockets/
func BenchmarkBroadcastFanOut(b *testing.B) {
	known := sessions{}
	for i := range realtime.MaxClientsPerApp {
		known[fmt.Sprintf("tok-u%d", i)] = user(fmt.Sprintf("u%d", i))
	}
	node, _ := memoryPair(b, known)
	ctx := b.Context()
	var got atomic.Int64
	for i := range realtime.MaxClientsPerApp {
		if _, err := node.ConnectClient(ctx, client.Caller{IP: "192.0.2.1"}, fmt.Sprintf("tok-u%d", i), countingPeer{&got}); err != nil {
			b.Fatal(err)
		}
	}
	got.Store(0)
	b.ResetTimer()
	for i := range b.N {
		if _, err := node.Broadcast(ctx, "app", "hello", ""); err != nil {
			b.Fatal(err)
		}
		for want := int64(i+1) * realtime.MaxClientsPerApp; got.Load() < want; {
			runtime.Gosched()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*realtime.MaxClientsPerApp), "ns/delivery")
}
