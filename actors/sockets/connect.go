package sockets

import (
	"context"
	"fmt"
	"time"
	"unique"

	"github.com/keyward/keyward/actors/dashboard"
	"github.com/keyward/keyward/actors/session"
	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/realtime"
)

// The sockets' lives as http sees them: a client socket is admitted (ConnectClient),
// handed its frames (ClientMessage) and forgotten (DisconnectClient); a dashboard socket
// likewise. Each call is a message to the socket's actor or to its app's actor.

// Client is a client socket (its SessionActor's state: actors/session).
type Client = session.Client

// Dashboard is a dashboard socket (its DashboardActor's state: actors/dashboard).
type Dashboard = dashboard.Dashboard

// DashboardOption sets up a dashboard socket; TokenCheck and Auditor are what
// WithRecheck and WithAudit give it.
type (
	DashboardOption = dashboard.Option
	TokenCheck      = dashboard.TokenCheck
	Auditor         = dashboard.Auditor
)

// WithRecheck has the socket's actor check its owner's token every
// Deps.DashboardRecheck: when the check answers an unauthorized error (the owner's token
// was revoked or expired) the socket is told and closed.
func WithRecheck(recheck TokenCheck) DashboardOption { return dashboard.WithRecheck(recheck) }

// WithAudit has the socket's actor tell audit of each action that changed something, once
// it succeeded. It is part of the socket from its connection: no action goes unaudited.
func WithAudit(audit Auditor) DashboardOption { return dashboard.WithAudit(audit) }

// Refusal answers the force_logout message that tells a client socket why it was refused
// (SDKs cannot read the body of a refused upgrade), and how the socket is closed: with
// the policy code and the refusal's reason, or with the internal-error code for a bug
// (ConnectClient logged and counted it).
func Refusal(err error) (msg []byte, closing wire.Disconnect) {
	code, reason := realtime.Explain(err)
	closing = wire.Policy(reason)
	if code == core.CodeInternal {
		closing = wire.Internal(reason)
	}
	return wire.Encode(wire.Outgoing{Type: wire.TypeForceLogout, Data: map[string]any{"reason": reason, "code": string(code)}}), closing
}

// DashboardRefusal answers the error message and the close of a dashboard socket that
// ConnectDashboard could not open: "try again" with the policy code when a part did not
// answer, "internal error" with 1011 for a bug.
func DashboardRefusal(err error) (msg []byte, closing wire.Disconnect) { return dashboard.Refusal(err) }

