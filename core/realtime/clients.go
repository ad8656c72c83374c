package realtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/core/events"
)

// Client is a client socket held by this node.
type Client struct {
	ID          string
	User        client.SocketUser
	Caller      client.Caller
	ConnectedAt time.Time

	peer Peer
	// session is sessionRef of the socket's session token.
	session string
	// rate is used by the socket's reader only.
	rate window

	mu       sync.Mutex
	status   string
	metadata map[string]any
}

func (c *Client) info() SessionInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return SessionInfo{ID: c.ID, UserID: c.User.UserID, Username: c.User.Username, IP: c.User.IP,
		ConnectedAt: c.ConnectedAt, Status: c.status, Metadata: maps.Clone(c.metadata)}
}

// Refusal is why a socket was not admitted or was ended: the edge sends it as the
// socket's force_logout reason (SDKs cannot read the body of a refused upgrade).
type Refusal struct {
	Code   core.Code
	Reason string
}

func (r *Refusal) Error() string { return string(r.Code) + ": " + r.Reason }

func refusal(err error) *Refusal {
	var de *core.Error
	if errors.As(err, &de) {
		return &Refusal{Code: de.Code, Reason: de.Message}
	}
	return &Refusal{Code: core.CodeUnavailable, Reason: "the server cannot check this session now; try again"}
}

// ConnectClient admits a client socket (SPEC 4.11): the session checks of CheckSocket,
// then the app's limit of MaxClientsPerApp sockets. A user has one socket: an earlier
// socket of the same user, on any node, is closed with force_logout (the newer one wins,
// so a program that lost its connection can reconnect at once). Dashboards see
// session_connect.
func (s *Service) ConnectClient(ctx context.Context, caller client.Caller, token string, peer Peer) (*Client, error) {
	u, err := s.d.Sessions.CheckSocket(ctx, caller, token)
	if err != nil {
		return nil, refusal(err)
	}
	n, err := s.d.Engine.CountMembers(ctx, appSocketsKey(u.AppID))
	if err != nil {
		return nil, refusal(unavailable(err))
	}
	earlier, err := s.d.Engine.Members(ctx, userSocketsKey(u.AppID, u.UserID))
	if err != nil {
		return nil, refusal(unavailable(err))
	}
	if n-len(earlier) >= MaxClientsPerApp {
		return nil, &Refusal{Code: core.CodePlanLimit, Reason: fmt.Sprintf("this application already has %d connected clients", MaxClientsPerApp)}
	}
	c := &Client{ID: newID(), User: u, Caller: caller, ConnectedAt: s.d.Now().UTC().Truncate(time.Millisecond), peer: peer, session: sessionRef(u.Token),
		rate: window{limit: ClientMessages, per: ClientWindow}, status: "online"}
	for _, id := range earlier {
		s.replace(ctx, u, id)
	}
	if err := s.lease(ctx, c); err != nil {
		s.release(ctx, c)
		return nil, refusal(unavailable(err))
	}
	// The count above may be stale by now: sockets connecting at the same moment on other
	// nodes saw it too. Counting again with this socket in place holds the limit: of
	// sockets racing for the last places some may be refused, none admitted beyond it.
	if n, err := s.d.Engine.CountMembers(ctx, appSocketsKey(u.AppID)); err != nil || n > MaxClientsPerApp {
		s.release(ctx, c)
		if err != nil {
			return nil, refusal(unavailable(err))
		}
		return nil, &Refusal{Code: core.CodePlanLimit, Reason: fmt.Sprintf("this application already has %d connected clients", MaxClientsPerApp)}
	}
	// Two sockets of one user connecting at the same moment (on two nodes) may both have
	// found no earlier socket. Each looks again with itself in place: the greater id stays
	// and replaces the others, the smaller gives way. Whichever looks last sees both, so
	// one socket is left however the two interleave.
	mine, err := s.d.Engine.Members(ctx, userSocketsKey(u.AppID, u.UserID))
	if err != nil {
		s.release(ctx, c)
		return nil, refusal(unavailable(err))
	}
	for _, id := range mine {
		if id > c.ID {
			s.release(ctx, c)
			return nil, &Refusal{Code: core.CodeConflict, Reason: "another connection of this account opened at the same moment"}
		}
	}
	for _, id := range mine {
		if id != c.ID {
			s.replace(ctx, u, id)
		}
	}
	s.mu.Lock()
	if s.clients[u.AppID] == nil {
		s.clients[u.AppID] = map[string]*Client{}
	}
	s.clients[u.AppID][c.ID] = c
	s.mu.Unlock()
	_ = s.toDashboardsMsg(ctx, u.AppID, Outgoing{Type: TypeSessionConnect,
		Data: map[string]any{"userId": u.UserID, "username": u.Username, "ip": u.IP, "id": c.ID}})
	s.logEvent(events.Event{Name: "ws.connect", AppID: u.AppID, Username: u.Username, IP: u.IP, Level: events.LevelDebug,
		Message: "client socket connected", Data: map[string]any{"userId": u.UserID}})
	return c, nil
}

