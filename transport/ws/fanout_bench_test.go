package ws

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// BenchmarkBroadcast times a broadcast to KEYWARD_BENCH_SOCKETS (default 100; the figure
// is at 500) idle loopback sockets, from its first SendFrame until every client read it,
// written through by the sender alone (sender) and with the fan-out writers (fanout).
// It reports the p50 and p99 of the broadcasts.
func BenchmarkBroadcast(b *testing.B) {
	n := 100
	if v, err := strconv.Atoi(os.Getenv("KEYWARD_BENCH_SOCKETS")); err == nil && v > 0 {
		n = v
	}
	for _, mode := range []string{"sender", "fanout"} {
		b.Run(fmt.Sprintf("%s/%d", mode, n), func(b *testing.B) {
			node := &Transport{linger: &lingerClock{}}
			if mode == "fanout" {
				node.fanout = newFanoutWriters(func(v any) { b.Errorf("panic: %v", v) })
			}
			peers := make([]*Conn, n)
			var read sync.WaitGroup
			for i := range n {
				sc, cc := upgradedSocket(b)
				p := newConn()
				p.node = node
				p.start(sc)
				peers[i] = p
				go func() {
					for {
						if _, _, err := cc.ReadMessage(); err != nil {
							return
						}
						read.Done()
					}
				}()
			}
			for _, p := range peers {
				waitIdle(b, p)
			}
			var times []time.Duration
			for i := 0; b.Loop(); i++ {
				f := NewFrame(msgText(i))
				read.Add(n)
				start := time.Now()
				for _, p := range peers {
					p.SendFrame(f)
				}
				read.Wait()
				times = append(times, time.Since(start))
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
			for _, p := range peers {
				p.Close(websocket.CloseNormalClosure, "")
			}
		})
	}
}