// ConnectClient admits a client socket (SPEC 4.11): the session checks of CheckSocket,
// then the app's limit of MaxClientsPerApp sockets. A user has one socket: an earlier
// socket of the same user, on any node, is closed with force_logout (the newer one wins,
// so a program that lost its connection can reconnect at once). Dashboards see
// session_connect (published only while the app is watched: watch.go). A refusal is a domain error (see Refusal).
func (s *Service) ConnectClient(ctx context.Context, caller client.Caller, token string, peer wire.Peer) (*Client, error) {
	c, err := s.connectClient(ctx, caller, token, peer)
	if err != nil {
		if code, _ := realtime.Explain(err); code == core.CodeInternal {
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
	c := session.New(sessionNode{s}, newID(), u, caller, peer, sessionRef(u.Token))
	// The app's actor subscribes to the app's deliveries before the admission, so that none
	// made after it is missed; it runs the admission (one atomic presence call) and holds
	// the socket from the moment it passes (deliveries, the periodic work).
	if err := s.reg.Admit(ctx, u.AppID, c.ID, c); err != nil {
		// The app's actor releases whatever lease the admission put in place.
		s.reg.Leave(u.AppID, c.ID)
		return nil, err
	}
	// Dashboards hear of it if some node holds one of the app's (watch.go).
	if s.watched(ctx, u.AppID) {
		_ = s.toDashboardsMsg(ctx, u.AppID, wire.Outgoing{Type: wire.TypeSessionConnect,
			Data: map[string]any{"userId": u.UserID, "username": u.Username, "ip": u.IP, "id": c.ID}})
	}
	s.logEvent(ctx, events.Event{Name: events.WSConnect, AppID: u.AppID, Username: u.Username, IP: u.IP, Level: events.LevelDebug,
		Message: "client socket connected", Data: map[string]any{"userId": u.UserID}})
	return c, nil
}

// replaced ends socket id of app appID, on whatever node holds it, for a newer socket of
// its user; the admission that replaced it removed its presence already.
func (s *Service) replaced(ctx context.Context, appID, id string) {
	_ = s.publish(ctx, delivery{App: appID, To: toConn, Conn: id, Msg: session.ReplacedMsg, Close: wire.CodeReplaced, Reason: session.ReplacedReason})
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
	if !s.watched(ctx, c.User.AppID) {
		return // no dashboard of the app is open on any node (watch.go)
	}
	if msg, ok := c.Departure(); ok {
		_ = s.toDashboardsMsg(ctx, c.User.AppID, msg)
	}
}

// ClientMessage hands one message from a client socket (SPEC 4.11, client to server) to
// the socket's actor and returns once it is handled (its I/O included). The socket's
// reader calls it for each message in order.
func (s *Service) ClientMessage(ctx context.Context, c *Client, raw []byte) { c.Hand(ctx, raw) }

// ConnectDashboard registers an admitted dashboard socket (its actor starts) and sends it
// online_count and sessions at once (SPEC 4.11). An error that is a bug is logged and
// counted here; DashboardRefusal tells the socket.
func (s *Service) ConnectDashboard(ctx context.Context, appID string, peer wire.Peer, opts ...DashboardOption) (*Dashboard, error) {
	d, err := s.connectDashboard(ctx, appID, peer, opts...)
	if err != nil {
		if code, _ := realtime.Explain(err); code == core.CodeInternal {
			s.bug("dashboard connection", err)
		}
		return nil, err
	}
	return d, nil
}

func (s *Service) connectDashboard(ctx context.Context, appID string, peer wire.Peer, opts ...DashboardOption) (*Dashboard, error) {
	d := dashboard.New(dashboardNode{s}, newID(), appID, peer, opts...)
	// Registered first, so that nothing published from now on is missed; what arrives
	// before the two first messages are sent waits in the actor.
	if err := s.reg.Join(ctx, appID, d.ID, d); err != nil {
		return nil, fmt.Errorf("realtime: register the socket: %w", err)
	}
	// The app is marked watched before the session list is read, so that a client socket
	// the list misses is told of (watch.go); the app's actor renews the mark.
	if err := s.markWatched(ctx, appID, s.leaseTTL); err != nil {
		s.DisconnectDashboard(d)
		return nil, err
	}
	list, err := s.Sessions(ctx, appID)
	if err != nil {
		s.DisconnectDashboard(d)
		return nil, err
	}
	// The actor sends them before any delivery that waited, and the caller returns once
	// they are queued.
	err = d.Greet(ctx, [][]byte{
		wire.Encode(wire.Outgoing{Type: wire.TypeOnlineCount, Data: map[string]any{"count": len(list)}}),
		wire.Encode(wire.Outgoing{Type: wire.TypeSessions, Data: map[string]any{"sessions": list}}),
	})
	if err != nil {
		// The greeting was lost (the app's actor restarted at this moment) or ctx ended.
		s.DisconnectDashboard(d)
		return nil, fmt.Errorf("realtime: greet the socket: %w", err)
	}
	return d, nil
}

// DisconnectDashboard forgets a dashboard socket that ended.
func (s *Service) DisconnectDashboard(d *Dashboard) {
	s.reg.Leave(d.AppID, d.ID)
}

// DashboardMessage hands one message from a dashboard socket (SPEC 4.11, dashboard to
// server) to the socket's actor and returns once it is handled.
func (s *Service) DashboardMessage(ctx context.Context, d *Dashboard, raw []byte) { d.Hand(ctx, raw) }

// bug logs and counts an error that is neither a domain answer nor an unavailable part.
func (s *Service) bug(what string, err error) {
	s.stats.internalErrors.Add(1)
	s.d.Log.Error("realtime: internal error; the socket is told so", "where", what, "err", err)
}
