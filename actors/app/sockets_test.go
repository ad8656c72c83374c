package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keyward/keyward/actors/actorkit"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func socketIDs(t *testing.T, dir *Apps[int], appID string) []string {
	t.Helper()
	list, err := dir.Sockets(context.Background(), appID)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(list))
	for _, s := range list {
		if a, ok := s.(admittee); ok {
			s = plain(a.name)
		}
		out = append(out, string(s.(plain)))
	}
	sort.Strings(out)
	return out
}

// TestAppActorRestartKeepsItsSockets: an AppActor that panics on purpose is restarted by
// its supervisor and still holds every socket of its app; deliveries and the periodic work
// go on; it is not passivated while it holds sockets, and is once they left.
func TestAppActorRestartKeepsItsSockets(t *testing.T) {
	f := &fakeApps{version: map[string]int{"a": 1}}
	reg := prometheus.NewRegistry()
	m := actorkit.NewMetrics(reg)
	dir := NewApps(f.load, AppsConfig{Idle: 50 * time.Millisecond, Metrics: m, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer dir.Close()
	pr := newProbe(t, dir)
	var mu sync.Mutex
	ticked := map[int]int{} // sockets seen by tick
	var ticks atomic.Int32
	dir.SetTicks(tickFunc(func(_ context.Context, appID string, sockets []Member) {
		mu.Lock()
		ticked[len(sockets)]++
		mu.Unlock()
		ticks.Add(1)
	}), Tick{Every: 10 * time.Millisecond})
	ctx := context.Background()
	for _, id := range []string{"s1", "s2", "s3"} {
		if err := dir.Join(ctx, "a", id, plain(id)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "a tick over the 3 sockets", func() bool { mu.Lock(); defer mu.Unlock(); return ticked[3] > 0 })

	// A message that makes the actor panic.
	pr.send(t, "a", "panic")
	waitFor(t, "the restart", func() bool { return m.Value("restarts", appKind) == 1 })
	if got := socketIDs(t, dir, "a"); len(got) != 3 || got[0] != "s1" || got[2] != "s3" {
		t.Fatalf("sockets after the restart: %v", got)
	}
	if n := m.Value("failures", appKind); n != 1 {
		t.Fatalf("failures counted: %v", n)
	}
	// Deliveries reach the sockets, the ticks go on, the snapshot still answers.
	pr.send(t, "a", "count")
	if n := <-pr.counts; n != 3 {
		t.Fatalf("delivery after the restart reached %d sockets", n)
	}
	before := ticks.Load()
	waitFor(t, "a tick after the restart", func() bool { return ticks.Load() > before })
	if v, err := dir.Snapshot(ctx, "a"); err != nil || v != 1 {
		t.Fatalf("snapshot after the restart: %v %v", v, err)
	}

	// Idle for many times the idle time, the actor holding sockets stays.
	time.Sleep(200 * time.Millisecond)
	if dir.Len() != 1 || len(socketIDs(t, dir, "a")) != 3 {
		t.Fatalf("an actor holding sockets was passivated (actors %d)", dir.Len())
	}
	for _, id := range []string{"s1", "s2", "s3"} {
		if !dir.Leave("a", id) {
			t.Fatalf("%s was not held", id)
		}
	}
	if dir.Leave("a", "s1") {
		t.Fatal("a socket left twice")
	}
	waitFor(t, "the passivation of the empty actor", func() bool { return dir.Len() == 0 })
	stopped := ticks.Load()
	time.Sleep(50 * time.Millisecond)
	if ticks.Load() != stopped {
		t.Fatal("ticks go on without sockets")
	}
}

// TestAdmissionRunsOutsideTheActor: an admission's I/O runs on a goroutine (the actor
// answers meanwhile), and the socket is registered when it passes, not when it fails.
func TestAdmissionRunsOutsideTheActor(t *testing.T) {
	f := &fakeApps{version: map[string]int{"a": 1}}
	dir := NewApps(f.load, AppsConfig{})
	defer dir.Close()
	ctx := context.Background()
	gate := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- dir.Admit(ctx, "a", "slow", admittee{"slow", func(context.Context) error { <-gate; return nil }})
	}()
	waitFor(t, "the actor", func() bool { return dir.Len() == 1 })
	// The actor answers while the admission waits.
	if v, err := dir.Snapshot(ctx, "a"); err != nil || v != 1 {
		t.Fatalf("snapshot during an admission: %v %v", v, err)
	}
	if got := socketIDs(t, dir, "a"); len(got) != 0 {
		t.Fatalf("registered before its admission passed: %v", got)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	if err := dir.Admit(ctx, "a", "no", admittee{"no", func(context.Context) error { return refused }}); !errors.Is(err, refused) {
		t.Fatalf("refused admission answered %v", err)
	}
	if got := socketIDs(t, dir, "a"); len(got) != 1 || got[0] != "slow" {
		t.Fatalf("sockets after the admissions: %v", got)
	}
}

// TestAdmissionToAStoppedActorAsksAgain: an admission sent to an actor that stopped
// after the directory looked it up reaches no one (protoactor's dead letters); it is
// answered as dead at once and made again with a new actor, not left to time out.
func TestAdmissionToAStoppedActorAsksAgain(t *testing.T) {
	f := &fakeApps{version: map[string]int{"a": 1}}
	dir := NewApps(f.load, AppsConfig{})
	defer dir.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := dir.Snapshot(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	dir.mu.Lock()
	stale := dir.pids["a"]
	dir.mu.Unlock()
	// Stopped, and listed again as if the lookup had raced with its stop.
	if err := dir.system.Root.StopFuture(stale).Wait(); err != nil {
		t.Fatal(err)
	}
	dir.mu.Lock()
	dir.pids["a"] = stale
	dir.mu.Unlock()
	if err := dir.Admit(ctx, "a", "s", admittee{"s", func(context.Context) error { return nil }}); err != nil {
		t.Fatalf("admission after the actor stopped: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the admission waited for its timeout")
	}
	dir.mu.Lock()
	fresh := dir.pids["a"]
	dir.mu.Unlock()
	if fresh == nil || fresh.Equal(stale) {
		t.Fatalf("the admission went to %v, not to a new actor (the stopped one was %v)", fresh, stale)
	}
	if got := socketIDs(t, dir, "a"); len(got) != 1 || got[0] != "s" {
		t.Fatalf("sockets after the admission: %v", got)
	}
}

// TestAdmissionAnswersAtTheCallersDeadline: an admission that outlives its caller's
// deadline is answered at the deadline (ErrUnavailable), and its socket is not registered
// when it passes afterwards.
func TestAdmissionAnswersAtTheCallersDeadline(t *testing.T) {
	f := &fakeApps{version: map[string]int{"a": 1}}
	dir := NewApps(f.load, AppsConfig{})
	defer dir.Close()
	gate := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := dir.Admit(ctx, "a", "late", admittee{"late", func(context.Context) error { <-gate; return nil }})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("an admission past its deadline answered %v, want ErrUnavailable", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("answered after %v, the deadline was 100ms", waited)
	}
	close(gate)
	time.Sleep(50 * time.Millisecond) // the admission's end reaches the actor
	if got := socketIDs(t, dir, "a"); len(got) != 0 {
		t.Fatalf("registered after its caller gave up: %v", got)
	}
}

// TestAdmissionAnswersWhenItsCallerCancels: a caller without a deadline that gives up
// (its context cancelled) is answered then, not at askTimeout, and the socket is not
// registered when its admission ends later.
func TestAdmissionAnswersWhenItsCallerCancels(t *testing.T) {
	f := &fakeApps{version: map[string]int{"a": 1}}
	dir := NewApps(f.load, AppsConfig{})
	defer dir.Close()
	gate, entered := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-entered; cancel() }()
	start := time.Now()
	err := dir.Admit(ctx, "a", "gone", admittee{"gone", func(context.Context) error { close(entered); <-gate; return nil }})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("an admission whose caller gave up answered %v, want ErrUnavailable", err)
	}
	if waited := time.Since(start); waited >= askTimeout {
		t.Fatalf("answered after %v: it waited for askTimeout, not for its caller", waited)
	}
	close(gate)
	time.Sleep(50 * time.Millisecond) // the admission's end reaches the actor
	if got := socketIDs(t, dir, "a"); len(got) != 0 {
		t.Fatalf("registered after its caller gave up: %v", got)
	}
}

// admittee is a test socket, named, whose admission is the given function.
type admittee struct {
	name  string
	admit func(ctx context.Context) error
}

func (a admittee) Admit(ctx context.Context) error { return a.admit(ctx) }
func (a admittee) Kind() string                    { return "plain" }
