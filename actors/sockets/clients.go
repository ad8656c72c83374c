package sockets

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"
	"unique"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/realtime"
	"github.com/keyward/keyward/storage"
)

// Client is a client socket held by this node: the state and rules of its SessionActor
// (turns.go). Its actor alone reads and changes its state: the app's periodic lease
// renewal needs only the socket's id and user, which never change, and a status or
// metadata change is encoded in the actor before its write leaves it. There is no lock.
type Client struct {
	ID     string
	User   client.SocketUser
	Caller client.Caller
	// connectedAt is when the socket was admitted, in Unix milliseconds (the session list
	// shows it to the millisecond, in UTC): 8 bytes where a time.Time takes 24.
	connectedAt int64

	svc  *Service
	peer wire.Peer
	ref  app.Ref
	// session is sessionRef of the socket's session token.
	session string
	// rate and turn belong to the socket's actor.
	rate realtime.Window
	turn turn
	// status and metadata are what the session list shows; metadata is replaced whole,
	// never changed in place.
	status   string
	metadata map[string]any
}

// Kind, Spawned, Receive and Failed make a Client the SessionActor's socket.
func (c *Client) Kind() string { return "session" }

// LeaseUser makes a Client an app.Leaseholder: its app's actor keeps its lease.
func (c *Client) LeaseUser() string   { return c.User.UserID }
func (c *Client) Spawned(ref app.Ref) { c.ref = ref }

// Receive handles one message of the socket in its actor.
func (c *Client) Receive(sc app.SocketContext, msg any) {
	switch m := msg.(type) {
	case inbound:
		c.turn.take(sc, m, c.handle)
	case app.JobDone:
		// The frame under way goes on with the hook actions its custom message planned,
		// or ends.
		var next app.Job
		if j, ok := m.Job.(customJob); ok {
			next = c.svc.carryOutPlan(c, j.steps)
		}
		c.turn.next(sc, next, c.handle)
	case *wire.Shared:
		c.peer.SendShared(m)
	case *delivery:
		if len(m.Msg) > 0 {
			c.peer.Send(m.Msg)
		}
		if m.Close != 0 {
			c.peer.Close(wire.Disconnect{Code: m.Close, Reason: m.Reason})
		}
	case verdict:
		c.svc.handle(c, m.err)
	case app.LeaseRestored:
		// A renewal put the socket's lapsed presence back without what the session list
		// shows of it: the actor writes that again.
		sc.Pipe(describeJob{info: c.info()})
	case app.LeaseSuperseded:
		// A newer socket of the user holds its place.
		c.peer.Send(replacedMsg)
		c.peer.Close(wire.Disconnect{Code: wire.CodeReplaced, Reason: replacedReason})
	case app.Leaving:
		c.turn.leave(sc)
	}
}

// Admit makes the socket's admission (app.Admittee): its presence, under the app's
// limit and the one-socket-per-user rule. The app's actor runs it outside its Receive.
func (c *Client) Admit(ctx context.Context) error { return c.svc.admitPresence(ctx, c) }

func (c *Client) handle(raw []byte) app.Job { return c.svc.clientMessage(c, raw) }

// Failed closes a socket whose actor failed (1011) and frees its waiting reader.
func (c *Client) Failed(_, msg any) {
	c.peer.Close(wire.Internal("internal error"))
	c.turn.failed(msg)
}

// info is what the session list shows of the socket; only its actor (or its admission,
// before the actor exists) calls it.
func (c *Client) info() realtime.SessionInfo {
	return realtime.SessionInfo{ID: c.ID, UserID: c.User.UserID, Username: c.User.Username, IP: c.User.IP,
		ConnectedAt: time.UnixMilli(c.connectedAt).UTC(), Status: c.status, Metadata: maps.Clone(c.metadata)}
}