// replace ends socket id of user u, on whatever node holds it, for a newer socket of the
// user, and removes its presence at once.
func (s *Service) replace(ctx context.Context, u client.SocketUser, id string) {
	_ = s.publish(ctx, delivery{App: u.AppID, To: toConn, Conn: id,
		Msg:   encode(Outgoing{Type: TypeForceLogout, Data: map[string]any{"reason": "connected from another place"}}),
		Close: CloseReplaced, Reason: "replaced by a newer connection"})
	_, _ = s.d.Engine.TakeMember(ctx, userSocketsKey(u.AppID, u.UserID), id)
	_, _ = s.d.Engine.TakeMember(ctx, appSocketsKey(u.AppID), id)
	_, _ = s.d.Engine.DeleteValue(ctx, socketKey(id))
}

// DisconnectClient forgets a socket that ended, for whatever reason.
func (s *Service) DisconnectClient(c *Client) {
	s.mu.Lock()
	_, held := s.clients[c.User.AppID][c.ID]
	delete(s.clients[c.User.AppID], c.ID)
	if len(s.clients[c.User.AppID]) == 0 {
		delete(s.clients, c.User.AppID)
	}
	s.mu.Unlock()
	if !held {
		return // released already (by Close)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.left(ctx, c)
}

// left releases a socket's presence and tells the dashboards.
func (s *Service) left(ctx context.Context, c *Client) {
	s.release(ctx, c)
	_ = s.toDashboardsMsg(ctx, c.User.AppID, Outgoing{Type: TypeSessionDisconnect,
		Data: map[string]any{"userId": c.User.UserID, "username": c.User.Username, "id": c.ID}})
}

// Maintain is the socket owner's timer work: it renews the presence lease every
// third of the lease ttl and revalidates the session every RevalidateEvery, until ctx ends. A socket
// that fails revalidation is sent force_logout and closed.
func (s *Service) Maintain(ctx context.Context, c *Client) {
	renew := time.NewTicker(s.leaseTTL / 3)
	defer renew.Stop()
	check := time.NewTicker(RevalidateEvery)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-renew.C:
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if err := s.lease(rctx, c); err != nil {
				s.d.Log.Warn("realtime: cannot renew a socket's presence", "socket", c.ID, "err", err)
			}
			cancel()
		case <-check.C:
			s.recheck(c)
		}
	}
}

// RecheckApp revalidates every client socket of the app held by this node, each on its
// own goroutine (the caller is a bus or pipeline goroutine that must not wait). Every node
// calls it when it learns that the app changed.
func (s *Service) RecheckApp(appID string) {
	for _, c := range s.localClients(appID) {
		go s.recheck(c)
	}
}

// recheck revalidates one socket now.
func (s *Service) recheck(c *Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := s.d.Sessions.CheckSocket(ctx, c.Caller, c.User.Token)
	if err == nil {
		return
	}
	r := refusal(err)
	if r.Code == core.CodeUnavailable {
		return // not the session's fault; the next check decides
	}
	msg := Outgoing{Type: TypeForceLogout, Data: map[string]any{"reason": r.Reason}}
	code := CloseForceLogout
	if r.Code == core.CodeBanned {
		msg, code = Outgoing{Type: TypeBanned, Data: map[string]any{"reason": r.Reason}}, CloseBanned
	}
	c.peer.Send(encode(msg))
	c.peer.Close(code, r.Reason)
}

