package client

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/keyward/keyward/internal/supervise"
)

// kindWriter is the writer goroutine's kind under its owner (logs and metrics).
const kindWriter = "client-writer"

// groupCommit runs the client service's background writes on one goroutine: a write round
// takes everything pending (session copies, last-login times) and writes it in one batch.
// A caller that needs its change on disk before it answers (an acknowledged login must
// survive a crash) adds the change to the pending set and then waits: rounds start as soon
// as someone waits, and every caller that joins while a round is being written shares the
// next one, so concurrent logins cost one write between them rather than one each.
// Changes nobody waits for (a session's new expiry after a call) go with the next round,
// which starts at the latest every interval.
type groupCommit struct {
	write func(ctx context.Context, final bool) error

	mu      sync.Mutex
	next    *commitRound // the round waiters join; nil until someone waits
	running bool         // the writer goroutine runs: waiters wake it instead of writing
	sync    sync.Mutex   // serializes synchronous rounds when the writer does not run

	wake     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	doneOnce sync.Once
	own      *supervise.Supervisor // the writer's owner when start was given none
}

// commitRound is one write that callers wait for.
type commitRound struct {
	done chan struct{}
	err  error
}

// roundTimeout bounds one write round; the final round at shutdown gets finalTimeout.
// gatherFor is how long a round waits for more callers once the first one woke it: long
// enough for the callers already on their way (bigger rounds, less write cost per login),
// short enough not to hold them. With 32 clients on the embedded default, keyward-load
// -runs init measured 6,100-7,200 inits/s with a millisecond, 7,700-8,400 with 300 µs, and
// 7,000-7,700 with none (rounds too small); a gather that waited while callers kept coming
// always ran to its cap and did worse than a fixed millisecond.
const (
	gatherFor    = 300 * time.Microsecond
	roundTimeout = 30 * time.Second
	finalTimeout = 10 * time.Second
)

func newGroupCommit(write func(ctx context.Context, final bool) error) *groupCommit {
	return &groupCommit{write: write, wake: make(chan struct{}, 1)}
}

// wait returns once a round that started after the call has written: whatever the caller
// put in the pending set before calling is then on disk (or the round's error says why
// not). A cancelled ctx stops the wait, not the write.
func (g *groupCommit) wait(ctx context.Context) error {
	g.mu.Lock()
	if !g.running {
		g.mu.Unlock()
		// No writer (not started, or closed): write at once, one round at a time.
		g.sync.Lock()
		defer g.sync.Unlock()
		return g.write(ctx, false)
	}
	r := g.next
	if r == nil {
		r = &commitRound{done: make(chan struct{})}
		g.next = r
	}
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default: // a wake-up is already queued
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// start runs the writer under owner (a supervisor of its own when nil), of kind
// client-writer: a round whenever someone waits, and at least every interval. The owner
// recovers a panic (the round's waiters get an error), counts it and runs the writer again;
// its stop, like close, ends the writer after a final round.
func (g *groupCommit) start(owner supervise.Starter, every time.Duration) error {
	g.mu.Lock()
	if g.running || g.stop != nil {
		g.mu.Unlock()
		return nil
	}
	if owner == nil {
		g.own, _ = supervise.New(supervise.Config{}) // no metrics: it cannot fail
		owner = g.own
	}
	g.running = true
	g.stop, g.done = make(chan struct{}), make(chan struct{})
	g.mu.Unlock()
	err := owner.Go(kindWriter, supervise.Restart, func(ctx context.Context) error { return g.run(ctx, every) })
	if err != nil {
		g.mu.Lock()
		g.running = false // waiters write by themselves
		g.mu.Unlock()
		g.ended()
		return fmt.Errorf("client: start the writer: %w", err)
	}
	return nil
}

func (g *groupCommit) ended() { g.doneOnce.Do(func() { close(g.done) }) }

func (g *groupCommit) run(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			g.round(finalTimeout, true)
			g.ended()
			return nil
		case <-ctx.Done():
			g.round(finalTimeout, true)
			g.ended()
			return nil
		case <-g.wake:
			// Let the callers that arrive meanwhile join this round: a round costs about
			// the same whatever its size, so bigger ones cost each login less.
			time.Sleep(gatherFor)
		case <-t.C:
		}
		g.round(roundTimeout, false)
	}
}

// round writes what is pending and releases the callers that joined before it began.
func (g *groupCommit) round(timeout time.Duration, final bool) {
	g.mu.Lock()
	r := g.next
	g.next = nil
	if final {
		// Callers that come after this round write on their own (wait sees !running).
		g.running = false
	}
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	defer func() {
		// A panic in the write fails the round's callers, then goes on to the writer's
		// owner, which logs it, counts it and runs the writer again.
		if p := recover(); p != nil {
			if r != nil {
				r.err = fmt.Errorf("client: background write panicked: %v", p)
				close(r.done)
			}
			panic(p)
		}
	}()
	err := g.write(ctx, final)
	if r != nil {
		r.err = err
		close(r.done)
	}
}

// close runs a final round and stops the writer; it does nothing if start never ran.
func (g *groupCommit) close() {
	g.mu.Lock()
	stop := g.stop
	running := g.running
	g.mu.Unlock()
	if stop == nil || !running {
		g.stopOwn()
		return
	}
	close(stop)
	<-g.done
	g.stopOwn()
}

func (g *groupCommit) stopOwn() {
	if g.own != nil {
		_ = g.own.Stop(context.Background()) // the writer returned already
	}
}
