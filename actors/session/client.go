package session

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/realtime"
)

// Node is what a client socket's actor needs of its node's channels (actors/sockets):
// the cluster bus, presence, hooks, the log and the counts. Its calls do I/O and are only
// made from the socket's jobs (Work), never in Receive; Now, Log and the counts are cheap.
type Node interface {
	Now() time.Time
	Log() *slog.Logger
	// ToUser, ToClients and ToDashboards publish m on the cluster bus to a user's client
	// sockets, every client socket of the app, the app's dashboards.
	ToUser(ctx context.Context, appID, userID string, m wire.Outgoing) error
	ToClients(ctx context.Context, appID string, m wire.Outgoing) error
	ToDashboards(ctx context.Context, appID string, m wire.Outgoing) error
	// Kick closes a user's sockets after force_logout; Ban sets the user's banned flag
	// (its user.ban event closes the sockets). A hook's actions, not checked again.
	Kick(ctx context.Context, appID, userID, reason string) error
	Ban(ctx context.Context, appID, userID, reason string) error
	// LogEvent stores an event for the application log; a failure is only logged.
	LogEvent(ctx context.Context, e events.Event)
	// Admit puts the socket's presence in place under the app's limit and the
	// one-socket-per-user rule (one atomic engine call); Describe writes what the session
	// list shows of it again.
	Admit(ctx context.Context, appID string, info realtime.SessionInfo) error
	Describe(ctx context.Context, appID string, info realtime.SessionInfo) error
	// Plan runs the app's hooks over a client message (nil: no hooks).
	Plan(ctx context.Context, appID string, in realtime.HookInput) ([]realtime.HookAction, error)
	// RevalidationFailed and RevalidationClosed count the verdicts of the batched checks;
	// Bug logs and counts an error that is neither a domain answer nor an unavailable part.
	RevalidationFailed()
	RevalidationClosed()
	Bug(what string, err error)
}

// Client is a client socket held by this node: the state and rules of its SessionActor.
// Its actor alone reads and changes its state: the app's periodic lease renewal needs
// only the socket's id and user, which never change, and a status or metadata change is
// encoded in the actor before its write leaves it. There is no lock.
type Client struct {
	ID     string
	User   client.SocketUser
	Caller client.Caller
	// connectedAt is when the socket was admitted, in Unix milliseconds (the session list
	// shows it to the millisecond, in UTC): 8 bytes where a time.Time takes 24.
	connectedAt int64

	node Node
	peer wire.Peer
	ref  app.Ref
	// session names the socket's session on the bus without its token.
	session string
	// rate and turn belong to the socket's actor.
	rate realtime.Window
	turn app.Turn
	// status and metadata are what the session list shows; metadata is replaced whole,
	// never changed in place.
	status   string
	metadata map[string]any
}

// New makes the client socket id of user u, written through peer; session names its
// session on the bus (a hash of its token). Its actor starts when its app's actor admits
// it (app.Apps.Admit).
func New(node Node, id string, u client.SocketUser, caller client.Caller, peer wire.Peer, session string) *Client {
	return &Client{ID: id, User: u, Caller: caller, connectedAt: node.Now().UnixMilli(), node: node, peer: peer, session: session,
		rate: realtime.Window{Limit: realtime.ClientMessages, Per: realtime.ClientWindow}, status: "online"}
}

// Messages of a SessionActor, besides app.Frame and the shell's.
type (
	// Delivery is a bus delivery for the socket, carried out by Take (not a turn of the
	// actor): Msg (when set) is sent, then the socket is closed when Close.Code is not 0.
	Delivery struct {
		Msg   []byte
		Close wire.Disconnect
	}
	// Verdict is a revalidation's answer for the socket (Err nil: it passes).
	Verdict struct{ Err error }
)

// Kind, Spawned, Receive and Failed make a Client the SessionActor's socket.
func (c *Client) Kind() string { return "session" }

