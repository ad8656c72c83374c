package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/storage"
)

// Session bounds.
const (
	// NonceTTL is how long an issued nonce stays usable.
	NonceTTL = 2 * time.Minute
	// MaxOpenNonces bounds the unused nonces of one session; asking for more drops the
	// oldest. SDKs keep one nonce per client object, but async clients (C#, Node) may
	// overlap calls, so a few may be open at once.
	MaxOpenNonces = 8
	// DefaultSessionTTL is the idle timeout of a client session when the configuration
	// does not set one: any successful call, and heartbeat explicitly, starts it again.
	DefaultSessionTTL = 30 * time.Minute
)

// Session is a client session (SPEC 2, Client session). It lives in the cluster engine
// under its token, with the idle timeout as its ttl.
type Session struct {
	Token     string    `json:"-"`
	AppID     string    `json:"app"`
	AccountID string    `json:"acc"`
	HWID      string    `json:"hwid,omitempty"`
	IP        string    `json:"ip,omitempty"`
	Country   string    `json:"cc,omitempty"`
	Version   string    `json:"ver,omitempty"`
	CreatedAt time.Time `json:"at"`
	// UserID and Username are set once the session is authenticated.
	UserID   string    `json:"uid,omitempty"`
	Username string    `json:"user,omitempty"`
	LoginAt  time.Time `json:"login,omitzero"`
	// FileKey lets file downloads derive their keys from the application secret without
	// the secret being kept (filecrypt.SecretKey in text form).
	FileKey string `json:"fk,omitempty"`
	// Seat is the seats set of the license whose floating seat the session holds, and
	// SeatLimit that license's maxSeats when it was taken (seats.go); "" holds none.
	Seat      string `json:"seat,omitempty"`
	SeatLimit int    `json:"seatn,omitempty"`
}

// LoggedIn reports whether the session is authenticated.
func (s Session) LoggedIn() bool { return s.UserID != "" }

// SessionEngine is what sessions need from the cluster engine.
type SessionEngine interface {
	cluster.Values
	cluster.ExpiringSets
	cluster.Leases // floating seats (seats.go)
}

// sessions keeps client sessions in the cluster engine.
type sessions struct {
	e    SessionEngine
	arch *archive // nil: no durable copies
	now  func() time.Time
	// durable waits until what is pending (session copies, last logins) is written.
	durable func(ctx context.Context) error
}

func sessionKey(token string) string              { return "cs:" + token }
func appSessionsKey(appID string) string          { return "csa:" + appID }
func userSessionsKey(appID, userID string) string { return "csu:" + appID + ":" + userID }
func noncesKey(token string) string               { return "cn:" + token }

// errSessionExpired answers a token that is unknown or has expired: both look the same.
var errSessionExpired = core.E(core.CodeUnauthorized, "session expired or invalid; call init again")

// newToken makes a session token: 32 random bytes as URL-safe base64 ([A-Za-z0-9_-]),
// which every SDK passes unencoded in the WebSocket URL without harm.
func newToken() string { return secrets.Random(32) }

// put stores the session with ttl, lists it under its app (and its user), and returns
// once its durable copy (and any last login pending) is written: a session that init or a
// login acknowledged survives a crash.
func (m sessions) put(ctx context.Context, s Session, ttl time.Duration) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode session: %w", err)
	}
	if err := m.e.SetValue(ctx, sessionKey(s.Token), b, ttl); err != nil {
		return fmt.Errorf("store session: %w", err)
	}
	m.arch.mark(s, m.now().Add(ttl))
	if err := m.list(ctx, s, ttl); err != nil {
		return err
	}
	if m.durable != nil {
		if err := m.durable(ctx); err != nil {
			return fmt.Errorf("write session: %w", err)
		}
	}
	return nil
}

