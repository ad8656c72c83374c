package app

import (
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

// TestWorkersRunEveryMailbox: the AppActors' dispatcher runs what it is given on its
// workers, on a goroutine of its own when every worker is busy (nothing waits for a
// worker), goes on after a panic it reports, and still runs what comes after stop.
func TestWorkersRunEveryMailbox(t *testing.T) {
	var panics atomic.Int32
	w := newWorkers(2, slog.New(slog.NewTextHandler(io.Discard, nil)), func(any) { panics.Add(1) })
	ran := make(chan int, 10)
	hold := make(chan struct{})
	// Three runs that wait: two on the workers, the third on a goroutine of its own.
	for i := range 3 {
		w.Schedule(func() { <-hold; ran <- i })
	}
	w.Schedule(func() { ran <- 3 }) // runs although no worker is free
	wait := func(what string) int {
		t.Helper()
		select {
		case i := <-ran:
			return i
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: not run within 10 s", what)
			return -1
		}
	}
	if got := wait("a run while every worker is busy"); got != 3 {
		t.Fatalf("run %d came first, want 3", got)
	}
	close(hold)
	for range 3 {
		wait("the held runs")
	}
	w.Schedule(func() { panic("on purpose") })
	w.Schedule(func() { ran <- 4 })
	wait("a run after a panic")
	for deadline := time.Now().Add(10 * time.Second); panics.Load() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("panics reported: %d, want 1", panics.Load())
		}
	}
	w.stop()
	w.Schedule(func() { ran <- 5 })
	wait("a run after stop")
	if w.Throughput() != appThroughput {
		t.Fatalf("throughput %d", w.Throughput())
	}
}
