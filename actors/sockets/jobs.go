package sockets

import (
	"context"
	"time"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/core/realtime"
)

// The jobs of the sockets' actors: the I/O a message leaves to do, as data (app.Job).
// The actor pipes a job (app.SocketContext.Pipe); its socket's Work does it on a
// goroutine and answers the job with its outcome, which comes back to the actor as
// app.JobDone. A frame's jobs are its turn (turns.go): the next frame waits for them.
type (
	// describeJob writes what the session list shows of a client socket, then tells the
	// dashboards tell (when its Type is set). frame: it is a frame's I/O, and comes back
	// to end it; a renewal's redescription does not come back.
	describeJob struct {
		info  realtime.SessionInfo
		tell  wire.Outgoing
		frame bool
	}
	// toDashboardsJob tells the app's dashboards msg (a client's chat or typing).
	toDashboardsJob struct{ msg wire.Outgoing }
	// customJob forwards a client message of a custom type to the dashboards as
	// custom_event (with data) and runs the app's hooks over it: it comes back with the
	// actions they planned (steps).
	customJob struct {
		in    wire.Incoming
		data  any
		steps []realtime.HookAction
	}
	// hookActionsJob carries out planned hook actions that need the cluster or storage.
	hookActionsJob struct{ steps []realtime.HookAction }
	// dashboardJob is a dashboard's action (SPEC 4.11) that needs the cluster: its type
	// and members; audited says whether its success goes to the audit log.
	dashboardJob struct {
		typ, userID              string
		message, reason, command string
		payload                  map[string]any
		typing                   bool
		audited                  bool
	}
	// recheckJob checks a dashboard owner's token again; it comes back with the answer.
	recheckJob struct{ err error }
)

func (describeJob) JobName() string     { return "describe" }
func (toDashboardsJob) JobName() string { return "to dashboards" }
func (customJob) JobName() string       { return "custom message" }
func (hookActionsJob) JobName() string  { return "hook actions" }
func (j dashboardJob) JobName() string  { return "dashboard " + j.typ }
func (recheckJob) JobName() string      { return "token recheck" }

// dashboardRecheckTimeout bounds a dashboard's token recheck.
const dashboardRecheckTimeout = 5 * time.Second

// Work does a client socket's job (app.Socket), off its actor.
func (c *Client) Work(ctx context.Context, job app.Job) app.Job {
	ctx, cancel := context.WithTimeout(ctx, realtime.MessageDeadline)
	defer cancel()
	s, appID := c.svc, c.User.AppID
	switch j := job.(type) {
	case describeJob:
		if err := s.describe(ctx, appID, j.info); err != nil && !j.frame {
			s.d.Log.Warn("realtime: cannot describe a restored socket", "socket", j.info.ID, "err", err)
		}
		if j.tell.Type != "" {
			_ = s.toDashboardsMsg(ctx, appID, j.tell)
		}
		if !j.frame {
			return nil
		}
		return j
	case toDashboardsJob:
		_ = s.toDashboardsMsg(ctx, appID, j.msg)
		return j
	case customJob:
		j.steps = s.custom(ctx, c, j)
		return j
	case hookActionsJob:
		for _, st := range j.steps {
			s.carryOut(ctx, c, st)
		}
		return j
	}
	return nil
}

// Work does a dashboard socket's job (app.Socket), off its actor.
func (d *Dashboard) Work(ctx context.Context, job app.Job) app.Job {
	switch j := job.(type) {
	case recheckJob:
		ctx, cancel := context.WithTimeout(ctx, dashboardRecheckTimeout)
		defer cancel()
		j.err = d.recheck.Recheck(ctx)
		return j
	case dashboardJob:
		ctx, cancel := context.WithTimeout(ctx, realtime.MessageDeadline)
		defer cancel()
		d.svc.dashboardAction(ctx, d, j)
		return j
	}
	return nil
}
