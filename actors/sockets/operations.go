package sockets

import (
	"context"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/realtime"
)

// The operations of SPEC 4.9, shared by the REST helpers and the dashboard socket. The
// caller has checked the owner's access to appID and the plan's WebSocket access.

// userSockets counts the user's client sockets across the cluster (0 or 1: an admission
// replaces the user's earlier socket in the same step). Like every presence read it is
// asked of the app's actor (userOnline).
func (s *Service) userSockets(ctx context.Context, appID, userID string) (int, error) {
	online, err := s.userOnline(ctx, appID, userID)
	if err != nil || !online {
		return 0, err
	}
	return 1, nil
}

// userOnline reports whether the user has a client socket anywhere in the cluster.
// It is asked of the app's actor like Online.
func (s *Service) userOnline(ctx context.Context, appID, userID string) (bool, error) {
	v, err := s.reg.Read(ctx, appID, app.LiveRead{Kind: app.ReadUser, UserID: userID})
	if err != nil {
		return false, err
	}
	return v.UserOnline, nil
}

// Broadcast sends message to every client socket of the app; it answers the online count.
func (s *Service) Broadcast(ctx context.Context, appID, message, typ string) (int, error) {
	if err := realtime.ValidText("message", message, true); err != nil {
		return 0, err
	}
	if typ == "" {
		typ = "info"
	}
	if typ != "info" && typ != "warning" && typ != "alert" {
		return 0, core.Invalid("type", "type must be info, warning or alert")
	}
	n, err := s.Online(ctx, appID)
	if err != nil {
		return 0, err
	}
	return n, s.toClientsMsg(ctx, appID, wire.Outgoing{Type: wire.TypeMessage, Data: map[string]any{"message": message, "type": typ}})
}

// ForceLogout sends force_logout to the user's sockets and closes them; it answers whether
// the user was connected.
func (s *Service) ForceLogout(ctx context.Context, appID, userID, reason string) (bool, error) {
	if err := realtime.ValidUser(userID); err != nil {
		return false, err
	}
	if err := realtime.ValidText("reason", reason, false); err != nil {
		return false, err
	}
	if reason == "" {
		reason = "logged out by the application's owner"
	}
	online, err := s.userOnline(ctx, appID, userID)
	if err != nil {
		return false, err
	}
	return online, s.toUserMsg(ctx, appID, userID, wire.Outgoing{Type: wire.TypeForceLogout, Data: map[string]any{"reason": reason}}, wire.CodeForceLogout, reason)
}

// Kick closes the user's sockets with the reason in the close frame.
func (s *Service) Kick(ctx context.Context, appID, userID, reason string) (bool, error) {
	if err := realtime.ValidUser(userID); err != nil {
		return false, err
	}
	if err := realtime.ValidText("reason", reason, false); err != nil {
		return false, err
	}
	online, err := s.userOnline(ctx, appID, userID)
	if err != nil {
		return false, err
	}
	return online, s.kick(ctx, appID, userID, reason)
}

func (s *Service) kick(ctx context.Context, appID, userID, reason string) error {
	if reason == "" {
		reason = "kicked by the application's owner"
	}
	// SPEC 6.3 lists "user kicked" among the reasons for force_logout: the program is told
	// before the close frame.
	return s.publish(ctx, delivery{App: appID, To: toUser, User: userID, Close: wire.CodeKicked, Reason: reason,
		Msg: wire.Encode(wire.Outgoing{Type: wire.TypeForceLogout, Data: map[string]any{"reason": reason}})})
}

// Ban sets the user's banned flag and closes its sockets after banned.
func (s *Service) Ban(ctx context.Context, appID, userID, reason string) error {
	if err := realtime.ValidUser(userID); err != nil {
		return err
	}
	if err := realtime.ValidText("reason", reason, false); err != nil {
		return err
	}
	return s.ban(ctx, appID, userID, reason)
}

// ban sets the banned flag; the user.ban event that follows sends banned and closes the
// user's sockets (HandleEvent), as for a ban from the users API.
func (s *Service) ban(ctx context.Context, appID, userID, reason string) error {
	if s.d.Ban == nil {
		return core.E(core.CodeInternal, "banning is not wired")
	}
	return s.d.Ban(ctx, appID, userID, reason)
}

func (s *Service) bannedMsg(ctx context.Context, appID, userID, reason string) error {
	if reason == "" {
		reason = "banned by the application's owner"
	}
	return s.toUserMsg(ctx, appID, userID, wire.Outgoing{Type: wire.TypeBanned, Data: map[string]any{"reason": reason}}, wire.CodeBanned, reason)
}

// Chat sends a chat message to one user; it answers whether the user was connected.
func (s *Service) Chat(ctx context.Context, appID, userID, message string) (bool, error) {
	if err := realtime.ValidUser(userID); err != nil {
		return false, err
	}
	if err := realtime.ValidText("message", message, true); err != nil {
		return false, err
	}
	online, err := s.userOnline(ctx, appID, userID)
	if err != nil {
		return false, err
	}
	return online, s.toUserMsg(ctx, appID, userID, wire.Outgoing{Type: wire.TypeChat, Data: map[string]any{"message": message}}, 0, "")
}

// Command sends a named command to one user, or to every client when userID is empty; it
// answers how many sockets were online for it.
func (s *Service) Command(ctx context.Context, appID, userID, command string, payload map[string]any) (int, error) {
	if err := realtime.ValidText("command", command, true); err != nil {
		return 0, err
	}
	if len(command) > 100 {
		return 0, core.Invalid("command", "command must be at most 100 characters")
	}
	if err := realtime.ValidPayload("payload", payload, false); err != nil {
		return 0, err
	}
	if payload == nil {
		payload = map[string]any{}
	}
	return s.send(ctx, appID, userID, wire.Outgoing{Type: wire.TypeCommand, Data: map[string]any{"command": command, "payload": payload}})
}

// Push sends a custom JSON payload to one user, or to every client when userID is empty.
func (s *Service) Push(ctx context.Context, appID, userID string, payload map[string]any) (int, error) {
	if err := realtime.ValidPayload("payload", payload, true); err != nil {
		return 0, err
	}
	return s.send(ctx, appID, userID, wire.Outgoing{Type: wire.TypeCustom, Data: payload})
}

func (s *Service) send(ctx context.Context, appID, userID string, m wire.Outgoing) (int, error) {
	if userID == "" {
		n, err := s.Online(ctx, appID)
		if err != nil {
			return 0, err
		}
		return n, s.toClientsMsg(ctx, appID, m)
	}
	if len(userID) > 100 {
		return 0, core.Invalid("userId", "userId is not a user id")
	}
	n, err := s.userSockets(ctx, appID, userID)
	if err != nil {
		return 0, err
	}
	return n, s.toUserMsg(ctx, appID, userID, m, 0, "")
}
