package sockets

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/keyward/keyward/core/client"
)

// BenchmarkConnectClient: a client socket's admission and its leaving on one node with the
// memory engine (the embedded default), beside a socket that stays, with no dashboard
// watching the app: the session
// check is a map here, so what is timed is the wing's own part (the app's actor, the
// presence, the socket's actor).
func BenchmarkConnectClient(b *testing.B) {
	const users = 400 // under the app's limit
	known := sessions{}
	for i := range users {
		id := fmt.Sprintf("u%d", i)
		known["tok-"+id] = user(id)
	}
	node, _ := memoryPair(b, known)
	ctx := b.Context()
	caller := client.Caller{IP: "192.0.2.1"}
	// A socket that stays: the app's subscription and timers are there, as with an app's
	// many sockets.
	if _, err := node.ConnectClient(ctx, caller, "tok-u0", &recorder{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	cpu0 := processCPU()
	for b.Loop() {
		c, err := node.ConnectClient(ctx, caller, fmt.Sprintf("tok-u%d", 1+i%(users-1)), &recorder{})
		if err != nil {
			b.Fatal(err)
		}
		node.DisconnectClient(c)
		i++
	}
	// CPU time says more than wall time on a shared machine.
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU is the process's CPU time so far (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