// explain answers what a socket is told about err: a domain error's code and message;
// UNAVAILABLE when a part the answer needs could not answer (the cluster engine, storage,
// the app's actor, a deadline), which the program may try again; INTERNAL for anything
// else, which is a bug: never "try again" (the caller logs and counts it, see bug).
func explain(err error) (core.Code, string) {
	var de *core.Error
	switch {
	case errors.As(err, &de):
		return de.Code, de.Message
	case unavailable(err):
		return core.CodeUnavailable, "the server cannot check this session now; try again"
	default:
		return core.CodeInternal, "internal error"
	}
}

// unavailable says whether err is a part that did not answer rather than a bug.
func unavailable(err error) bool {
	return errors.Is(err, cluster.ErrUnavailable) || errors.Is(err, storage.ErrUnavailable) || errors.Is(err, app.ErrUnavailable) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// bug logs and counts an error that is neither a domain answer nor an unavailable part.
func (s *Service) bug(what string, err error) {
	s.stats.internalErrors.Add(1)
	s.d.Log.Error("realtime: internal error; the socket is told so", "where", what, "err", err)
}

// Refusal answers the force_logout message that tells a client socket why it was refused
// (SDKs cannot read the body of a refused upgrade), and how the socket is closed: with
// the policy code and the refusal's reason, or with the internal-error code for a bug
// (ConnectClient logged and counted it).
func Refusal(err error) (msg []byte, closing wire.Disconnect) {
	code, reason := explain(err)
	closing = wire.Policy(reason)
	if code == core.CodeInternal {
		closing = wire.Internal(reason)
	}
	return wire.Encode(wire.Outgoing{Type: wire.TypeForceLogout, Data: map[string]any{"reason": reason, "code": string(code)}}), closing
}

// ConnectClient admits a client socket (SPEC 4.11): the session checks of CheckSocket,
// then the app's limit of realtime.MaxClientsPerApp sockets. A user has one socket: an earlier
// socket of the same user, on any node, is closed with force_logout (the newer one wins,
// so a program that lost its connection can reconnect at once). Dashboards see
// session_connect. A refusal is a domain error (see Refusal).
func (s *Service) ConnectClient(ctx context.Context, caller client.Caller, token string, peer wire.Peer) (*Client, error) {
	c, err := s.connectClient(ctx, caller, token, peer)
	if err != nil {
		if code, _ := explain(err); code == core.CodeInternal {
			s.bug("client admission", err)
		}
		return nil, err
	}
	return c, nil
}

func (s *Service) connectClient(ctx context.Context, caller client.Caller, token string, peer wire.Peer) (*Client, error) {
	u, err := s.d.Sessions.CheckSocket(ctx, caller, token)
	if err != nil {
		return nil, err
	}
	// Every socket of an app has the same app and owner ids: one copy of each (the
	// session's decoding made a copy per socket).
	u.AppID, u.AccountID = unique.Make(u.AppID).Value(), unique.Make(u.AccountID).Value()
	c := &Client{ID: newID(), User: u, Caller: caller, connectedAt: s.d.Now().UnixMilli(), svc: s, peer: peer, session: sessionRef(u.Token),
		rate: realtime.Window{Limit: realtime.ClientMessages, Per: realtime.ClientWindow}, status: "online"}
	// The app's actor subscribes to the app's deliveries before the admission, so that none
	// made after it is missed; it runs the admission (one atomic presence call) and holds
	// the socket from the moment it passes (deliveries, the periodic work).
	if err := s.reg.Admit(ctx, u.AppID, c.ID, c); err != nil {
		// The app's actor releases whatever lease the admission put in place.
		s.reg.Leave(u.AppID, c.ID)
		return nil, err
	}
	_ = s.toDashboardsMsg(ctx, u.AppID, wire.Outgoing{Type: wire.TypeSessionConnect,
		Data: map[string]any{"userId": u.UserID, "username": u.Username, "ip": u.IP, "id": c.ID}})
	s.logEvent(ctx, events.Event{Name: events.WSConnect, AppID: u.AppID, Username: u.Username, IP: u.IP, Level: events.LevelDebug,
		Message: "client socket connected", Data: map[string]any{"userId": u.UserID}})
	return c, nil
}

// replacedMsg is what a socket replaced by a newer socket of its user hears before it is
// closed with wire.CodeReplaced.
var replacedMsg = wire.Encode(wire.Outgoing{Type: wire.TypeForceLogout, Data: map[string]any{"reason": "connected from another place"}})

const replacedReason = "replaced by a newer connection"

// replaced ends socket id of app appID, on whatever node holds it, for a newer socket of
// its user; the admission that replaced it removed its presence already.
func (s *Service) replaced(ctx context.Context, appID, id string) {
	_ = s.publish(ctx, delivery{App: appID, To: toConn, Conn: id, Msg: replacedMsg, Close: wire.CodeReplaced, Reason: replacedReason})
}

// DisconnectClient forgets a socket that ended, for whatever reason.
func (s *Service) DisconnectClient(c *Client) {
	held := s.reg.Leave(c.User.AppID, c.ID) // the app's actor releases its lease
	if !held {
		return // released already (by Close)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.left(ctx, c)
}

// left tells the dashboards that a socket left (its app's actor released its lease).
func (s *Service) left(ctx context.Context, c *Client) {
	_ = s.toDashboardsMsg(ctx, c.User.AppID, wire.Outgoing{Type: wire.TypeSessionDisconnect,
		Data: map[string]any{"userId": c.User.UserID, "username": c.User.Username, "id": c.ID}})
}

// handle carries out the answer of a check of socket c: a socket whose session no longer
// passes is sent force_logout (banned for a ban) and closed; a check that could not be
// made (the engine or the store did not answer) changes nothing, the next one decides.
func (s *Service) handle(c *Client, err error) {
	if err == nil {
		return
	}
	code, reason := explain(err)
	switch code {
	case core.CodeUnavailable:
		s.stats.revalidationFailed.Add(1)
		return
	case core.CodeInternal:
		// A bug is not "try again later": the socket ends with the internal-error code, and
		// its program connects again.
		s.bug("client revalidation", err)
		s.stats.revalidationClosed.Add(1)
		c.peer.Close(wire.Internal(reason))
		return
	}
	s.stats.revalidationClosed.Add(1)
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

// ClientMessage hands one message from a client socket (SPEC 4.11, client to server) to
// the socket's actor and returns once it is handled (its I/O included). The socket's
// reader calls it for each message in order.
func (s *Service) ClientMessage(ctx context.Context, c *Client, raw []byte) {
	hand(ctx, c.ref, raw)
}

// clientMessage handles one message in the socket's actor: its state changes and direct
// answers now, its I/O in the job it answers (nil: none).
func (s *Service) clientMessage(c *Client, raw []byte) app.Job {
	if now := s.d.Now(); !c.rate.Allow(now) {
		if c.rate.Warn(now) {
			c.peer.Send(wire.ErrorMessage(fmt.Sprintf("rate limited: at most %d messages per %s", realtime.ClientMessages, realtime.ClientWindow)))
		}
		return nil
	}
	in, ok := wire.Decode(raw)
	if !ok {
		c.peer.Send(wire.ErrorMessage("a message is a JSON object with a string type"))
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
func (s *Service) custom(ctx context.Context, c *Client, j customJob) []realtime.HookAction {
	appID := c.User.AppID
	_ = s.toDashboardsMsg(ctx, appID, wire.Outgoing{Type: wire.TypeCustomEvent,
		Data: map[string]any{"event": j.in.Type, "userId": c.User.UserID, "username": c.User.Username, "data": j.data}})
	if s.d.Hooks == nil {
		return nil
	}
	steps, err := s.d.Hooks.Plan(ctx, appID, realtime.HookInput{Type: j.in.Type, Fields: j.in.Fields,
		UserID: c.User.UserID, Username: c.User.Username, IP: c.User.IP})
	if err != nil {
		s.d.Log.Warn("realtime: cannot run hooks", "app", appID, "err", err)
		return nil
	}
	return steps
}
