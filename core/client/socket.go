package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/storage"
)

// SocketUser is who a client socket belongs to (SPEC 4.11): the session's user, seen from
// the address the socket came from.
type SocketUser struct {
	Token     string
	AppID     string
	AccountID string
	UserID    string
	Username  string
	IP        string
}

// CheckSocket validates a client socket's session, at the upgrade and again at every
// revalidation: the session is live and logged in, the socket comes from the session's
// address (IP pinning), the app is enabled and not paused, its owner's plan has WebSocket
// access, the app's rules admit the caller, and the user exists and is enabled, not banned
// and not expired. It neither counts toward the quota nor restarts the session's idle
// timeout: a socket does not keep a session alive, the heartbeat does, and a session that
// expires ends its sockets.
func (s *Service) CheckSocket(ctx context.Context, c Caller, token string) (SocketUser, error) {
	sess, err := s.sessions.get(ctx, token)
	if err != nil {
		return SocketUser{}, err
	}
	snap, err := s.d.Apps.Snapshot(ctx, sess.AppID)
	if err != nil {
		return SocketUser{}, err
	}
	if err := appUsable(snap); err != nil {
		return SocketUser{}, err
	}
	if snap.App.Paused {
		return SocketUser{}, core.E(core.CodeAppPaused, "this application is paused by its owner; try again later")
	}
	if !snap.Plan.Limits.WebSocketAccess {
		return SocketUser{}, core.E(core.CodePlanFeature, "WebSocket access needs the %s plan or higher", "business")
	}
	if !sess.LoggedIn() {
		return SocketUser{}, core.E(core.CodeNotLoggedIn, "a socket needs a logged-in session; call login, register or license first")
	}
	if sess.IP != "" && sess.IP != c.IP {
		return SocketUser{}, core.E(core.CodeUnauthorized, "this session was opened from another address")
	}
	if err := s.checkRules(snap, c, sess.Country, sess.HWID, sess.Username); err != nil {
		return SocketUser{}, err
	}
	u, err := s.d.Store.GetUser(ctx, sess.AppID, sess.UserID)
	if errors.Is(err, storage.ErrNotFound) {
		return SocketUser{}, core.E(core.CodeUnauthorized, "the user of this session no longer exists")
	}
	if err != nil {
		return SocketUser{}, fmt.Errorf("read socket user: %w", err)
	}
	if err := checkUser(u, s.now()); err != nil {
		return SocketUser{}, err
	}
	return SocketUser{Token: sess.Token, AppID: sess.AppID, AccountID: sess.AccountID, UserID: u.ID, Username: u.Username, IP: c.IP}, nil
}
