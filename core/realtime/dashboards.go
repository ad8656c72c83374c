package realtime

import (
	"context"
	"fmt"
	"sync"
)

// Dashboard is an owner's socket on an app, held by this node. The edge admits it (JWT,
// ownership, plan) before ConnectDashboard.
type Dashboard struct {
	ID    string
	AppID string
	// Audit, set by the edge before the socket's first message, is told of each action
	// that changed something (kick, ban, command, push_json, chat) once it succeeded;
	// refused actions are not told. details holds the action's reason or command name.
	Audit func(action, userID string, details map[string]any)

	peer Peer
	rate window

	mu      sync.Mutex
	filters map[string]bool // nil: every type
	// holding is true while the socket's first messages are being prepared: deliveries
	// wait in pending so that online_count and sessions come first and none is lost.
	holding bool
	pending [][]byte
}

// deliver sends a delivery of type typ if the dashboard's filters want it.
func (d *Dashboard) deliver(msg []byte, typ string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.filters != nil && !d.filters[typ] {
		return
	}
	if d.holding {
		d.pending = append(d.pending, msg)
		return
	}
	d.peer.Send(msg)
}

// ConnectDashboard registers an admitted dashboard socket and sends it online_count and
// sessions at once (SPEC 4.11).
func (s *Service) ConnectDashboard(ctx context.Context, appID string, peer Peer) (*Dashboard, error) {
	d := &Dashboard{ID: newID(), AppID: appID, peer: peer, rate: window{limit: DashboardMessages, per: DashboardWindow}, holding: true}
	if err := s.hold(ctx, appID); err != nil {
		return nil, err
	}
	// Registered first, so that nothing published from now on is missed; what arrives
	// before the two first messages are sent waits in pending.
	if err := s.reg.Join(ctx, appID, d.ID, d); err != nil {
		s.letGo(appID)
		return nil, fmt.Errorf("realtime: register the socket: %w", err)
	}
	s.heldDashboards.Add(1)
	list, err := s.Sessions(ctx, appID)
	if err != nil {
		s.DisconnectDashboard(d)
		return nil, err
	}
	d.mu.Lock()
	peer.Send(encode(Outgoing{Type: TypeOnlineCount, Data: map[string]any{"count": len(list)}}))
	peer.Send(encode(Outgoing{Type: TypeSessions, Data: map[string]any{"sessions": list}}))
	for _, msg := range d.pending {
		peer.Send(msg)
	}
	d.holding, d.pending = false, nil
	d.mu.Unlock()
	return d, nil
}

// DisconnectDashboard forgets a dashboard socket that ended.
func (s *Service) DisconnectDashboard(d *Dashboard) {
	if s.reg.Leave(d.AppID, d.ID) {
		s.heldDashboards.Add(-1)
		s.letGo(d.AppID)
	}
}

// DashboardMessage handles one message from a dashboard socket (SPEC 4.11, dashboard to
// server). A refused message is answered with error; nothing else changes.
func (s *Service) DashboardMessage(ctx context.Context, d *Dashboard, raw []byte) {
	ctx, cancel := context.WithTimeout(ctx, messageDeadline)
	defer cancel()
	if now := s.d.Now(); !d.rate.allow(now) {
		if d.rate.warn(now) {
			d.peer.Send(ErrorMessage(fmt.Sprintf("rate limited: at most %d messages per %s", DashboardMessages, DashboardWindow)))
		}
		return
	}
	in, ok := decode(raw)
	if !ok {
		d.peer.Send(ErrorMessage("a message is a JSON object with a string type"))
		return
	}
	// A userId that is not a string must not read as "none": push_json would go to everyone.
	if v, present := in.member("userId"); present && v != nil {
		if _, isStr := v.(string); !isStr {
			d.peer.Send(ErrorMessage("userId must be a string"))
			return
		}
	}
	userID := in.str("userId")
	var err error
	switch in.Type {
	case "ping":
		d.peer.Send(encode(Outgoing{Type: TypePong}))
		return
	case "get_online":
		var n int
		if n, err = s.Online(ctx, d.AppID); err == nil {
			d.peer.Send(encode(Outgoing{Type: TypeOnlineCount, Data: map[string]any{"count": n}}))
		}
	case "get_sessions":
		var list []SessionInfo
		if list, err = s.Sessions(ctx, d.AppID); err == nil {
			d.peer.Send(encode(Outgoing{Type: TypeSessions, Data: map[string]any{"sessions": list}}))
		}
	case "chat":
		_, err = s.Chat(ctx, d.AppID, userID, in.str("message"))
	case "push_json":
		p, _ := in.member("payload")
		payload, _ := p.(map[string]any)
		_, err = s.Push(ctx, d.AppID, userID, payload)
	case "typing":
		v, _ := in.member("typing")
		typing, isBool := v.(bool)
		if userID == "" || !isBool {
			d.peer.Send(ErrorMessage("typing needs userId and a boolean typing"))
			return
		}
		err = s.toUserMsg(ctx, d.AppID, userID, Outgoing{Type: TypeTyping, Data: map[string]any{"typing": typing}}, 0, "")
	case "kick":
		_, err = s.Kick(ctx, d.AppID, userID, in.str("reason"))
	case "ban":
		err = s.Ban(ctx, d.AppID, userID, in.str("reason"))
	case "command":
		p, _ := in.member("payload")
		payload, _ := p.(map[string]any)
		_, err = s.Command(ctx, d.AppID, userID, in.str("command"), payload)
	case "set_filters":
		v, _ := in.member("events")
		list, isList := v.([]any)
		if !isList || len(list) > 100 {
			d.peer.Send(ErrorMessage("events must be an array of at most 100 event types"))
			return
		}
		filters := make(map[string]bool, len(list))
		for _, e := range list {
			name, isStr := e.(string)
			if !isStr {
				d.peer.Send(ErrorMessage("events must be an array of event types"))
				return
			}
			filters[name] = true
		}
		// pong and error always come through: they answer the dashboard itself.
		filters[TypePong], filters[TypeError] = true, true
		d.mu.Lock()
		d.filters = filters
		d.mu.Unlock()
		return
	default:
		d.peer.Send(ErrorMessage(fmt.Sprintf("unknown message type %q", in.Type)))
		return
	}
	if err != nil {
		_, reason := explain(err)
		d.peer.Send(ErrorMessage(reason))
		return
	}
	switch in.Type {
	case "kick", "ban", "command", "push_json", "chat":
		if d.Audit != nil {
			d.Audit(in.Type, userID, map[string]any{"reason": in.str("reason"), "command": in.str("command")})
		}
	}
}
