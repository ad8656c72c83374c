package workpool

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestPoolReusesParkedWorkers: jobs run; a worker parks after its job and takes the next
// one; no more than MaxIdle park; Close ends them and Wait sees it.
func TestPoolReusesParkedWorkers(t *testing.T) {
	p := New(Config{MaxIdle: 2})
	var ran atomic.Int32
	done := make(chan struct{})
	p.Go(func() { ran.Add(1); close(done) })
	<-done
	eventually(t, "the worker parked", func() bool { return p.Idle() == 1 })
	for range 10 {
		done := make(chan struct{})
		p.Go(func() { ran.Add(1); close(done) })
		<-done
		eventually(t, "the worker parked again", func() bool { return p.Idle() == 1 })
	}
	// Five at once: five workers, two park.
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range 5 {
		wg.Add(1)
		p.Go(func() { defer wg.Done(); <-release; ran.Add(1) })
	}
	close(release)
	wg.Wait()
	eventually(t, "two workers parked", func() bool { return p.Idle() == 2 })
	if n := ran.Load(); n != 16 {
		t.Fatalf("%d jobs ran, want 16", n)
	}
	p.Close()
	waited := make(chan struct{})
	go func() { p.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("Wait after Close still waits")
	}
	// A job handed over after Close still runs.
	late := make(chan struct{})
	p.Go(func() { close(late) })
	<-late
	p.Wait()
}

// TestPoolWorkersEndWhenIdle: a parked worker ends after IdleFor.
func TestPoolWorkersEndWhenIdle(t *testing.T) {
	p := New(Config{IdleFor: 20 * time.Millisecond})
	defer p.Close()
	done := make(chan struct{})
	p.Go(func() { close(done) })
	<-done
	eventually(t, "the idle worker ended", func() bool { return p.Idle() == 0 })
	p.Wait()
}

// TestPoolRecoversAPanic: a job's panic is reported, its worker ends, the pool goes on.
func TestPoolRecoversAPanic(t *testing.T) {
	var reported atomic.Value
	p := New(Config{Recovered: func(v any, stack []byte) {
		if len(stack) == 0 {
			t.Error("a panic reported without its stack")
		}
		reported.Store(v)
	}})
	defer func() { p.Close(); p.Wait() }()
	done := make(chan struct{})
	p.Go(func() { defer close(done); panic("on purpose") })
	<-done
	eventually(t, "the panic reported", func() bool { return reported.Load() == "on purpose" })
	if p.Idle() != 0 {
		t.Fatalf("%d parked after a panic, want 0: the worker ends", p.Idle())
	}
	again := make(chan struct{})
	p.Go(func() { close(again) })
	<-again
}
