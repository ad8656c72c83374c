package client

import (
	"context"
	"fmt"
	"sync"
	"time"
)

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

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

// commitRound is one write that callers wait for.
type commitRound struct {
	done chan struct{}
	err  error
}

// roundTimeout bounds one write round; the final round at shutdown gets finalTimeout.
// gatherFor is how long a round waits for more callers once the first one woke it.
const (
	gatherFor    = time.Millisecond
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

// start runs the writer: a round whenever someone waits, and at least every interval.
func (g *groupCommit) start(every time.Duration) {
	g.mu.Lock()
	if g.running || g.stop != nil {
		g.mu.Unlock()
		return
	}
	g.running = true
	g.stop, g.done = make(chan struct{}), make(chan struct{})
	g.mu.Unlock()
	go g.run(every)
}

func (g *groupCommit) run(every time.Duration) {
	defer close(g.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			g.round(finalTimeout, true)
			return
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
	err := g.safeWrite(ctx, final)
	if r != nil {
		r.err = err
		close(r.done)
	}
}

// safeWrite runs one write; a panic in it fails the round rather than the process.
func (g *groupCommit) safeWrite(ctx context.Context, final bool) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("client: background write panicked: %v", p)
		}
	}()
	return g.write(ctx, final)
}

// close runs a final round and stops the writer; it does nothing if start never ran.
func (g *groupCommit) close() {
	g.mu.Lock()
	stop := g.stop
	running := g.running
	g.mu.Unlock()
	if stop == nil || !running {
		return
	}
	close(stop)
	<-g.done
}
