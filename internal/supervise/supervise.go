// Package supervise owns the long-lived goroutines of a node: each starts through a
// Supervisor, which recovers a panic in it (logged with its stack and counted by kind),
// restarts it or reports it as its Policy says, and stops them all in dependency order.
//
// A goroutine is a Func: it runs until its context is cancelled, does its last work then
// (a final drain or flush), and returns. Returning nil before it was asked to stop means it
// is done (an HTTP server that was shut down), not a failure. A panic, or an error returned
// before the stop, is a failure: a Restart goroutine runs again after a pause that doubles
// from Config.MinBackoff up to Config.MaxBackoff, a Report goroutine stays stopped, its
// failure kept (Failures) and shown by the running gauge falling to 0.
//
// Stop cancels the goroutines one at a time in the reverse order of their start, waiting for
// each to return before the next: a goroutine started after another may depend on it
// (mail is started before the other services because every one may queue a mail, so it
// stops after them).
// Stop answers an error naming those that did not return within its context instead of
// waiting for ever. Parts that stop by a call rather than a context (a socket hub, an actor
// system, a last flush) take their place in the same order with OnStop, so that one start
// order is the node's whole shutdown order.
//
// A package whose loops a node supervises takes a Starter (the node's Supervisor) and makes a
// Supervisor of its own without one (tests, commands). The short-lived goroutines of one call
// run in a Group, which carries a panic back to the call's goroutine and so to its owner.
//
// Metrics (when Config.Metrics is set), by goroutine kind:
//
//	keyward_goroutine_panics_total{kind}    panics recovered
//	keyward_goroutine_restarts_total{kind}  runs started again after a failure
//	keyward_goroutines{kind}                goroutines supervised (running or waiting to restart)
package supervise

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Func is a supervised goroutine's body; see the package doc for its contract.
type Func func(ctx context.Context) error

// Starter starts a long-lived goroutine under an owner (a Supervisor). A package whose
// loops a node supervises takes one, so that the node's supervisor counts their panics
// and stops them in its order; without one it makes a Supervisor of its own.
type Starter interface {
	Go(kind string, policy Policy, run Func) error
}

// Policy says what a failure of a goroutine leads to.
type Policy int

const (
	// Restart runs the goroutine again after a pause.
	Restart Policy = iota
	// Report leaves it stopped; the failure is logged, counted and kept (Failures).
	Report
)

func (p Policy) String() string {
	if p == Report {
		return "report"
	}
	return "restart"
}

// Defaults of Config.
const (
	DefaultMinBackoff = 100 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
)

// Config configures New. The zero value works: nothing is registered, logs are dropped.
type Config struct {
	Log *slog.Logger
	// Metrics registers the supervisor's metrics when set.
	Metrics prometheus.Registerer
	// MinBackoff and MaxBackoff bound the pause before a restart (defaults above).
	MinBackoff, MaxBackoff time.Duration
}

// PanicError is the failure of a goroutine that panicked.
type PanicError struct {
	Kind  string
	Value any
	Stack string
}

func (e *PanicError) Error() string { return fmt.Sprintf("goroutine %s panicked: %v", e.Kind, e.Value) }

// Supervisor owns a node's long-lived goroutines. Its methods are safe for concurrent use.
type Supervisor struct {
	log              *slog.Logger
	minWait, maxWait time.Duration
	panics, restarts *prometheus.CounterVec
	running          *prometheus.GaugeVec

	mu       sync.Mutex
	children []*child // in start order
	stopping bool
	failures []error
}

type child struct {
	kind   string
	policy Policy
	cancel context.CancelFunc
	done   chan struct{}
	// step is an OnStop step's call (no goroutine runs until Stop reaches it); err its
	// answer.
	step func(context.Context) error
	err  error
}

// ErrStopped answers Go after Stop began.
var ErrStopped = errors.New("supervise: the supervisor is stopping")

