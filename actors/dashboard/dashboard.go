package dashboard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/realtime"
)

// Node is what a dashboard socket's actor needs of its node's channels (actors/sockets):
// the operations of SPEC 4.9 it shares with the REST helpers, and the log and count of
// bugs. The operations do I/O and are only called from the socket's jobs (Work), never
// in Receive.
type Node interface {
	Now() time.Time
	// RecheckEvery is how often the owner's token is checked again.
	RecheckEvery() time.Duration
	Online(ctx context.Context, appID string) (int, error)
	Sessions(ctx context.Context, appID string) ([]realtime.SessionInfo, error)
	Chat(ctx context.Context, appID, userID, message string) (bool, error)
	Push(ctx context.Context, appID, userID string, payload map[string]any) (int, error)
	Typing(ctx context.Context, appID, userID string, typing bool) error
	Kick(ctx context.Context, appID, userID, reason string) (bool, error)
	Ban(ctx context.Context, appID, userID, reason string) error
	Command(ctx context.Context, appID, userID, command string, payload map[string]any) (int, error)
	// Bug logs and counts an error that is neither a domain answer nor an unavailable part.
	Bug(what string, err error)
}

// Dashboard is an owner's socket on an app, held by this node: the state and rules of its
// DashboardActor, which alone touches it. The edge admits it (JWT, ownership, plan)
// before it is made.
type Dashboard struct {
	ID    string
	AppID string

	node Node
	peer wire.Peer
	ref  app.Ref
	rate realtime.Window
	turn app.Turn

	filters map[string]bool // nil: every type
	// holding is true until the socket's first messages (online_count and sessions) are
	// sent: deliveries wait in held so that those come first and none is lost.
	holding bool
	held    [][]byte
	// recheck checks the owner's token again every Node.RecheckEvery (nil: never);
	// stopRecheck stops its timer, checking is true while a check runs.
	recheck TokenCheck
	// audit, given at the socket's connection (WithAudit), is told of each action that
	// changed something (kick, ban, command, push_json, chat) once it succeeded; refused
	// actions are not told. nil: nothing is audited.
	audit       Auditor
	stopRecheck func()
	checking    bool
}

// New makes the dashboard socket id of app appID, written through peer. Its actor starts
// when it joins its app's actor (app.Apps.Join).
func New(node Node, id, appID string, peer wire.Peer, opts ...Option) *Dashboard {
	d := &Dashboard{ID: id, AppID: appID, node: node, peer: peer,
		rate: realtime.Window{Limit: realtime.DashboardMessages, Per: realtime.DashboardWindow}, holding: true}
	for _, o := range opts {
		o(d)
	}
	return d
}

// Messages of a DashboardActor, besides app.Frame and the shell's.
type (
	// Delivery is a bus delivery for the app's dashboards: Msg, of message type Type
	// (for the socket's filters).
	Delivery struct {
		Msg  []byte
		Type string
	}
	// greet carries the socket's first messages; done is closed once they are queued.
	greet struct {
		first [][]byte
		done  chan struct{}
	}
	// recheckNow is the token recheck's timer (its answer comes back as a recheckJob).
	recheckNow struct{}
)

// Kind, Spawned, Receive and Failed make a Dashboard the DashboardActor's socket.
func (d *Dashboard) Kind() string        { return "dashboard" }
func (d *Dashboard) Spawned(ref app.Ref) { d.ref = ref }

// Ref is the socket's actor.
func (d *Dashboard) Ref() app.Ref { return d.ref }

// Hand gives a frame the socket sent to its actor and returns once it is handled.
func (d *Dashboard) Hand(ctx context.Context, raw []byte) {
	app.Hand(ctx, d.ref, raw, realtime.MessageDeadline)
}

// Close closes the socket (the node shuts down).
func (d *Dashboard) Close(c wire.Disconnect) { d.peer.Close(c) }

// Greet has the socket's actor send its first messages, before any delivery that waited,
// and returns once they are queued; an error when that did not happen in time (the app's
// actor restarted at this moment) or ctx ended.
func (d *Dashboard) Greet(ctx context.Context, first [][]byte) error {
	done := make(chan struct{})
	d.ref.Tell(greet{done: done, first: first})
	wait, cancel := context.WithTimeout(ctx, realtime.MessageDeadline)
	defer cancel()
	select {
	case <-done:
		return nil
	case <-wait.Done():
		return wait.Err()
	}
}

