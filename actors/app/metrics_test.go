package app

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keyward/keyward/actors/actorkit"
)

// TestMetricsCountAppActors: the metrics see an AppActor spawned, its messages, and its
// passivation when idle.
func TestMetricsCountAppActors(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := actorkit.NewMetrics(reg)
	f := &fakeApps{version: map[string]int{"a": 1}}
	dir := NewApps(f.load, AppsConfig{Idle: 50 * time.Millisecond, Metrics: m})
	defer dir.Close()
	if _, err := dir.Snapshot(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if got := m.Value("spawned", appKind); got != 1 {
		t.Fatalf("spawned = %v, want 1", got)
	}
	for deadline := time.Now().Add(30 * time.Second); dir.Len() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the idle actor was not passivated within 30 s")
		}
	}
	for deadline := time.Now().Add(30 * time.Second); m.Value("stopped", appKind) != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("stopped not counted within 30 s")
		}
	}
	if got := m.Value("passivated", appKind); got != 1 {
		t.Fatalf("passivated = %v, want 1", got)
	}
	// Started, the request, the load's result, the timeout, Stopping, Stopped at least.
	if got := m.Value("messages", appKind); got < 5 {
		t.Fatalf("messages = %v, want at least 5", got)
	}
	if n := m.Value("handling", appKind); n < 5 {
		t.Fatalf("handling time: %v samples", n)
	}
}
