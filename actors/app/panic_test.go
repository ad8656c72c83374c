package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keyward/keyward/actors/actorkit"
)

// TestLoaderPanicAnswersItsWaiters: a loader that panics (on purpose, here) does not end
// the process: every request waiting for the snapshot gets an error, the panic is
// counted, and the next request loads again and gets the snapshot.
func TestLoaderPanicAnswersItsWaiters(t *testing.T) {
	m := actorkit.NewMetrics(prometheus.NewRegistry())
	gate := make(chan struct{})
	var calls atomic.Int32
	load := func(ctx context.Context, appID string) (int, error) {
		if calls.Add(1) == 1 {
			<-gate // the waiters gather first
			panic("loader bug")
		}
		return 7, nil
	}
	dir := NewApps(load, AppsConfig{Metrics: m, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer dir.Close()

	const waiters = 5
	errs := make(chan error, waiters)
	var wg sync.WaitGroup
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := dir.Snapshot(context.Background(), "a")
			errs <- err
		}()
	}
	// The first request started the load, which waits on the gate; the others wait for it
	// (a request that comes after the panic would load again: it is let in only once all
	// five asked).
	for deadline := time.Now().Add(30 * time.Second); calls.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no load started")
		}
	}
	close(gate)
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			failed++
			if errors.Is(err, ErrUnavailable) {
				t.Errorf("a loader's panic is a bug, not an unavailable part: %v", err)
			}
		}
	}
	if failed == 0 {
		t.Fatal("no waiter got the loader's panic as an error")
	}
	if got := m.Value("workPanics", appKind); got != 1 {
		t.Fatalf("work panics counted: %v, want 1", got)
	}
	v, err := dir.Snapshot(context.Background(), "a")
	if err != nil || v != 7 {
		t.Fatalf("after the panic: %d, %v; want a fresh load", v, err)
	}
}
