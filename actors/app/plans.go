package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/keyward/keyward/hooks"
)

// The AppActor runs its application's WebSocket hook pipeline: a client message's plan is
// asked of it (Plan) and made inside its Receive from the compiled pipeline of its
// snapshot, so that no plan runs on a snapshot another goroutine holds. Planning reads
// the message and the compiled conditions and does no I/O (hooks.Pipeline.Plan); a
// request that arrives while the snapshot loads waits for it.

// HookPlanner is a snapshot that holds an application's compiled hooks: Plan makes the
// plan of message m from them (hooks.Pipeline is one). A directory whose snapshots are
// not HookPlanners answers Plan with errNoPlanner.
type HookPlanner interface {
	Plan(m hooks.Message) []hooks.Step
}

// Messages of the AppActor's planning.
type (
	planHooks  struct{ msg hooks.Message }
	planAnswer struct {
		steps []hooks.Step
		err   error
	}
	// planWaiter is a plan request that waits for the snapshot.
	planWaiter struct {
		sender *actor.PID
		msg    hooks.Message
	}
)

// errNoPlanner answers Plan on a directory whose snapshots hold no hooks.
var errNoPlanner = errors.New("actors: the directory's snapshots hold no hook planner")

// plans answers whether the directory's snapshots are HookPlanners.
func (a *Apps[S]) plans() bool {
	var zero S
	_, ok := any(zero).(HookPlanner)
	return ok
}

// Plan asks the app's actor for the plan of client message m: the actions its hooks
// planned, in order. The loader's error comes back as Snapshot's does.
func (a *Apps[S]) Plan(ctx context.Context, appID string, m hooks.Message) ([]hooks.Step, error) {
	if !a.plans() {
		return nil, errNoPlanner
	}
	res, err := a.ask(ctx, appID, planHooks{msg: m})
	if err != nil {
		return nil, err
	}
	r := res.(planAnswer)
	return r.steps, r.err
}

// receivePlans handles the planning messages; it answers whether msg was one.
func (s *appActor[S]) receivePlans(ctx actor.Context) bool {
	m, ok := ctx.Message().(planHooks)
	if !ok {
		return false
	}
	switch {
	case s.failed != nil:
		ctx.Respond(planAnswer{err: s.failed})
	case s.have:
		ctx.Respond(s.planNow(m.msg))
	default:
		s.planWaiters = append(s.planWaiters, planWaiter{sender: ctx.Sender(), msg: m.msg})
		if !s.loading {
			s.startLoad(ctx)
		}
	}
	return true
}

// planNow plans msg from the snapshot. A planner that panics answers an error (a bug,
// logged and counted) and leaves the actor as it was.
func (s *appActor[S]) planNow(msg hooks.Message) (out planAnswer) {
	defer func() {
		if p := recover(); p != nil {
			s.dir.panicked("the hook pipeline of an app", s.appID, p)
			out = planAnswer{err: fmt.Errorf("actors: planning the hooks of app %s panicked: %v", s.appID, p)}
		}
	}()
	return planAnswer{steps: any(s.snap).(HookPlanner).Plan(msg)}
}

// answerPlans answers the plan requests that waited for a load that ended with err.
func (s *appActor[S]) answerPlans(ctx actor.Context, err error) {
	for _, w := range s.planWaiters {
		a := planAnswer{err: err}
		if err == nil {
			a = s.planNow(w.msg)
		}
		ctx.Send(w.sender, a)
	}
	s.planWaiters = s.planWaiters[:0]
}
