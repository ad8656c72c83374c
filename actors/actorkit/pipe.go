package actorkit

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/keyward/keyward/internal/workpool"
)

// Runner runs the work actors hand off so as never to block in Receive (a load, an
// admission, a read, a tick, a socket's job): each piece on a goroutine the Runner owns
// (a pooled worker, internal/workpool: an admission's depth, the presence engine's and
// the storage driver's, no longer grows a new goroutine's stack each time), under a
// context that ends with Close, which then waits for them all and ends the workers. A
// piece that panics is recovered, logged with its attributes and counted
// (Metrics.WorkPanicked under the Runner's kind); the process goes on.
type Runner struct {
	base    context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the pieces under way
	workers *workpool.Pool
	log     *slog.Logger
	metrics *Metrics
	kind    string
}

// NewRunner makes a Runner whose panics are logged to log and counted under kind in
// metrics (nil: not counted).
func NewRunner(kind string, log *slog.Logger, metrics *Metrics) *Runner {
	ctx, cancel := context.WithCancel(context.Background())
	return &Runner{base: ctx, cancel: cancel, log: log, metrics: metrics, kind: kind,
		// Go recovers each piece's panic itself: the pool's recover never sees one. The
		// pool's default bound of parked workers is the Runner's.
		workers: workpool.New(workpool.Config{})}
}

// Context is the Runner's context: it ends with Close.
func (r *Runner) Context() context.Context { return r.base }

// Cancel ends the Runner's context; Wait waits for the work under way; Close does both
// and waits for its workers to end.
func (r *Runner) Cancel() { r.cancel() }
func (r *Runner) Wait()   { r.wg.Wait() }
func (r *Runner) Close() {
	r.cancel()
	r.wg.Wait()
	r.workers.Close()
	r.workers.Wait()
}

// Go runs fn on a goroutine of the Runner. what names it in the log line of a panic, with
// attrs (slog's key-value pairs); the panic's value is handed to onPanic (nil: none), on
// the panicking goroutine, after it was logged and counted.
func (r *Runner) Go(what string, attrs []any, fn func(ctx context.Context), onPanic func(p any)) {
	r.wg.Add(1)
	r.workers.Go(func() {
		defer r.wg.Done()
		defer func() {
			if p := recover(); p != nil {
				r.metrics.WorkPanicked(r.kind)
				r.log.Error("actors: panic in "+what, append(append([]any(nil), attrs...), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))...)
				if onPanic != nil {
					onPanic(p)
				}
			}
		}()
		fn(r.base)
	})
}

// Pipe runs fn on a goroutine of the Runner, with a deadline of timeout (0: none), and
// sends what it answers to the actor to as a message: the actor learns the end of the
// work it handed off as a typed message, in its Receive. A panic in fn sends failed(p)
// instead (logged and counted as Go says), so the actor is never left waiting.
func Pipe[T any](r *Runner, root *actor.RootContext, to *actor.PID, what string, attrs []any, timeout time.Duration,
	fn func(ctx context.Context) T, failed func(p any) T) {
	r.Go(what, attrs, func(ctx context.Context) {
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		out := fn(ctx)
		root.Send(to, out)
	}, func(p any) { root.Send(to, failed(p)) })
}
