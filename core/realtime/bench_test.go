package realtime

import (
	"math"
	"testing"

	"github.com/keyward/keyward/core/client"
)

// counter is a Peer that only counts.
type counter struct{ n chan struct{} }

func (c counter) Send([]byte) bool        { c.n <- struct{}{}; return true }
func (c counter) SendShared(*Shared) bool { return c.Send(nil) }
func (counter) Close(int, string)         {}

// BenchmarkClientChat times a client chat message from the socket's reader to the
// dashboard's writer queue, through the memory engine's bus (the embedded default).
func BenchmarkClientChat(b *testing.B) {
	known := sessions{"tok-u1": user("u1")}
	node, _ := memoryPair(b, known)
	ctx := b.Context()
	c, err := node.ConnectClient(ctx, client.Caller{IP: "192.0.2.1"}, "tok-u1", &recorder{})
	if err != nil {
		b.Fatal(err)
	}
	c.rate.limit = math.MaxInt // the socket's rate is not what is measured
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
