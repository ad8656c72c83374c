package client

import (
	"context"
	"fmt"
	"time"

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
	if err := s.socketSession(snap, sess, c); err != nil {
		return SocketUser{}, err
	}
	// The user's standing alone (banned, enabled, expiry), not the whole record: read at
	// every upgrade, it is the costliest read of an admission, and concurrent ones of
	// an app are gathered (standings.go).
	u, ok, err := s.standings.read(ctx, s.d.Store, sess.AppID, sess.UserID)
	if err != nil {
		return SocketUser{}, fmt.Errorf("read socket user: %w", err)
	}
	if !ok {
		return SocketUser{}, errUserGone
	}
	if err := checkStanding(u, s.now()); err != nil {
		return SocketUser{}, err
	}
	return SocketUser{Token: sess.Token, AppID: sess.AppID, AccountID: sess.AccountID, UserID: u.ID, Username: u.Username, IP: c.IP}, nil
}

// checkStanding is checkUser on a user's standing.
func checkStanding(u storage.UserStanding, now time.Time) error {
	return checkUser(storage.AppUser{Enabled: u.Enabled, Banned: u.Banned, BanReason: u.BanReason, ExpiresAt: u.ExpiresAt}, now)
}

var errUserGone = core.E(core.CodeUnauthorized, "the user of this session no longer exists")

// socketSession is what CheckSocket checks of the app and the session.
func (s *Service) socketSession(snap Snapshot, sess Session, c Caller) error {
	if err := appUsable(snap); err != nil {
		return err
	}
	if snap.App.Paused {
		return core.E(core.CodeAppPaused, "this application is paused by its owner; try again later")
	}
	if !snap.Plan.Limits.WebSocketAccess {
		return core.E(core.CodePlanFeature, "WebSocket access needs the %s plan or higher", "business")
	}
	if !sess.LoggedIn() {
		return core.E(core.CodeNotLoggedIn, "a socket needs a logged-in session; call login, register or license first")
	}
	if sess.IP != "" && sess.IP != c.IP {
		return core.E(core.CodeUnauthorized, "this session was opened from another address")
	}
	return s.checkRules(snap, c, sess.Country, sess.HWID, sess.Username)
}

// SocketCheck is one open socket to check again: where it came from and its session.
type SocketCheck struct {
	Caller Caller
	Token  string
}

// batchValues is the cluster engine's multi-read, when it has one.
type batchValues interface {
	GetValues(ctx context.Context, keys []string) ([][]byte, error)
}

// CheckSockets checks again, at once, the open sockets of one app that a node holds: what
// CheckSocket checks, in one cluster-engine call for the sessions, one snapshot and one
// storage query for the users, not a round per socket. It answers one error per socket
// (nil: it passes); an error that is not a domain error means the check could not be made.
func (s *Service) CheckSockets(ctx context.Context, appID string, socks []SocketCheck) []error {
	errs := make([]error, len(socks))
	fail := func(err error) []error {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	if len(socks) == 0 {
		return errs
	}
	sessions, err := s.socketSessions(ctx, socks, errs)
	if err != nil {
		return fail(err)
	}
	snap, err := s.d.Apps.Snapshot(ctx, appID)
	if err != nil {
		return fail(err)
	}
	ids := make([]string, 0, len(socks))
	for i, sess := range sessions {
		if errs[i] != nil {
			continue
		}
		if sess.AppID != appID {
			errs[i] = errSessionExpired
			continue
		}
		if errs[i] = s.socketSession(snap, sess, socks[i].Caller); errs[i] == nil {
			ids = append(ids, sess.UserID)
		}
	}
	if len(ids) == 0 {
		return errs
	}
	users, err := s.d.Store.GetUserStandings(ctx, appID, ids)
	if err != nil {
		err = fmt.Errorf("read socket users: %w", err)
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return errs
	}
	byID := make(map[string]storage.UserStanding, len(users))
	for _, u := range users {
		byID[u.ID] = u
	}
	now := s.now()
	for i, sess := range sessions {
		if errs[i] != nil {
			continue
		}
		u, ok := byID[sess.UserID]
		if !ok {
			errs[i] = errUserGone
			continue
		}
		errs[i] = checkStanding(u, now)
	}
	return errs
}

// socketSessions reads the sessions of socks in one engine call, marking in errs those
// that are gone. A session the engine does not know is looked for in its durable copy
// (sessions.get), one at a time: that happens only after an embedded node restarted.
func (s *Service) socketSessions(ctx context.Context, socks []SocketCheck, errs []error) ([]Session, error) {
	out := make([]Session, len(socks))
	batch, ok := s.d.Sessions.(batchValues)
	if !ok {
		for i, sk := range socks {
			out[i], errs[i] = s.sessions.get(ctx, sk.Token)
		}
		return out, nil
	}
	keys := make([]string, 0, len(socks))
	for i, sk := range socks {
		if sk.Token == "" || len(sk.Token) > 128 {
			errs[i] = errSessionExpired
			continue
		}
		keys = append(keys, sessionKey(sk.Token))
	}
	vals, err := batch.GetValues(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	k := 0
	for i, sk := range socks {
		if errs[i] != nil {
			continue
		}
		raw := vals[k]
		k++
		if raw == nil {
			out[i], errs[i] = s.sessions.get(ctx, sk.Token)
			continue
		}
		if err := decodeSession(raw, &out[i]); err != nil {
			errs[i] = fmt.Errorf("decode session: %w", err)
			continue
		}
		out[i].Token = sk.Token
	}
	return out, nil
}
