// Package workpool runs short jobs on goroutines that outlive them: a job goes to a
// parked worker, or to a new one when none is parked; a worker parks once its job is
// done and ends after it waited IdleFor for another, or at Close.
//
// Why: the jobs it serves (a socket's upgrade request, an actor's admission) each ran on
// a new goroutine whose stack grew, by copies, to the depth of the router, the admission
// and the storage driver: a tenth of a socket's opening CPU. A parked worker keeps the
// stack it grew (until a GC finds it mostly unused and halves it).
//
// A Pool owns its workers: Close ends the parked ones, a busy one ends after its job, and
// Wait waits for them all. A job's panic is recovered and reported (Config.Recovered);
// its worker ends and the pool goes on.
package workpool

import (
	"runtime/debug"
	"sync"
	"time"
)

// Config is how a Pool keeps its workers.
type Config struct {
	// MaxIdle bounds the parked workers; a worker that finds it reached ends (default 64).
	MaxIdle int
	// IdleFor is how long a parked worker waits for a job before it ends (default 30 s).
	IdleFor time.Duration
	// Recovered reports a job's panic (nil: the panic goes on, and ends the process).
	Recovered func(v any, stack []byte)
}

// Pool runs jobs on its workers. The zero value is not usable: use New.
type Pool struct {
	cfg     Config
	done    chan struct{}
	closing sync.Once
	workers sync.WaitGroup

	mu   sync.Mutex
	idle []*worker // parked, the most recently used last (its stack is the warmest)
}

// worker is a worker's mailbox: the next job it runs.
type worker struct {
	jobs chan func()
}

// New makes a Pool.
func New(cfg Config) *Pool {
	if cfg.MaxIdle <= 0 {
		cfg.MaxIdle = 64
	}
	if cfg.IdleFor <= 0 {
		cfg.IdleFor = 30 * time.Second
	}
	return &Pool{cfg: cfg, done: make(chan struct{})}
}

// Go runs job on a parked worker, or on a new one. After Close it still runs it, on a
// worker of its own that ends with it.
func (p *Pool) Go(job func()) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.jobs <- job // buffered, and w waits for nothing else: never blocks
		return
	}
	p.mu.Unlock()
	p.workers.Add(1)
	go p.work(&worker{jobs: make(chan func(), 1)}, job)
}

// Close ends the parked workers; a busy one ends after its job.
func (p *Pool) Close() {
	p.closing.Do(func() { close(p.done) })
}

// Wait waits for every worker to end (after Close).
func (p *Pool) Wait() { p.workers.Wait() }

// work runs job, then the jobs handed to w while it is parked.
func (p *Pool) work(w *worker, job func()) {
	defer p.workers.Done()
	var idle *time.Timer
	for {
		if !p.run(job) || !p.park(w) {
			return
		}
		if idle == nil {
			idle = time.NewTimer(p.cfg.IdleFor)
			defer idle.Stop()
		} else {
			idle.Reset(p.cfg.IdleFor)
		}
		select {
		case job = <-w.jobs:
			continue
		case <-idle.C:
		case <-p.done:
		}
		if p.unpark(w) {
			return
		}
		job = <-w.jobs // Go took w before it could leave: its job is on the way
	}
}

// run runs job; false when it panicked (reported; the worker ends).
func (p *Pool) run(job func()) (ok bool) {
	if p.cfg.Recovered != nil {
		defer func() {
			if v := recover(); v != nil {
				p.cfg.Recovered(v, debug.Stack())
			}
		}()
	}
	job()
	return true
}

// park puts w among the parked workers; false when there is no room or the pool closed.
func (p *Pool) park(w *worker) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return false
	default:
	}
	if len(p.idle) >= p.cfg.MaxIdle {
		return false
	}
	p.idle = append(p.idle, w)
	return true
}

// unpark takes w out of the parked workers; false when Go took it first.
func (p *Pool) unpark(w *worker) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.idle {
		if x == w {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			return true
		}
	}
	return false
}

// Idle answers how many workers are parked, for tests and metrics.
func (p *Pool) Idle() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}
