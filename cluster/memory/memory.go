package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/cluster/internal/fanout"
	"github.com/keyward/keyward/internal/supervise"
)

// DefaultSweepInterval is how often the janitor drops expired entries when
// Config.SweepInterval is zero. Expired entries are already invisible to callers; the sweep
// only returns their memory, so it can be infrequent.
const DefaultSweepInterval = time.Minute

// Config configures an Engine. The zero value is ready to use.
type Config struct {
	// Now returns the current time; time.Now when nil. Tests inject a fake clock.
	Now func() time.Time
	// SweepInterval is how often expired entries are dropped; DefaultSweepInterval when
	// zero, and no janitor at all when negative (tests call Sweep themselves).
	SweepInterval time.Duration
	// Goroutines owns the janitor (kind cluster-janitor) and the bus's delivery goroutine
	// (fanout.Kind): the node's supervisor, which recovers, counts and restarts them. nil: a
	// supervisor of the engine's own.
	Goroutines supervise.Starter
}

// Engine is the in-process cluster engine. Its methods are safe for concurrent use.
type Engine struct {
	now func() time.Time
	// epoch is the engine's start by its clock: sets and values keep their expiries as
	// stamps, durations since it (8 bytes where a time.Time takes 24, on every member of
	// every set), compared as the times were (monotonic readings when the clock gives them).
	epoch time.Time

	mu       sync.Mutex
	closed   bool
	limiters map[string]*ring
	tokens   map[string]token
	counters map[string]map[string]int64
	values   map[string]value
	sets     map[string]*memberSet
	presence map[string]*appPresence // app → its live client sockets (presence.go)
	bus      *fanout.Fanout

	stop      chan struct{} // closed by Close to stop the janitor
	done      chan struct{} // closed by the janitor when it has returned for good
	ended     sync.Once
	own       *supervise.Supervisor // the janitor's owner when Config has none
	closeOnce sync.Once
}

var _ cluster.Engine = (*Engine)(nil)

// errClosed answers every call after Close, wrapping ErrUnavailable like a remote engine
// that can no longer be reached, so callers handle both engines the same way.
var errClosed = fmt.Errorf("cluster/memory: engine closed: %w", cluster.ErrUnavailable)

// New returns a running engine; call Close to stop its janitor and its bus goroutine.
func New(cfg Config) *Engine {
	e := &Engine{
		now:      cfg.Now,
		limiters: make(map[string]*ring),
		tokens:   make(map[string]token),
		counters: make(map[string]map[string]int64),
		values:   make(map[string]value),
		sets:     make(map[string]*memberSet),
		presence: make(map[string]*appPresence),
		bus:      fanout.New(cfg.Goroutines),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if e.now == nil {
		e.now = time.Now
	}
	e.epoch = e.now()
	interval := cfg.SweepInterval
	if interval == 0 {
		interval = DefaultSweepInterval
	}
	if interval < 0 {
		close(e.done)
		return e
	}
	owner := cfg.Goroutines
	if owner == nil {
		e.own, _ = supervise.New(supervise.Config{}) // no metrics: it cannot fail
		owner = e.own
	}
	end := func() { e.ended.Do(func() { close(e.done) }) }
	if err := owner.Go("cluster-janitor", supervise.Restart, func(ctx context.Context) error {
		e.janitor(ctx, interval)
		end()
		return nil
	}); err != nil {
		end() // the owner is stopping: expired entries stay invisible, only unswept
	}
	return e
}

// Name implements cluster.Engine.
func (e *Engine) Name() string { return "memory" }

// Ping answers nil until Close, ErrUnavailable after.
func (e *Engine) Ping(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errClosed
	}
	return nil
}

// Close stops the janitor and the bus goroutine and waits for them to return (for a bus
// callback already running, too: no callback starts after Close returns, and a callback must
// not call Close). Later calls do nothing; every other method answers ErrUnavailable after
// Close.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.mu.Lock()
		e.closed = true
		e.mu.Unlock()
		close(e.stop)
		<-e.done
		e.bus.Close()
		if e.own != nil {
			_ = e.own.Stop(context.Background()) // the janitor returned already
		}
	})
	return nil
}

// janitor sweeps every interval until Close or its owner's stop.
func (e *Engine) janitor(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
			e.Sweep()
		}
	}
}

// Sweep drops every expired entry now. The janitor calls it periodically; it is exported so
// tests with a fake clock can run it deterministically.
func (e *Engine) Sweep() {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	at := e.stamp(now)
	for k, r := range e.limiters {
		if r.expired(at) {
			delete(e.limiters, k)
		}
	}
	for k, tok := range e.tokens {
		if !now.Before(tok.expires) {
			delete(e.tokens, k)
		}
	}
	for k, v := range e.values {
		if at >= v.expires {
			delete(e.values, k)
		}
	}
	for name := range e.sets {
		e.pruneSet(name, at)
	}
	e.sweepPresence(at)
}

// Allow implements cluster.RateLimiter with an exact sliding window: a hit at time h counts
// against later hits while now-h < window.
func (e *Engine) Allow(_ context.Context, key string, limit int, window time.Duration) (cluster.Decision, error) {
	if err := checkLimit(limit, window); err != nil {
		return cluster.Decision{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return cluster.Decision{}, errClosed
	}
	now := e.stamp(e.now())
	r := e.limiters[key]
	if r == nil {
		r = &ring{}
		e.limiters[key] = r
	}
	return r.hit(now, limit, window), nil
}

// PutToken implements cluster.OneTimeTokens.
func (e *Engine) PutToken(_ context.Context, key, value string, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("cluster/memory: put token: ttl %v is below 1ms", ttl)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errClosed
	}
	e.tokens[key] = token{value: value, expires: e.now().Add(ttl)}
	return nil
}

// TakeToken implements cluster.OneTimeTokens; the mutex makes read-and-delete atomic.
func (e *Engine) TakeToken(_ context.Context, key string) (string, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return "", false, errClosed
	}
	tok, ok := e.tokens[key]
	if !ok {
		return "", false, nil
	}
	delete(e.tokens, key)
	if !e.now().Before(tok.expires) {
		return "", false, nil
	}
	return tok.value, true, nil
}

// AddCount implements cluster.Counters.
func (e *Engine) AddCount(_ context.Context, group, field string, delta int64) (int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, errClosed
	}
	g := e.counters[group]
	if g == nil {
		g = make(map[string]int64)
		e.counters[group] = g
	}
	g[field] += delta
	return g[field], nil
}

// TakeCounts implements cluster.Counters; the mutex makes read-and-empty atomic.
func (e *Engine) TakeCounts(_ context.Context, group string) (map[string]int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errClosed
	}
	g := e.counters[group]
	delete(e.counters, group)
	if g == nil {
		g = map[string]int64{}
	}
	return g, nil
}

// stamp is t as the engine keeps expiries: its distance from the engine's epoch.
func (e *Engine) stamp(t time.Time) time.Duration { return t.Sub(e.epoch) }

type token struct {
	value   string
	expires time.Time
}

// checkLimit rejects arguments no caller means: a limit below one would refuse everything
// and a window below a millisecond would allow everything. Both engines agree on this.
func checkLimit(limit int, window time.Duration) error {
	if limit < 1 {
		return fmt.Errorf("cluster/memory: allow: limit %d is below 1", limit)
	}
	if window < time.Millisecond {
		return fmt.Errorf("cluster/memory: allow: window %v is below 1ms", window)
	}
	return nil
}
