package app

import (
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
)

// The AppActors' mailboxes run on a few long-lived goroutines of the directory (workers),
// not on a new goroutine each time a mailbox gets a message after it went idle, which is
// protoactor's default. An AppActor's turn is deep (a socket actor's spawn, the sockets'
// actors it sends to run on its goroutine): a new goroutine grows its stack for it, by
// copying, at almost every turn, and that was a tenth of a socket's admission. A worker
// keeps the stack it grew. A turn never blocks (Receive does no I/O), so a worker is soon
// free again; when none is free the mailbox runs on a goroutine of its own, as before, so
// no mailbox ever waits for a worker.

// appThroughput is how many messages an AppActor handles in one run of its mailbox before
// the others get a turn (protoactor's default).
const appThroughput = 300

// workers is the dispatcher of the AppActors' mailboxes (actor.Dispatcher).
type workers struct {
	jobs chan func()
	done chan struct{}
	wg   sync.WaitGroup
	log  *slog.Logger
	// panicked reports a panic in a mailbox's run that protoactor did not take (it takes
	// the actors' own: its supervisor restarts them).
	panicked func(p any)
}

// newWorkers starts n workers (GOMAXPROCS when n <= 0).
func newWorkers(n int, log *slog.Logger, panicked func(p any)) *workers {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	w := &workers{jobs: make(chan func()), done: make(chan struct{}), log: log, panicked: panicked}
	w.wg.Add(n)
	for range n {
		go w.work()
	}
	return w
}

func (w *workers) work() {
	defer w.wg.Done()
	for {
		select {
		case fn := <-w.jobs:
			w.run(fn)
		case <-w.done:
			return
		}
	}
}

// run runs one mailbox's run; a panic that escaped protoactor is reported, and the worker
// goes on.
func (w *workers) run(fn func()) {
	defer func() {
		if p := recover(); p != nil {
			w.panicked(p)
			w.log.Error("actors: panic in an app actor's mailbox", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	fn()
}

// Schedule runs fn on a free worker, or on a goroutine of its own when none is free (or
// after stop).
func (w *workers) Schedule(fn func()) {
	select {
	case w.jobs <- fn:
	default:
		go w.run(fn)
	}
}

func (w *workers) Throughput() int { return appThroughput }

// stop ends the workers once they finished what they run; a mailbox scheduled later runs
// on a goroutine of its own.
func (w *workers) stop() {
	close(w.done)
	w.wg.Wait()
}