// Receive handles one message of the socket in its actor.
func (d *Dashboard) Receive(sc app.SocketContext, msg any) {
	switch m := msg.(type) {
	case app.Frame:
		d.turn.Take(sc, m, d.handle)
	case app.JobDone:
		if j, ok := m.Job.(recheckJob); ok {
			d.checked(j.err)
			return
		}
		d.turn.Next(sc, nil, d.handle)
	case *Delivery:
		d.deliver(m.Msg, m.Type)
	case greet:
		for _, f := range m.first {
			d.peer.Send(f)
		}
		for _, f := range d.held {
			d.peer.Send(f)
		}
		d.holding, d.held = false, nil
		close(m.done)
	case app.SocketStarted:
		if d.recheck != nil {
			d.stopRecheck = sc.Every(d.node.RecheckEvery(), recheckNow{})
		}
	case app.SocketStopping:
		if d.stopRecheck != nil {
			d.stopRecheck()
			d.stopRecheck = nil
		}
	case recheckNow:
		if d.checking {
			return
		}
		d.checking = true
		sc.Pipe(recheckJob{})
	case app.Leaving:
		d.turn.Leave(sc)
	}
}

// checked carries out the answer of a token recheck: only a token that no longer
// authenticates ends the socket; a check that could not be made changes nothing.
func (d *Dashboard) checked(err error) {
	d.checking = false
	var de *core.Error
	if err != nil && errors.As(err, &de) && de.Code == core.CodeUnauthorized {
		d.peer.Send(wire.ErrorMessage("your session ended; sign in again"))
		d.peer.Close(wire.Policy("token no longer valid"))
	}
}

func (d *Dashboard) handle(raw []byte) app.Job { return d.message(raw) }

// Failed closes a socket whose actor failed (1011) and frees its waiting reader.
func (d *Dashboard) Failed(_, msg any) {
	d.peer.Close(wire.Internal("internal error"))
	d.turn.Failed(msg)
}

// deliver sends a delivery of type typ if the dashboard's filters want it.
func (d *Dashboard) deliver(msg []byte, typ string) {
	if d.filters != nil && !d.filters[typ] {
		return
	}
	if d.holding {
		d.held = append(d.held, msg)
		return
	}
	d.peer.Send(msg)
}

// Option sets up a dashboard socket.
type Option func(*Dashboard)

// TokenCheck checks a dashboard owner's token (or ticket session) again: an error of code
// UNAUTHORIZED says it no longer authenticates.
type TokenCheck interface {
	Recheck(ctx context.Context) error
}

// WithRecheck has the socket's actor check its owner's token every Node.RecheckEvery:
// when the check answers an unauthorized error (the owner's token was revoked or
// expired) the socket is told and closed.
func WithRecheck(recheck TokenCheck) Option {
	return func(d *Dashboard) { d.recheck = recheck }
}

// Auditor records a dashboard action that changed something: its type, the user it
// concerned, and its reason or command name (details). It is called off the socket's
// actor, after the action, and may wait for its write.
type Auditor interface {
	Audit(action, userID string, details map[string]any)
}

// ChangeAuditor is an Auditor whose entry of an action that stores a change (a ban: the
// user's banned flag, with user.ban) rides that change's own write: WithEntry answers ctx
// carrying the entry (storage.AuditOutbox) for the write to take, and Audited, called
// once the action succeeded with that ctx, writes the entry after only when the write
// did not take it. The job stays data: the entry is built in the job's Work, from the
// socket's actor (its account and token), address and app the Auditor was given.
type ChangeAuditor interface {
	Auditor
	WithEntry(ctx context.Context, action, userID string, details map[string]any) context.Context
	Audited(ctx context.Context, action, userID string, details map[string]any)
}

// WithAudit has the socket's actor tell audit of each action that changed something, once
// it succeeded. It is part of the socket from its connection: no action goes unaudited.
func WithAudit(audit Auditor) Option {
	return func(d *Dashboard) { d.audit = audit }
}

// Refusal answers the error message and the close of a dashboard socket that could not
// be opened: "try again" with the policy code when a part did not answer, "internal
// error" with 1011 for a bug.
func Refusal(err error) (msg []byte, closing wire.Disconnect) {
	if code, _ := realtime.Explain(err); code == core.CodeInternal {
		return wire.ErrorMessage("internal error"), wire.Internal("internal error")
	}
	return wire.ErrorMessage("the server cannot list the sessions now; try again"), wire.Policy("unavailable")
}