func (m sessions) list(ctx context.Context, s Session, ttl time.Duration) error {
	if err := m.e.AddMember(ctx, appSessionsKey(s.AppID), s.Token, ttl, 0); err != nil {
		return fmt.Errorf("list session: %w", err)
	}
	if s.UserID != "" {
		if err := m.e.AddMember(ctx, userSessionsKey(s.AppID, s.UserID), s.Token, ttl, 0); err != nil {
			return fmt.Errorf("list session: %w", err)
		}
	}
	return nil
}

// get reads a live session; errSessionExpired when there is none.
func (m sessions) get(ctx context.Context, token string) (Session, error) {
	if token == "" {
		return Session{}, core.E(core.CodeUnauthorized, "sessionToken is required; call init first")
	}
	if len(token) > 128 {
		return Session{}, errSessionExpired
	}
	b, _, ok, err := m.e.GetValue(ctx, sessionKey(token))
	if err != nil {
		return Session{}, fmt.Errorf("read session: %w", err)
	}
	if !ok {
		return m.restore(ctx, token)
	}
	var s Session
	if err := decodeSession(b, &s); err != nil {
		return Session{}, fmt.Errorf("decode session: %w", err)
	}
	s.Token = token
	return s, nil
}

// touch starts the idle timeout again; errSessionExpired when the session ended meanwhile.
func (m sessions) touch(ctx context.Context, s Session, ttl time.Duration) error {
	ok, err := m.e.TouchValue(ctx, sessionKey(s.Token), ttl)
	if err != nil {
		return fmt.Errorf("refresh session: %w", err)
	}
	if !ok {
		return errSessionExpired
	}
	m.arch.extend(s, m.now().Add(ttl))
	return m.list(ctx, s, ttl)
}

// restore brings back a session the cluster engine does not know from its durable copy
// (an embedded node restarted); errSessionExpired when there is none, or it expired.
func (m sessions) restore(ctx context.Context, token string) (Session, error) {
	s, expiresAt, ok, err := m.arch.restore(ctx, token)
	if err != nil {
		return Session{}, fmt.Errorf("read archived session: %w", err)
	}
	if !ok {
		return Session{}, errSessionExpired
	}
	b, err := json.Marshal(s)
	if err != nil {
		return Session{}, fmt.Errorf("encode session: %w", err)
	}
	ttl := expiresAt.Sub(m.now())
	if ttl < time.Millisecond {
		return Session{}, errSessionExpired
	}
	if err := m.e.SetValue(ctx, sessionKey(token), b, ttl); err != nil {
		return Session{}, fmt.Errorf("restore session: %w", err)
	}
	if err := m.list(ctx, s, ttl); err != nil {
		return Session{}, err
	}
	// An end or a kill may have deleted the copy since it was read here (after deleting
	// the live session, which is why this token was restored): the session must not live
	// on from a copy that no longer exists. Checked after the session is live again, so
	// that either this check sees the delete, or the delete came after it and the kill's
	// second pass (endUser) ends what this made live.
	if _, _, still, err := m.arch.restore(ctx, token); err != nil || !still {
		if _, lerr := m.endLive(storage.WithoutEventOutbox(ctx), s); lerr != nil {
			return Session{}, errors.Join(err, lerr)
		}
		if err != nil {
			return Session{}, fmt.Errorf("read archived session: %w", err)
		}
		return Session{}, errSessionExpired
	}
	return s, nil
}

// end removes the session; ok is false when it was already gone. The live session goes
// first (endLive), its durable copy last, in a write that carries ctx's event outbox
// (End's session.end: one SQLite transaction with the copy's delete). So the copy's
// delete is the end's point of no return: a crash before it leaves the copy, from which
// the token comes back (restore), and no event, as for an end that was never answered;
// a crash after it leaves the copy gone and the event stored, and what is still live
// of the session in a cluster engine that outlived the node (Redis) ended by the end's
// retry or its idle timeout.
func (m sessions) end(ctx context.Context, s Session) (bool, error) {
	ok, err := m.endLive(storage.WithoutEventOutbox(ctx), s)
	if err != nil {
		return ok, err
	}
	if err := m.arch.forget(ctx, s.Token); err != nil {
		return ok, fmt.Errorf("end archived session: %w", err)
	}
	return ok, nil
}

