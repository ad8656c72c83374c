package app

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keyward/keyward/actors/actorkit"
)

// idleSocket is a Socket that does nothing, for the memory figure.
type idleSocket struct{ ref Ref }

func (s *idleSocket) Kind() string                  { return "session" }
func (s *idleSocket) Spawned(ref Ref)               { s.ref = ref }
func (s *idleSocket) Receive(SocketContext, any)    {}
func (s *idleSocket) Failed(any, any)               {}
func (s *idleSocket) Work(context.Context, Job) Job { return nil }

// BenchmarkSocketActorMemory reports the heap an idle socket's actor costs (its actor,
// mailbox, registration), 10,000 sockets in 20 apps: go test -run x -bench SocketActorMemory ./actors/app/
func BenchmarkSocketActorMemory(b *testing.B) {
	for range b.N {
		dir := NewApps(func(context.Context, string) (int, error) { return 1, nil }, AppsConfig{Metrics: actorkit.NewMetrics(prometheus.NewRegistry())})
		const n = 10000
		socks := make([]*idleSocket, n)
		for i := range socks {
			socks[i] = &idleSocket{}
		}
		measure := func() uint64 {
			runtime.GC()
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return m.HeapAlloc
		}
		// The apps' actors exist before.
		for a := range 20 {
			_ = dir.Join(context.Background(), fmt.Sprint("app", a), "warm", plain("warm"))
		}
		before := measure()
		for i, s := range socks {
			if err := dir.Join(context.Background(), fmt.Sprint("app", i%20), fmt.Sprint("s", i), s); err != nil {
				b.Fatal(err)
			}
		}
		after := measure()
		b.ReportMetric(float64(after-before)/n, "B/socket")
		runtime.KeepAlive(socks)
		dir.Close()
	}
}