// New returns a supervisor with no goroutine yet.
func New(cfg Config) (*Supervisor, error) {
	s := &Supervisor{log: cfg.Log, minWait: cfg.MinBackoff, maxWait: cfg.MaxBackoff,
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "keyward_goroutine_panics_total",
			Help: "Panics recovered in the node's long-lived goroutines, by kind."}, []string{"kind"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "keyward_goroutine_restarts_total",
			Help: "Long-lived goroutines started again after a panic or an error, by kind."}, []string{"kind"}),
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "keyward_goroutines",
			Help: "The node's long-lived goroutines under supervision (running or waiting to restart), by kind."}, []string{"kind"}),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.minWait <= 0 {
		s.minWait = DefaultMinBackoff
	}
	if s.maxWait <= 0 {
		s.maxWait = DefaultMaxBackoff
	}
	s.maxWait = max(s.maxWait, s.minWait)
	if cfg.Metrics != nil {
		for _, c := range []prometheus.Collector{s.panics, s.restarts, s.running} {
			if err := cfg.Metrics.Register(c); err != nil {
				return nil, fmt.Errorf("supervise: register metrics: %w", err)
			}
		}
	}
	return s, nil
}

// Go starts run on a goroutine of its own, of the given kind (a name for logs and metrics;
// several goroutines may share one).
func (s *Supervisor) Go(kind string, policy Policy, run Func) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return fmt.Errorf("supervise: start %s: %w", kind, ErrStopped)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &child{kind: kind, policy: policy, cancel: cancel, done: make(chan struct{})}
	s.children = append(s.children, c)
	s.running.WithLabelValues(kind).Inc()
	// Shown at 0 from the start: an alert on increase() sees the first panic only when
	// the series existed before it.
	s.panics.WithLabelValues(kind)
	s.restarts.WithLabelValues(kind)
	go s.supervise(ctx, c, run)
	return nil
}

// OnStop adds a step to Stop at this point of the start order: stop runs when Stop reaches
// it, after every goroutine and step added later has ended and before those added earlier
// are cancelled. Its error is part of Stop's answer.
func (s *Supervisor) OnStop(name string, stop func(ctx context.Context) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return fmt.Errorf("supervise: add stop step %s: %w", name, ErrStopped)
	}
	s.children = append(s.children, &child{kind: name, step: stop, done: make(chan struct{})})
	return nil
}

// supervise runs c until it is stopped, is done, or fails under Report.
func (s *Supervisor) supervise(ctx context.Context, c *child, run Func) {
	defer close(c.done)
	defer s.forget(c)
	defer s.running.WithLabelValues(c.kind).Dec()
	wait := s.minWait
	for {
		err := s.runOnce(ctx, c, run)
		var panicked *PanicError
		stopping := ctx.Err() != nil
		if stopping && !errors.As(err, &panicked) {
			return // asked to stop: whatever it answered is its last word
		}
		if err == nil {
			s.log.Debug("goroutine done", "kind", c.kind) // a part stopped it by a call (Close)
			return
		}
		if c.policy == Report {
			s.log.Error("goroutine failed and stays stopped", "kind", c.kind, "err", err)
			s.mu.Lock()
			s.failures = append(s.failures, fmt.Errorf("%s: %w", c.kind, err))
			s.mu.Unlock()
			return
		}
		if stopping {
			return // a panic while stopping is logged and counted, and not run again
		}
		s.log.Warn("goroutine failed, restarting", "kind", c.kind, "in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, s.maxWait)
		s.restarts.WithLabelValues(c.kind).Inc()
	}
}

// forget drops an ended goroutine from the stop order, so that a part that starts one per
// connection (the Redis bus) does not grow it for ever; Stop waits for those it already took.
func (s *Supervisor) forget(c *child) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return
	}
	for i, x := range s.children {
		if x == c {
			s.children = append(s.children[:i:i], s.children[i+1:]...)
			return
		}
	}
}

