package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keyward/keyward/actors/actorkit"

	"github.com/keyward/keyward/hooks"
)

// TestPlanRunsInTheAppActor: a plan is made from the actor's snapshot (a request that
// arrives while it loads waits for it, and one after an Invalidate sees the new one); a
// planner that panics answers that request with an error, is counted, and the actor
// goes on planning.
func TestPlanRunsInTheAppActor(t *testing.T) {
	f := &fakeApps{version: map[string]int{"a": 1}, gate: make(chan struct{})}
	m := actorkit.NewMetrics(prometheus.NewRegistry())
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	plain := NewApps(f.load, AppsConfig{Log: quiet})
	defer plain.Close()
	if _, err := plain.Plan(t.Context(), "a", hooks.Message{Type: "x"}); !errors.Is(err, errNoPlanner) {
		t.Fatalf("snapshots without hooks: %v", err)
	}
	dir := NewApps(func(ctx context.Context, appID string) (planningSnap, error) {
		v, err := f.load(ctx, appID)
		return planningSnap(v), err
	}, AppsConfig{Metrics: m, Log: quiet})
	defer dir.Close()
	plan := func(typ string) ([]hooks.Step, error) {
		return dir.Plan(context.Background(), "a", hooks.Message{Type: typ})
	}

	waiting := make(chan error, 1)
	go func() {
		steps, err := plan("first")
		if err == nil && (len(steps) != 1 || steps[0].HookID != "1" || steps[0].HookName != "first") {
			err = errors.New("wrong plan " + strconv.Itoa(len(steps)))
		}
		waiting <- err
	}()
	close(f.gate) // the load the plan started ends
	if err := <-waiting; err != nil {
		t.Fatalf("a plan that waited for the snapshot: %v", err)
	}

	f.set("a", 2)
	dir.Invalidate("a")
	if steps, err := plan("second"); err != nil || steps[0].HookID != "2" {
		t.Fatalf("after an invalidation: %+v %v", steps, err)
	}
	if _, err := plan("boom"); err == nil || errors.Is(err, ErrUnavailable) {
		t.Fatalf("a panicking planner answered %v; want a bug's error", err)
	}
	if got := m.Value("workPanics", appKind); got != 1 {
		t.Fatalf("work panics counted: %v, want 1", got)
	}
	if steps, err := plan("third"); err != nil || steps[0].HookID != "2" {
		t.Fatalf("after the panic: %+v %v", steps, err)
	}
}

// planningSnap is a snapshot whose hooks plan one step named after the message, with the
// snapshot's version as its hook id; a "boom" message panics.
type planningSnap int

func (p planningSnap) Plan(msg hooks.Message) []hooks.Step {
	if msg.Type == "boom" {
		panic("planner bug")
	}
	return []hooks.Step{{HookID: strconv.Itoa(int(p)), HookName: msg.Type}}
}
