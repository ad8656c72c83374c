package session

import (
	"context"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/core/realtime"
)

// The jobs of a SessionActor: the I/O a message leaves to do, as data (app.Job). The
// actor pipes a job (app.SocketContext.Pipe); the socket's Work does it on a goroutine
// and answers the job with its outcome, which comes back to the actor as app.JobDone. A
// frame's jobs are its turn (app.Turn): the next frame waits for them.
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
)

func (describeJob) JobName() string     { return "describe" }
func (toDashboardsJob) JobName() string { return "to dashboards" }
func (customJob) JobName() string       { return "custom message" }
func (hookActionsJob) JobName() string  { return "hook actions" }

// Work does a client socket's job (app.Socket), off its actor.
func (c *Client) Work(ctx context.Context, job app.Job) app.Job {
	ctx, cancel := context.WithTimeout(ctx, realtime.MessageDeadline)
	defer cancel()
	appID := c.User.AppID
	switch j := job.(type) {
	case describeJob:
		if err := c.node.Describe(ctx, appID, j.info); err != nil && !j.frame {
			c.node.Log().Warn("realtime: cannot describe a restored socket", "socket", j.info.ID, "err", err)
		}
		if j.tell.Type != "" {
			_ = c.node.ToDashboards(ctx, appID, j.tell)
		}
		if !j.frame {
			return nil
		}
		return j
	case toDashboardsJob:
		_ = c.node.ToDashboards(ctx, appID, j.msg)
		return j
	case customJob:
		j.steps = c.custom(ctx, j)
		return j
	case hookActionsJob:
		for _, st := range j.steps {
			c.carryOut(ctx, st)
		}
		return j
	}
	return nil
}