// runOnce calls run, turning a panic into a PanicError.
func (s *Supervisor) runOnce(ctx context.Context, c *child, run Func) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.panics.WithLabelValues(c.kind).Inc()
			pe := &PanicError{Kind: c.kind, Value: r, Stack: string(debug.Stack())}
			s.log.Error("goroutine panicked", "kind", c.kind, "panic", fmt.Sprint(r), "policy", c.policy.String(), "stack", pe.Stack)
			err = pe
		}
	}()
	return run(ctx)
}

// DeclareRecovered shows the panics of a kind that Recovered counts at 0 from the start,
// as Go does for its goroutines' kinds: an alert on increase() sees the first panic only
// when the series existed before it.
func (s *Supervisor) DeclareRecovered(kind string) { s.panics.WithLabelValues(kind) }

// Recovered records a panic that the owner of short-lived goroutines recovered itself (the
// API's upgrade listener, whose workers serve one connection at a time): logged with its
// stack and counted under kind, as a supervised goroutine's panic is.
func (s *Supervisor) Recovered(kind string, v any, stack []byte) {
	s.panics.WithLabelValues(kind).Inc()
	s.log.Error("goroutine panicked", "kind", kind, "panic", fmt.Sprint(v), "stack", string(stack))
}

// Failures answers the failures of Report goroutines so far, oldest first.
func (s *Supervisor) Failures() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.failures...)
}

// Panics answers how many panics were recovered in goroutines of kind.
func (s *Supervisor) Panics(kind string) int { return int(value(s.panics.WithLabelValues(kind))) }

// Restarts answers how many times goroutines of kind were started again.
func (s *Supervisor) Restarts(kind string) int { return int(value(s.restarts.WithLabelValues(kind))) }

// Running answers how many goroutines of kind run now.
func (s *Supervisor) Running(kind string) int { return int(value(s.running.WithLabelValues(kind))) }

// Stop stops every goroutine, the last started first, each waited for before the next is
// cancelled; Go is refused from then on. When ctx ends first it answers an error naming
// the goroutines still running (which go on stopping on their own). Calling it again
// stops nothing more and waits again.
func (s *Supervisor) Stop(ctx context.Context) error {
	s.mu.Lock()
	if !s.stopping {
		for _, c := range s.children {
			if c.step != nil {
				c.cancel = s.stepRunner(ctx, c)
			}
		}
	}
	s.stopping = true
	children := s.children
	s.mu.Unlock()
	var errs []error
	for i := len(children) - 1; i >= 0; i-- {
		c := children[i]
		c.cancel()
		select {
		case <-c.done:
			if c.err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", c.kind, c.err))
			}
		case <-ctx.Done():
			var left []string
			for j := i; j >= 0; j-- {
				children[j].cancel()
				select {
				case <-children[j].done:
				default:
					left = append(left, children[j].kind)
				}
			}
			return errors.Join(append(errs, fmt.Errorf("supervise: %s did not stop in time: %w", strings.Join(left, ", "), ctx.Err()))...)
		}
	}
	return errors.Join(errs...)
}

// stepRunner answers the cancel of an OnStop step: it runs the step once, on a goroutine of
// its own (Stop waits for it within its context).
func (s *Supervisor) stepRunner(ctx context.Context, c *child) context.CancelFunc {
	var once sync.Once
	return func() {
		once.Do(func() {
			go func() {
				defer close(c.done)
				defer func() {
					if r := recover(); r != nil {
						s.panics.WithLabelValues(c.kind).Inc()
						s.log.Error("stop step panicked", "kind", c.kind, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
						c.err = fmt.Errorf("stop step panicked: %v", r)
					}
				}()
				c.err = c.step(ctx)
			}()
		})
	}
}

// value reads a counter's or a gauge's value.
func value(m prometheus.Metric) float64 {
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		return 0
	}
	if c := out.GetCounter(); c != nil {
		return c.GetValue()
	}
	return out.GetGauge().GetValue()
}
