package client

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/supervise"
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

	if err := g.start(nil, time.Hour); err != nil { // only waiters start rounds
		t.Fatal(err)
	}
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

// TestGroupCommitWriterPanic: a write that panics, on purpose, fails its round's callers
// with an error instead of leaving them waiting; the owner counts the panic and runs the
// writer again, whose next round writes; the owner's stop ends it after a final round.
func TestGroupCommitWriterPanic(t *testing.T) {
	p := &pendingLog{written: map[int]bool{}}
	var panicNext atomic.Bool
	g := newGroupCommit(func(ctx context.Context, final bool) error {
		if panicNext.CompareAndSwap(true, false) {
			panic("on purpose in the write")
		}
		return p.write(ctx, final)
	})
	owner, err := supervise.New(supervise.Config{MinBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.start(owner, time.Hour); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	panicNext.Store(true)
	p.add(1)
	if err := g.wait(ctx); err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("wait during the panic = %v, want the panic's error", err)
	}
	p.add(2)
	if err := g.wait(ctx); err != nil || !p.isWritten(2) {
		t.Fatalf("wait after the panic: %v, written %v", err, p.isWritten(2))
	}
	if owner.Panics(kindWriter) != 1 || owner.Restarts(kindWriter) != 1 {
		t.Fatalf("writer: %d panics, %d restarts; want 1, 1", owner.Panics(kindWriter), owner.Restarts(kindWriter))
	}
	p.add(3) // pending, nobody waits: the final round writes it
	if err := owner.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if !p.isWritten(3) {
		t.Fatal("the owner's stop ended the writer without its final round")
	}
	g.close() // after the owner's stop: nothing left to stop
}
