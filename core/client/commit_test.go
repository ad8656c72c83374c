package client

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// pendingLog stands for a store's pending set: callers add, the round's write takes all.
type pendingLog struct {
	mu      sync.Mutex
	pending []int
	written map[int]bool
	rounds  atomic.Int64
	fail    atomic.Bool
}

func (p *pendingLog) add(v int) {
	p.mu.Lock()
	p.pending = append(p.pending, v)
	p.mu.Unlock()
}

func (p *pendingLog) write(_ context.Context, _ bool) error {
	p.rounds.Add(1)
	time.Sleep(2 * time.Millisecond) // a write takes time: callers pile up meanwhile
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail.Load() {
		p.pending = nil
		return errors.New("disk on fire")
	}
	for _, v := range p.pending {
		p.written[v] = true
	}
	p.pending = nil
	return nil
}

func (p *pendingLog) isWritten(v int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.written[v]
}

// TestGroupCommit: a caller's change is written when wait returns, concurrent callers share
// rounds, a failed round reaches its callers, and without the writer (not started, or
// closed) wait writes by itself.
func TestGroupCommit(t *testing.T) {
	p := &pendingLog{written: map[int]bool{}}
	g := newGroupCommit(p.write)
	// Not started: each wait writes at once.
	p.add(-1)
	if err := g.wait(t.Context()); err != nil || !p.isWritten(-1) {
		t.Fatalf("wait without a writer: %v, written %v", err, p.isWritten(-1))
	}

	g.start(time.Hour) // only waiters start rounds
	const callers = 200
	before := p.rounds.Load()
	var wg sync.WaitGroup
	var lost atomic.Int64
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.add(i)
			if err := g.wait(t.Context()); err != nil || !p.isWritten(i) {
				lost.Add(1)
			}
		}()
	}
	wg.Wait()
	if lost.Load() != 0 {
		t.Fatalf("%d callers returned before their change was written", lost.Load())
	}
	if rounds := p.rounds.Load() - before; rounds >= callers {
		t.Errorf("%d rounds for %d concurrent callers: no grouping", rounds, callers)
	}

	p.fail.Store(true)
	p.add(1000)
	if err := g.wait(t.Context()); err == nil {
		t.Fatal("a failed round answered no error")
	}
	p.fail.Store(false)

	g.close()
	p.add(2000)
	if err := g.wait(t.Context()); err != nil || !p.isWritten(2000) {
		t.Fatalf("wait after close: %v, written %v", err, p.isWritten(2000))
	}
	g.close() // a second close does nothing
}