// LeaseUser makes a Client an app.Leaseholder: its app's actor keeps its lease.
func (c *Client) LeaseUser() string   { return c.User.UserID }
func (c *Client) Spawned(ref app.Ref) { c.ref = ref }

// Ref is the socket's actor.
func (c *Client) Ref() app.Ref { return c.ref }

// SessionRef names the socket's session on the bus (deliveries to one session).
func (c *Client) SessionRef() string { return c.session }

// Hand gives a frame the socket sent to its actor and returns once it is handled (its
// I/O included): the socket's reader calls it for each frame in order.
func (c *Client) Hand(ctx context.Context, raw []byte) {
	app.Hand(ctx, c.ref, raw, realtime.MessageDeadline)
}

// Close closes the socket (the node shuts down): the transport's writer is safe to call
// from anywhere.
func (c *Client) Close(d wire.Disconnect) { c.peer.Close(d) }

// Receive handles one message of the socket in its actor.
func (c *Client) Receive(sc app.SocketContext, msg any) {
	switch m := msg.(type) {
	case app.Frame:
		c.turn.Take(sc, m, c.handle)
	case app.JobDone:
		// The frame under way goes on with the hook actions its custom message planned,
		// or ends.
		var next app.Job
		if j, ok := m.Job.(customJob); ok {
			next = c.carryOutPlan(j.steps)
		}
		c.turn.Next(sc, next, c.handle)
	case Verdict:
		c.verdict(m.Err)
	case app.LeaseRestored:
		// A renewal put the socket's lapsed presence back without what the session list
		// shows of it: the actor writes that again.
		sc.Pipe(describeJob{info: c.info()})
	case app.LeaseSuperseded:
		// A newer socket of the user holds its place.
		c.peer.Send(ReplacedMsg)
		c.peer.Close(wire.Replaced(ReplacedReason))
	case app.Leaving:
		c.turn.Leave(sc)
	}
}

// ReplacedMsg is what a socket replaced by a newer socket of its user hears before it is
// closed with wire.CodeReplaced and ReplacedReason.
var ReplacedMsg = wire.Encode(wire.Outgoing{Type: wire.TypeForceLogout, Data: map[string]any{"reason": "connected from another place"}})

const ReplacedReason = "replaced by a newer connection"

// Admit makes the socket's admission (app.Admittee): its presence, under the app's
// limit and the one-socket-per-user rule. The app's actor runs it outside its Receive.
func (c *Client) Admit(ctx context.Context) error { return c.node.Admit(ctx, c.User.AppID, c.info()) }

func (c *Client) handle(raw []byte) app.Job { return c.message(raw) }

// Failed closes a socket whose actor failed (1011) and frees its waiting reader.
func (c *Client) Failed(_, msg any) {
	c.peer.Close(wire.Internal("internal error"))
	c.turn.Failed(msg)
}

// info is what the session list shows of the socket; only its actor (or its admission,
// before the actor exists) calls it.
func (c *Client) info() realtime.SessionInfo {
	return realtime.SessionInfo{ID: c.ID, UserID: c.User.UserID, Username: c.User.Username, IP: c.User.IP,
		ConnectedAt: time.UnixMilli(c.connectedAt).UTC(), Status: c.status, Metadata: maps.Clone(c.metadata)}
}

// verdict carries out the answer of a check of the socket: a socket whose session no
// longer passes is sent force_logout (banned for a ban) and closed; a check that could
// not be made (the engine or the store did not answer) changes nothing, the next one
// decides.
func (c *Client) verdict(err error) {
	if err == nil {
		return
	}
	code, reason := realtime.Explain(err)
	switch code {
	case core.CodeUnavailable:
		c.node.RevalidationFailed()
		return
	case core.CodeInternal:
		// A bug is not "try again later": the socket ends with the internal-error code, and
		// its program connects again.
		c.node.Bug("client revalidation", err)
		c.node.RevalidationClosed()
		c.peer.Close(wire.Internal(reason))
		return
	}
	c.node.RevalidationClosed()
	msg := wire.Outgoing{Type: wire.TypeForceLogout, Data: map[string]any{"reason": reason}}
	closing := wire.ForceLogout(reason)
	if code == core.CodeBanned {
		// The owner's reason alone, as a ban delivered by its event or a hook says it: a
		// socket hears the same reason whichever reaches it first.
		reason = client.BanReasonOf(reason)
		msg, closing = wire.Outgoing{Type: wire.TypeBanned, Data: map[string]any{"reason": reason}}, wire.Banned(reason)
	}
	c.peer.Send(wire.Encode(msg))
	c.peer.Close(closing)
}