// ClientMessage handles one message from a client socket (SPEC 4.11, client to server).
// The socket's reader calls it for each message in order.
func (s *Service) ClientMessage(ctx context.Context, c *Client, raw []byte) {
	ctx, cancel := context.WithTimeout(ctx, messageDeadline)
	defer cancel()
	if !c.rate.allow(s.d.Now()) {
		c.peer.Send(errorMsg(fmt.Sprintf("rate limited: at most %d messages per %s", ClientMessages, ClientWindow)))
		return
	}
	in, ok := decode(raw)
	if !ok {
		c.peer.Send(errorMsg("a message is a JSON object with a string type"))
		return
	}
	appID := c.User.AppID
	who := map[string]any{"userId": c.User.UserID, "username": c.User.Username}
	with := func(k string, v any) map[string]any {
		m := maps.Clone(who)
		m[k] = v
		return m
	}
	switch in.Type {
	case "ping":
		c.peer.Send(encode(Outgoing{Type: TypePong}))
	case "set_status":
		st := in.str("status")
		if st == "" || len(st) > maxStatus {
			c.peer.Send(errorMsg(fmt.Sprintf("status must be a string of 1 to %d characters", maxStatus)))
			return
		}
		c.mu.Lock()
		c.status = st
		c.mu.Unlock()
		_ = s.lease(ctx, c)
		_ = s.toDashboardsMsg(ctx, appID, Outgoing{Type: TypeStatus, Data: with("status", st)})
	case "chat":
		msg := in.str("message")
		if msg == "" || len(msg) > maxText {
			c.peer.Send(errorMsg(fmt.Sprintf("message must be a string of 1 to %d characters", maxText)))
			return
		}
		_ = s.toDashboardsMsg(ctx, appID, Outgoing{Type: TypeChat, Data: with("message", msg)})
	case "typing":
		v, _ := in.member("typing")
		typing, isBool := v.(bool)
		if !isBool {
			c.peer.Send(errorMsg("typing must be a boolean"))
			return
		}
		_ = s.toDashboardsMsg(ctx, appID, Outgoing{Type: TypeTyping, Data: with("typing", typing)})
	case "set_metadata":
		v, _ := in.member("metadata")
		meta, isObj := v.(map[string]any)
		if !isObj {
			c.peer.Send(errorMsg("metadata must be an object"))
			return
		}
		if err := validMetadata(meta); err != "" {
			c.peer.Send(errorMsg(err))
			return
		}
		c.mu.Lock()
		c.metadata = meta
		c.mu.Unlock()
		_ = s.lease(ctx, c)
	default:
		s.custom(ctx, c, in)
	}
}

func validMetadata(meta map[string]any) string {
	if len(meta) > MaxMetadataPairs {
		return fmt.Sprintf("metadata holds at most %d pairs", MaxMetadataPairs)
	}
	for k, v := range meta {
		if k == "" || len(k) > maxMetaKey {
			return fmt.Sprintf("metadata keys are 1 to %d characters", maxMetaKey)
		}
		switch x := v.(type) {
		case string:
			if len(x) > maxMetaValue {
				return fmt.Sprintf("metadata values are at most %d characters", maxMetaValue)
			}
		case float64, bool, nil:
		default:
			return "metadata values are strings, numbers, booleans or null"
		}
	}
	return ""
}

// custom runs the app's hooks over a message of any other type and forwards it to the
// dashboards as custom_event.
func (s *Service) custom(ctx context.Context, c *Client, in Incoming) {
	appID := c.User.AppID
	data := in.Fields["data"]
	if data == nil {
		if m, ok := in.Fields["message"]; ok {
			data = map[string]any{"message": m}
		}
	}
	_ = s.toDashboardsMsg(ctx, appID, Outgoing{Type: TypeCustomEvent,
		Data: map[string]any{"event": in.Type, "userId": c.User.UserID, "username": c.User.Username, "data": data}})
	if s.d.Hooks == nil {
		return
	}
	steps, err := s.d.Hooks.Plan(ctx, appID, HookInput{Type: in.Type, Fields: in.Fields,
		UserID: c.User.UserID, Username: c.User.Username, IP: c.User.IP})
	if err != nil {
		s.d.Log.Warn("realtime: cannot run hooks", "app", appID, "err", err)
		return
	}
	for _, st := range steps {
		s.carryOut(ctx, c, st)
	}
}
