package supervise_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keyward/keyward/internal/supervise"
)

func newSupervisor(t *testing.T, reg prometheus.Registerer) *supervise.Supervisor {
	t.Helper()
	s, err := supervise.New(supervise.Config{Metrics: reg, MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

// receive waits for one value of ch, failing the test after a generous bound.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}

// TestRestartAfterPanic: a Restart goroutine that panics is recovered, counted and run
// again, until it is stopped; its stop is waited for.
func TestRestartAfterPanic(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := newSupervisor(t, reg)
	starts := make(chan int, 10)
	stopped := make(chan struct{})
	runs := 0
	if err := s.Go("worker", supervise.Restart, func(ctx context.Context) error {
		runs++
		starts <- runs
		if runs <= 3 {
			panic("on purpose")
		}
		<-ctx.Done()
		close(stopped)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for want := 1; want <= 4; want++ {
		if got := receive(t, starts, "start"); got != want {
			t.Fatalf("start %d, want %d", got, want)
		}
	}
	if s.Panics("worker") != 3 || s.Restarts("worker") != 3 || s.Running("worker") != 1 {
		t.Fatalf("panics %d, restarts %d, running %d; want 3, 3, 1", s.Panics("worker"), s.Restarts("worker"), s.Running("worker"))
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("Stop returned before the goroutine did")
	}
	if s.Running("worker") != 0 {
		t.Fatal("a stopped goroutine still counts as running")
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	for _, n := range []string{"keyward_goroutine_panics_total", "keyward_goroutine_restarts_total", "keyward_goroutines"} {
		if !names[n] {
			t.Errorf("metric %s not registered", n)
		}
	}
}

// TestRestartAfterError: an error returned before the stop is a failure too.
func TestRestartAfterError(t *testing.T) {
	s := newSupervisor(t, nil)
	starts := make(chan struct{}, 4)
	n := 0
	_ = s.Go("flaky", supervise.Restart, func(ctx context.Context) error {
		starts <- struct{}{}
		if n++; n == 1 {
			return errors.New("storage down")
		}
		<-ctx.Done()
		return nil
	})
	receive(t, starts, "first start")
	receive(t, starts, "restart")
	if s.Restarts("flaky") != 1 || s.Panics("flaky") != 0 {
		t.Fatalf("restarts %d, panics %d; want 1, 0", s.Restarts("flaky"), s.Panics("flaky"))
	}
}

// TestReportLeavesStopped: a Report goroutine that panics stays stopped and its failure is
// kept; one that returns nil is done, not failed.
func TestReportLeavesStopped(t *testing.T) {
	s := newSupervisor(t, nil)
	ran := make(chan struct{}, 4)
	_ = s.Go("listener", supervise.Report, func(context.Context) error {
		ran <- struct{}{}
		panic("on purpose")
	})
	_ = s.Go("finished", supervise.Report, func(context.Context) error { return nil })
	receive(t, ran, "run")
	for i := 0; s.Running("listener")+s.Running("finished") > 0; i++ {
		if i == 3000 {
			t.Fatal("the goroutines did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	failures := s.Failures()
	var pe *supervise.PanicError
	if len(failures) != 1 || !errors.As(failures[0], &pe) || pe.Kind != "listener" || pe.Value != "on purpose" || !strings.Contains(pe.Stack, "supervise_test") {
		t.Fatalf("failures = %v, want the listener's panic with its stack", failures)
	}
	if s.Panics("listener") != 1 || s.Restarts("listener") != 0 {
		t.Fatalf("panics %d, restarts %d; want 1, 0", s.Panics("listener"), s.Restarts("listener"))
	}
	select {
	case <-ran:
		t.Fatal("a Report goroutine ran again")
	default:
	}
}

// TestStopOrder: the last started stops first, each after the one started after it
// returned.
func TestStopOrder(t *testing.T) {
	s := newSupervisor(t, nil)
	var mu sync.Mutex
	var order []string
	started := make(chan struct{}, 3)
	for _, kind := range []string{"mail", "meter", "janitor"} {
		_ = s.Go(kind, supervise.Restart, func(ctx context.Context) error {
			started <- struct{}{}
			<-ctx.Done()
			mu.Lock()
			order = append(order, kind)
			mu.Unlock()
			return nil
		})
	}
	for range 3 {
		receive(t, started, "start")
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, ","); got != "janitor,meter,mail" {
		t.Fatalf("stop order %s, want janitor,meter,mail", got)
	}
	if err := s.Go("late", supervise.Restart, func(context.Context) error { return nil }); !errors.Is(err, supervise.ErrStopped) {
		t.Fatalf("Go after Stop = %v, want ErrStopped", err)
	}
}

// TestStopAnswersInsteadOfHanging: a goroutine that ignores its stop makes Stop answer an
// error naming it when Stop's context ends.
func TestStopAnswersInsteadOfHanging(t *testing.T) {
	s := newSupervisor(t, nil)
	release := make(chan struct{})
	started := make(chan struct{})
	_ = s.Go("stuck", supervise.Restart, func(context.Context) error {
		close(started)
		<-release
		return nil
	})
	receive(t, started, "start")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Stop(ctx)
	if err == nil || !strings.Contains(err.Error(), "stuck") || !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop = %v, want an error naming stuck", err)
	}
	close(release)
	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop = %v", err)
	}
}

// TestOnStopTakesItsPlace: a stop step runs once, between the goroutines started after it
// (stopped before) and those started before it (stopped after); its error is Stop's.
func TestOnStopTakesItsPlace(t *testing.T) {
	s := newSupervisor(t, nil)
	var mu sync.Mutex
	var order []string
	note := func(what string) {
		mu.Lock()
		order = append(order, what)
		mu.Unlock()
	}
	started := make(chan struct{}, 2)
	run := func(kind string) supervise.Func {
		return func(ctx context.Context) error {
			started <- struct{}{}
			<-ctx.Done()
			note(kind)
			return nil
		}
	}
	_ = s.Go("writer", supervise.Restart, run("writer"))
	steps := 0
	if err := s.OnStop("sockets", func(context.Context) error {
		steps++
		note("sockets")
		return errors.New("one socket would not close")
	}); err != nil {
		t.Fatal(err)
	}
	_ = s.Go("consumer", supervise.Restart, run("consumer"))
	for range 2 {
		receive(t, started, "start")
	}
	err := s.Stop(context.Background())
	if err == nil || !strings.Contains(err.Error(), "sockets: one socket would not close") {
		t.Fatalf("Stop = %v, want the step's error", err)
	}
	if got := strings.Join(order, ","); got != "consumer,sockets,writer" {
		t.Fatalf("stop order %s, want consumer,sockets,writer", got)
	}
	_ = s.Stop(context.Background())
	if steps != 1 {
		t.Fatalf("the step ran %d times, want once", steps)
	}
	if err := s.OnStop("late", func(context.Context) error { return nil }); !errors.Is(err, supervise.ErrStopped) {
		t.Fatalf("OnStop after Stop = %v, want ErrStopped", err)
	}
}

// TestGroupCarriesAPanicToWait: the goroutines of a Group all run to their end, and the
// panic of one is raised again by Wait, on the caller's goroutine, where its owner's
// recover sees it.
func TestGroupCarriesAPanicToWait(t *testing.T) {
	var g supervise.Group
	var mu sync.Mutex
	ran := 0
	for i := range 4 {
		g.Go(func() {
			mu.Lock()
			ran++
			mu.Unlock()
			if i == 2 {
				panic("on purpose in one goroutine")
			}
		})
	}
	var got any
	func() {
		defer func() { got = recover() }()
		g.Wait()
	}()
	if s, _ := got.(string); !strings.Contains(s, "on purpose in one goroutine") || ran != 4 {
		t.Fatalf("Wait raised %v after %d goroutines ran; want the panic after 4", got, ran)
	}
	var quiet supervise.Group
	quiet.Go(func() {})
	quiet.Wait() // no panic
}

// TestRecoveredCountsUnderItsKind: a panic its owner recovered itself (one per connection,
// as the API's upgrade listener's workers do) is counted under its kind, and no
// goroutine is restarted or reported failed for it.
func TestRecoveredCountsUnderItsKind(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := newSupervisor(t, reg)
	s.DeclareRecovered("http-upgrades")
	if !hasSeries(t, reg, "keyward_goroutine_panics_total", "http-upgrades") {
		t.Fatal("a declared kind's panics are not shown before its first panic")
	}
	s.Recovered("http-upgrades", "on purpose", []byte("stack"))
	s.Recovered("http-upgrades", "again", []byte("stack"))
	if got := s.Panics("http-upgrades"); got != 2 {
		t.Fatalf("Panics(http-upgrades) = %d, want 2", got)
	}
	if s.Restarts("http-upgrades") != 0 || len(s.Failures()) != 0 {
		t.Fatalf("restarts %d, failures %v: a recovered panic is only counted", s.Restarts("http-upgrades"), s.Failures())
	}
}

// hasSeries reports whether reg shows metric name with the label kind.
func hasSeries(t *testing.T, reg *prometheus.Registry, name, kind string) bool {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return true
				}
			}
		}
	}
	return false
}