// message handles one frame in the socket's actor: its state changes and direct answers
// now, its I/O in the job it answers (nil: none).
func (c *Client) message(raw []byte) app.Job {
	in, ok := wire.Accept(c.peer, &c.rate, c.node.Now(), raw)
	if !ok {
		return nil
	}
	who := map[string]any{"userId": c.User.UserID, "username": c.User.Username}
	with := func(k string, v any) map[string]any {
		m := maps.Clone(who)
		m[k] = v
		return m
	}
	switch in.Type {
	case "ping":
		c.peer.Send(wire.Encode(wire.Outgoing{Type: wire.TypePong}))
	case "set_status":
		st := in.Str("status")
		if st == "" || len(st) > realtime.MaxStatus {
			c.peer.Send(wire.ErrorMessage(fmt.Sprintf("status must be a string of 1 to %d characters", realtime.MaxStatus)))
			return nil
		}
		c.status = st
		return describeJob{info: c.info(), tell: wire.Outgoing{Type: wire.TypeStatus, Data: with("status", st)}, frame: true}
	case "chat":
		msg := in.Str("message")
		if msg == "" || len(msg) > realtime.MaxText {
			c.peer.Send(wire.ErrorMessage(fmt.Sprintf("message must be a string of 1 to %d characters", realtime.MaxText)))
			return nil
		}
		return toDashboardsJob{msg: wire.Outgoing{Type: wire.TypeChat, Data: with("message", msg)}}
	case "typing":
		v, _ := in.Member("typing")
		typing, isBool := v.(bool)
		if !isBool {
			c.peer.Send(wire.ErrorMessage("typing must be a boolean"))
			return nil
		}
		return toDashboardsJob{msg: wire.Outgoing{Type: wire.TypeTyping, Data: with("typing", typing)}}
	case "set_metadata":
		v, _ := in.Member("metadata")
		meta, isObj := v.(map[string]any)
		if !isObj {
			c.peer.Send(wire.ErrorMessage("metadata must be an object"))
			return nil
		}
		if err := realtime.ValidMetadata(meta); err != "" {
			c.peer.Send(wire.ErrorMessage(err))
			return nil
		}
		c.metadata = meta
		return describeJob{info: c.info(), frame: true}
	default:
		// Forwarded to the dashboards as custom_event, and the app's hooks run over it.
		data := in.Fields["data"]
		if data == nil {
			if m, ok := in.Fields["message"]; ok {
				data = map[string]any{"message": m}
			}
		}
		return customJob{in: in, data: data}
	}
	return nil
}

// custom forwards a client message of a custom type to the dashboards as custom_event
// and runs the app's hooks over it (customJob, off the socket's actor): it answers the
// actions they planned, which the socket's actor carries out.
func (c *Client) custom(ctx context.Context, j customJob) []realtime.HookAction {
	appID := c.User.AppID
	_ = c.node.ToDashboards(ctx, appID, wire.Outgoing{Type: wire.TypeCustomEvent,
		Data: map[string]any{"event": j.in.Type, "userId": c.User.UserID, "username": c.User.Username, "data": j.data}})
	steps, err := c.node.Plan(ctx, appID, realtime.HookInput{Type: j.in.Type, Fields: j.in.Fields,
		UserID: c.User.UserID, Username: c.User.Username, IP: c.User.IP})
	if err != nil {
		c.node.Log().Warn("realtime: cannot run hooks", "app", appID, "err", err)
		return nil
	}
	return steps
}