// endLive removes the session from the cluster engine: its value, its listings and its
// floating seat; ok is false when it was already gone. Each step may run again.
func (m sessions) endLive(ctx context.Context, s Session) (bool, error) {
	ok, err := m.e.DeleteValue(ctx, sessionKey(s.Token))
	if err != nil {
		return false, fmt.Errorf("end session: %w", err)
	}
	_, err1 := m.e.TakeMember(ctx, appSessionsKey(s.AppID), s.Token)
	var err2 error
	if s.UserID != "" {
		_, err2 = m.e.TakeMember(ctx, userSessionsKey(s.AppID, s.UserID), s.Token)
	}
	if err := errors.Join(err1, err2, m.releaseSeat(ctx, s.Token)); err != nil {
		return ok, fmt.Errorf("unlist session: %w", err)
	}
	return ok, nil
}

// endUser ends every session of a user and answers how many were live: the live ones
// first, then every durable copy of the user's sessions (including ones this node does
// not have live) in one write that carries ctx's event outbox, whose events counted
// makes from the count before that write (KillUserSessions' user.session_kill). As in
// end, that write is the point of no return.
func (m sessions) endUser(ctx context.Context, appID, userID string, counted func(n int)) (int, error) {
	live := storage.WithoutEventOutbox(ctx)
	tokens, err := m.e.Members(live, userSessionsKey(appID, userID))
	if err != nil {
		return 0, fmt.Errorf("list user sessions: %w", err)
	}
	n := 0
	for _, t := range tokens {
		ok, err := m.endLive(live, Session{Token: t, AppID: appID, UserID: userID})
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	counted(n)
	if err := m.arch.forgetUser(ctx, appID, userID); err != nil {
		return n, fmt.Errorf("end archived user sessions: %w", err)
	}
	// A call that found its session gone from the cluster engine after the first pass,
	// and read its copy before the delete above, made it live again (restore): end, once
	// more, what the user has live now. A restore later than this sees its copy gone.
	tokens, err = m.e.Members(live, userSessionsKey(appID, userID))
	if err != nil {
		return n, fmt.Errorf("list user sessions: %w", err)
	}
	for _, t := range tokens {
		if _, err := m.endLive(live, Session{Token: t, AppID: appID, UserID: userID}); err != nil {
			return n, err
		}
	}
	return n, nil
}

// count answers how many sessions of the app are live.
func (m sessions) count(ctx context.Context, appID string) (int, error) {
	n, err := m.e.CountMembers(ctx, appSessionsKey(appID))
	if err != nil {
		return 0, fmt.Errorf("count sessions: %w", err)
	}
	return n, nil
}

// issueNonce opens a nonce for the session.
func (m sessions) issueNonce(ctx context.Context, token string) (string, error) {
	n := secrets.Random(18)
	if err := m.e.AddMember(ctx, noncesKey(token), n, NonceTTL, MaxOpenNonces); err != nil {
		return "", fmt.Errorf("issue nonce: %w", err)
	}
	return n, nil
}

// takeNonce consumes a nonce of the session: NONCE_REQUIRED when it is missing, used,
// expired, evicted or another session's.
func (m sessions) takeNonce(ctx context.Context, token, nonce string) error {
	if nonce == "" {
		return core.E(core.CodeNonceRequired, "this call needs a fresh nonce in the X-Nonce header (POST /api/client/nonce)")
	}
	if len(nonce) > 128 {
		return core.E(core.CodeNonceRequired, "the nonce is not valid for this session; fetch a new one")
	}
	ok, err := m.e.TakeMember(ctx, noncesKey(token), nonce)
	if err != nil {
		return fmt.Errorf("take nonce: %w", err)
	}
	if !ok {
		return core.E(core.CodeNonceRequired, "the nonce was already used, has expired or belongs to another session; fetch a new one")
	}
	return nil
}