// message handles one message of a dashboard socket in its actor (a refused message is
// answered with error; nothing else changes); what needs the cluster is the job it
// answers (action, off the actor).
func (d *Dashboard) message(raw []byte) app.Job {
	in, ok := wire.Accept(d.peer, &d.rate, d.node.Now(), raw)
	if !ok {
		return nil
	}
	// A userId that is not a string must not read as "none": push_json would go to everyone.
	if v, present := in.Member("userId"); present && v != nil {
		if _, isStr := v.(string); !isStr {
			d.peer.Send(wire.ErrorMessage("userId must be a string"))
			return nil
		}
	}
	job := actionJob{typ: in.Type, userID: in.Str("userId"), audited: d.audit != nil && realtime.AuditedDashboardAction(in.Type)}
	switch in.Type {
	case "ping":
		d.peer.Send(wire.Encode(wire.Outgoing{Type: wire.TypePong}))
		return nil
	case "get_online", "get_sessions":
	case "chat":
		job.message = in.Str("message")
	case "push_json", "command":
		p, _ := in.Member("payload")
		job.payload, _ = p.(map[string]any)
		job.command = in.Str("command")
	case "typing":
		v, _ := in.Member("typing")
		typing, isBool := v.(bool)
		if job.userID == "" || !isBool {
			d.peer.Send(wire.ErrorMessage("typing needs userId and a boolean typing"))
			return nil
		}
		job.typing = typing
	case "kick", "ban":
		job.reason = in.Str("reason")
	case "set_filters":
		v, _ := in.Member("events")
		list, isList := v.([]any)
		if !isList || len(list) > 100 {
			d.peer.Send(wire.ErrorMessage("events must be an array of at most 100 event types"))
			return nil
		}
		filters := make(map[string]bool, len(list))
		for _, e := range list {
			name, isStr := e.(string)
			if !isStr {
				d.peer.Send(wire.ErrorMessage("events must be an array of event types"))
				return nil
			}
			filters[name] = true
		}
		// pong and error always come through: they answer the dashboard itself.
		filters[wire.TypePong], filters[wire.TypeError] = true, true
		d.filters = filters
		return nil
	default:
		d.peer.Send(wire.ErrorMessage(fmt.Sprintf("unknown message type %q", in.Type)))
		return nil
	}
	// The audit's details are the message's reason and command, whatever its type.
	job.reason, job.command = in.Str("reason"), in.Str("command")
	return job
}

// action carries out a dashboard's action (an actionJob, off the socket's actor): a
// refused one is answered with error; one that succeeded is audited when it changed
// something.
func (d *Dashboard) action(ctx context.Context, j actionJob) {
	var err error
	n := d.node
	details := map[string]any{"reason": j.reason, "command": j.command}
	// A ban writes (the banned flag): its entry goes with that write when it can.
	withChange, _ := d.audit.(ChangeAuditor)
	if !j.audited || j.typ != "ban" {
		withChange = nil
	}
	actx := ctx
	switch j.typ {
	case "get_online":
		var count int
		if count, err = n.Online(ctx, d.AppID); err == nil {
			d.peer.Send(wire.Encode(wire.Outgoing{Type: wire.TypeOnlineCount, Data: map[string]any{"count": count}}))
		}
	case "get_sessions":
		var list []realtime.SessionInfo
		if list, err = n.Sessions(ctx, d.AppID); err == nil {
			d.peer.Send(wire.Encode(wire.Outgoing{Type: wire.TypeSessions, Data: map[string]any{"sessions": list}}))
		}
	case "chat":
		_, err = n.Chat(ctx, d.AppID, j.userID, j.message)
	case "push_json":
		_, err = n.Push(ctx, d.AppID, j.userID, j.payload)
	case "typing":
		err = n.Typing(ctx, d.AppID, j.userID, j.typing)
	case "kick":
		_, err = n.Kick(ctx, d.AppID, j.userID, j.reason)
	case "ban":
		if withChange != nil {
			actx = withChange.WithEntry(ctx, j.typ, j.userID, details)
		}
		err = n.Ban(actx, d.AppID, j.userID, j.reason)
	case "command":
		_, err = n.Command(ctx, d.AppID, j.userID, j.command, j.payload)
	}
	if err != nil {
		code, reason := realtime.Explain(err)
		if code == core.CodeInternal {
			// The action failed on a bug: the owner is told "internal error", not "try again".
			n.Bug("dashboard "+j.typ, err)
		}
		d.peer.Send(wire.ErrorMessage(reason))
		return
	}
	switch {
	case withChange != nil:
		withChange.Audited(actx, j.typ, j.userID, details)
	case j.audited:
		d.audit.Audit(j.typ, j.userID, details)
	}
}
