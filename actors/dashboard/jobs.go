package dashboard

import (
	"context"
	"time"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/core/realtime"
)

// The jobs of a DashboardActor: the I/O a message leaves to do, as data (app.Job), done
// by the socket's Work off the actor; each comes back as app.JobDone.
type (
	// actionJob is a dashboard's action (SPEC 4.11) that needs the cluster: its type
	// and members; audited says whether its success goes to the audit log.
	actionJob struct {
		typ, userID              string
		message, reason, command string
		payload                  map[string]any
		typing                   bool
		audited                  bool
	}
	// recheckJob checks a dashboard owner's token again; it comes back with the answer.
	recheckJob struct{ err error }
)

func (j actionJob) JobName() string { return "dashboard " + j.typ }
func (recheckJob) JobName() string  { return "token recheck" }

// recheckTimeout bounds a dashboard's token recheck.
const recheckTimeout = 5 * time.Second

// Work does a dashboard socket's job (app.Socket), off its actor.
func (d *Dashboard) Work(ctx context.Context, job app.Job) app.Job {
	switch j := job.(type) {
	case recheckJob:
		ctx, cancel := context.WithTimeout(ctx, recheckTimeout)
		defer cancel()
		j.err = d.recheck.Recheck(ctx)
		return j
	case actionJob:
		ctx, cancel := context.WithTimeout(ctx, realtime.MessageDeadline)
		defer cancel()
		d.action(ctx, j)
		return j
	}
	return nil
}
