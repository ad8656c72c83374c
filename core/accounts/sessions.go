package accounts

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/mail"
	"github.com/keyward/keyward/storage"
)

// Owner sessions (issues 22 and 25). Every JWT the dashboard gets names a stored session
// (claim "sid"); the session is checked on every request, so signing a session out (or
// ending all of them on a password change) refuses its tokens on every node at once. The
// browser renews a session with a refresh secret kept in an HttpOnly cookie.
const (
	// MaxSessionAge bounds how long refreshes can keep one session alive.
	MaxSessionAge = 30 * 24 * time.Hour
	// touchEvery is how stale a session's "last used" may get before a request writes it
	// again: a write per request would cost more than the list is worth.
	touchEvery = time.Minute
	// ReauthWindow is how long after proving who they are an owner may take sensitive
	// actions without proving it again.
	ReauthWindow = 10 * time.Minute
	// WSTicketTTL is the life of a dashboard socket ticket.
	WSTicketTTL = 30 * time.Second
	// maxUserAgent bounds the stored browser description.
	maxUserAgent = 300
)

// Error codes of the owner's account, mapped to statuses at the edge.
const (
	// CodeReauthRequired refuses a sensitive action when the session's last proof of
	// identity is older than ReauthWindow (403).
	CodeReauthRequired core.Code = "REAUTH_REQUIRED"
	// CodePasswordBreached refuses a password found in a breach list (400).
	CodePasswordBreached core.Code = "PASSWORD_BREACHED"
)

// tokenWSTicket is the purpose of a stored socket ticket (an account token of 30 s).
const tokenWSTicket = "ws_ticket"

// ClientInfo is where a request comes from: the browser's User-Agent and the address.
type ClientInfo struct {
	UserAgent string
	IP        string
}

type clientKey struct{}

// WithClient attaches the caller's browser and address to ctx for the session records.
func WithClient(ctx context.Context, c ClientInfo) context.Context {
	if len(c.UserAgent) > maxUserAgent {
		c.UserAgent = c.UserAgent[:maxUserAgent]
	}
	return context.WithValue(ctx, clientKey{}, c)
}

func clientOf(ctx context.Context) ClientInfo {
	c, _ := ctx.Value(clientKey{}).(ClientInfo)
	return c
}

// signIn stores a new owner session and issues its JWT and refresh secret. It is never
// issued before the account's cut-off (a node whose clock is behind the one that changed
// the password): a token the server issues is one it accepts.
func (s *Service) signIn(ctx context.Context, a storage.Account) (Session, error) {
	issued := s.cfg.Now()
	if cut := a.TokensValidAfter; issued.Before(cut) {
		issued = cut
	}
	issued = storage.Truncate(issued)
	client := clientOf(ctx)
	known := s.knownClient(ctx, a.ID, client)
	refresh := secrets.Random(32)
	o := storage.OwnerSession{ID: secrets.Random(16), AccountID: a.ID, RefreshHash: secrets.Hash(refresh),
		UserAgent: client.UserAgent, IP: client.IP, CreatedAt: issued, LastUsedAt: issued, AuthAt: issued,
		ExpiresAt: issued.Add(s.cfg.TokenTTL)}
	if err := s.store.CreateOwnerSession(ctx, o); err != nil {
		return Session{}, fmt.Errorf("accounts: store session: %w", err)
	}
	token, claims, err := s.tokens.issue(a.ID, o.ID, issued)
	if err != nil {
		return Session{}, err
	}
	if !known {
		s.mailNewSignIn(a, o)
	}
	s.log.Info("owner signed in", "accountId", a.ID, "session", o.ID, "ip", o.IP)
	return Session{Token: token, ExpiresAt: claims.ExpiresAt.Time, Account: a, SessionID: o.ID,
		Refresh: o.ID + "." + refresh, RefreshExpiresAt: o.CreatedAt.Add(MaxSessionAge)}, nil
}

// knownClient reports whether the account has a live session from the same browser and
// address, or has no session at all (a first sign-in is not news to its owner).
func (s *Service) knownClient(ctx context.Context, accountID string, c ClientInfo) bool {
	list, err := s.store.ListOwnerSessions(ctx, accountID, s.cfg.Now())
	if err != nil {
		s.log.Warn("cannot list owner sessions", "accountId", accountID, "err", err)
		return true
	}
	if len(list) == 0 {
		return true
	}
	for _, o := range list {
		if o.UserAgent == c.UserAgent && o.IP == c.IP {
			return true
		}
	}
	return false
}

// mailNewSignIn tells the owner about a sign-in from a browser and address not seen in
// their live sessions.
func (s *Service) mailNewSignIn(a storage.Account, o storage.OwnerSession) {
	where := o.IP
	if s.cfg.Country != nil {
		if cc := s.cfg.Country(o.IP); cc != "" {
			where += " (" + cc + ")"
		}
	}
	s.mailer.Enqueue(mail.Message{To: a.Email, Subject: "New sign-in to your Keyward account", Text: fmt.Sprintf(
		"Hello %s,\n\nyour Keyward account was signed in from a browser and address it has not been signed in from lately:\n\n"+
			"time:    %s\naddress: %s\nbrowser: %s\n\nIf this was not you, sign that session out and change your password:\n\n%s/account/sessions\n",
		a.Username, o.CreatedAt.UTC().Format(time.RFC1123), where, o.UserAgent, s.cfg.PublicURL)})
	s.log.Info("new sign-in mailed", "accountId", a.ID, "session", o.ID)
}

// checkSession answers the session a token names if it is live and the account's.
func (s *Service) checkSession(ctx context.Context, c Claims) (storage.OwnerSession, error) {
	if c.SessionID == "" {
		return storage.OwnerSession{}, errBadSession
	}
	o, err := s.store.GetOwnerSession(ctx, c.SessionID)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.OwnerSession{}, errBadSession
	} else if err != nil {
		return storage.OwnerSession{}, fmt.Errorf("accounts: session check: %w", err)
	}
	if o.AccountID != c.Subject || !s.cfg.Now().Before(o.ExpiresAt.Add(s.cfg.TokenLeeway)) {
		return storage.OwnerSession{}, errBadSession
	}
	s.touch(ctx, o)
	return o, nil
}

// touch records the session's use now and then; a failure only costs the list a stale time.
func (s *Service) touch(ctx context.Context, o storage.OwnerSession) {
	now := s.now()
	ip := clientOf(ctx).IP
	if now.Sub(o.LastUsedAt) < touchEvery && (ip == "" || ip == o.IP) {
		return
	}
	if err := s.store.UpdateOwnerSession(ctx, o.ID, storage.OwnerSessionChange{LastUsedAt: now, IP: ip}); err != nil &&
		!errors.Is(err, storage.ErrNotFound) {
		s.log.Warn("cannot record a session's use", "session", o.ID, "err", err)
	}
}

// Refresh renews a session from its refresh secret (the cookie's "sid.secret"): a new JWT
// and the session's expiry moved on, never past MaxSessionAge after the sign-in.
func (s *Service) Refresh(ctx context.Context, cookie string) (Session, error) {
	sid, secret, ok := strings.Cut(cookie, ".")
	if !ok || sid == "" || secret == "" || len(cookie) > 200 {
		return Session{}, errBadSession
	}
	o, err := s.store.GetOwnerSession(ctx, sid)
	if errors.Is(err, storage.ErrNotFound) {
		return Session{}, errBadSession
	} else if err != nil {
		return Session{}, fmt.Errorf("accounts: refresh: %w", err)
	}
	now := s.now()
	if subtle.ConstantTimeCompare([]byte(secrets.Hash(secret)), []byte(o.RefreshHash)) != 1 || !now.Before(o.ExpiresAt) {
		return Session{}, errBadSession
	}
	a, err := s.store.GetAccount(ctx, o.AccountID)
	if errors.Is(err, storage.ErrNotFound) {
		return Session{}, errBadSession
	} else if err != nil {
		return Session{}, fmt.Errorf("accounts: refresh: %w", err)
	}
	expires := now.Add(s.cfg.TokenTTL)
	if limit := o.CreatedAt.Add(MaxSessionAge); expires.After(limit) {
		expires = limit
	}
	if err := s.store.UpdateOwnerSession(ctx, o.ID, storage.OwnerSessionChange{LastUsedAt: now, IP: clientOf(ctx).IP, ExpiresAt: expires}); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return Session{}, errBadSession
		}
		return Session{}, fmt.Errorf("accounts: refresh: %w", err)
	}
	issued := now
	if cut := a.TokensValidAfter; issued.Before(cut) {
		issued = cut
	}
	token, _, err := s.tokens.issueUntil(a.ID, o.ID, issued, expires)
	if err != nil {
		return Session{}, err
	}
	return Session{Token: token, ExpiresAt: expires, Account: a, SessionID: o.ID, Refresh: cookie,
		RefreshExpiresAt: o.CreatedAt.Add(MaxSessionAge)}, nil
}

// SessionInfo is one owner session as the sessions page lists it.
type SessionInfo struct {
	storage.OwnerSession
	Current bool
}

// ListSessions answers the caller's live sessions, the one of this request marked.
func (s *Service) ListSessions(ctx context.Context, p Principal) ([]SessionInfo, error) {
	list, err := s.store.ListOwnerSessions(ctx, p.Account.ID, s.cfg.Now())
	if err != nil {
		return nil, fmt.Errorf("accounts: list sessions: %w", err)
	}
	out := make([]SessionInfo, 0, len(list))
	for _, o := range list {
		out = append(out, SessionInfo{OwnerSession: o, Current: o.ID == p.SessionID})
	}
	return out, nil
}

// RevokeSession signs one of the caller's sessions out (the current one included).
func (s *Service) RevokeSession(ctx context.Context, p Principal, id string) error {
	if err := requireJWT(p, "sign sessions out"); err != nil {
		return err
	}
	if err := core.Required("sessionId", id); err != nil {
		return err
	}
	err := s.store.DeleteOwnerSession(ctx, p.Account.ID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return core.E(core.CodeNotFound, "no such session")
	} else if err != nil {
		return fmt.Errorf("accounts: sign a session out: %w", err)
	}
	s.log.Info("owner session signed out", "accountId", p.Account.ID, "session", id, "by", p.SessionID)
	return nil
}

// RevokeOtherSessions signs out every session of the caller but the current one.
func (s *Service) RevokeOtherSessions(ctx context.Context, p Principal) (int, error) {
	if err := requireJWT(p, "sign sessions out"); err != nil {
		return 0, err
	}
	n, err := s.endSessions(ctx, p.Account.ID, p.SessionID, "others signed out")
	return n, err
}

// endSessions deletes the account's sessions but keep ("" for all).
func (s *Service) endSessions(ctx context.Context, accountID, keep, why string) (int, error) {
	n, err := s.store.DeleteOwnerSessions(ctx, accountID, keep)
	if err != nil {
		return 0, fmt.Errorf("accounts: end sessions: %w", err)
	}
	s.log.Info("owner sessions ended", "accountId", accountID, "count", n, "kept", keep, "why", why)
	return n, nil
}

// PurgeSessions removes the sessions that have expired.
func (s *Service) PurgeSessions(ctx context.Context) (int, error) {
	n, err := s.store.PurgeOwnerSessions(ctx, s.cfg.Now())
	if err != nil {
		return 0, fmt.Errorf("accounts: purge sessions: %w", err)
	}
	return n, nil
}

// WSTicket issues a single-use ticket of WSTicketTTL that opens one dashboard socket for
// the caller's session, so the JWT never travels in a URL.
func (s *Service) WSTicket(ctx context.Context, p Principal) (string, time.Time, error) {
	if p.SessionID == "" {
		return "", time.Time{}, core.E(core.CodeForbidden, "a socket ticket is for a signed-in session; API clients use ?token=")
	}
	ticket := p.SessionID + "." + secrets.Random(24)
	expires := s.now().Add(WSTicketTTL)
	if err := s.store.CreateAccountToken(ctx, storage.AccountToken{Hash: secrets.Hash(ticket), AccountID: p.Account.ID,
		Purpose: tokenWSTicket, ExpiresAt: expires, CreatedAt: s.now()}); err != nil {
		return "", time.Time{}, fmt.Errorf("accounts: socket ticket: %w", err)
	}
	return ticket, expires, nil
}

// AuthenticateTicket consumes a socket ticket: it works once, within WSTicketTTL, while its
// session is live.
func (s *Service) AuthenticateTicket(ctx context.Context, ticket string) (Principal, error) {
	sid, _, ok := strings.Cut(ticket, ".")
	if !ok || sid == "" || len(ticket) > 200 {
		return Principal{}, errBadSession
	}
	t, err := s.store.ConsumeAccountToken(ctx, tokenWSTicket, secrets.Hash(ticket), s.now())
	if errors.Is(err, storage.ErrNotFound) {
		return Principal{}, errBadSession
	} else if err != nil {
		return Principal{}, fmt.Errorf("accounts: socket ticket: %w", err)
	}
	o, err := s.checkSession(ctx, Claims{Subject: t.AccountID, SessionID: sid})
	if err != nil {
		return Principal{}, err
	}
	a, err := s.store.GetAccount(ctx, t.AccountID)
	if errors.Is(err, storage.ErrNotFound) {
		return Principal{}, errBadSession
	} else if err != nil {
		return Principal{}, fmt.Errorf("accounts: socket ticket: %w", err)
	}
	return Principal{Account: a, SessionID: o.ID, AuthAt: o.AuthAt}, nil
}

// CheckSessionLive answers errBadSession once the session is signed out or expired (a
// socket opened with a ticket checks it on its timer).
func (s *Service) CheckSessionLive(ctx context.Context, p Principal) error {
	_, err := s.checkSession(ctx, Claims{Subject: p.Account.ID, SessionID: p.SessionID})
	return err
}

// RequireRecentAuth refuses a sensitive action (REAUTH_REQUIRED) when the caller's session
// proved who they are more than ReauthWindow ago. API keys are credentials of their own and
// pass (what they may do is their scopes').
func (s *Service) RequireRecentAuth(p Principal) error {
	if p.ViaAPIKey || p.SessionID == "" {
		return nil
	}
	if s.cfg.Now().Sub(p.AuthAt) > ReauthWindow {
		return core.E(CodeReauthRequired, "confirm it is you: sign in again with your password, a 2FA code or a passkey (POST /api/auth/reauth)")
	}
	return nil
}

// ReauthInput proves identity again: the password, a TOTP code or a passkey's assertion
// (of a ceremony begun by BeginPasskeyReauth).
type ReauthInput struct {
	Password      string
	TwoFactorCode string
	Passkey       *PasskeyAssertion
}

// Reauth records a fresh proof of identity on the caller's session.
func (s *Service) Reauth(ctx context.Context, p Principal, in ReauthInput) (time.Time, error) {
	if p.SessionID == "" {
		return time.Time{}, core.E(core.CodeForbidden, "an API key cannot re-authenticate")
	}
	switch {
	case in.Password != "":
		if len(in.Password) > core.MaxPasswordLength || s.hasher.Verify(ctx, p.Account.PasswordHash, in.Password) != nil {
			return time.Time{}, errInvalidCredentials
		}
	case in.TwoFactorCode != "":
		if err := core.ValidateCode("twoFactorCode", in.TwoFactorCode); err != nil {
			return time.Time{}, err
		}
		if _, err := s.store.UpdateAccount(ctx, p.Account.ID, func(a *storage.Account) error {
			if !a.TwoFactorEnabled {
				return errInvalidCredentials
			}
			step, ok := matchTOTP(a.TwoFactorSecret, in.TwoFactorCode, s.cfg.Now(), a.TwoFactorLastStep)
			if !ok {
				return errInvalidCredentials
			}
			a.TwoFactorLastStep = step
			return nil
		}); err != nil {
			return time.Time{}, err
		}
	case in.Passkey != nil:
		if _, err := s.verifyPasskey(ctx, passkeyReauth, *in.Passkey, p.Account.ID); err != nil {
			return time.Time{}, err
		}
	default:
		return time.Time{}, core.Invalid("password", "password, twoFactorCode or passkey is required")
	}
	return s.markAuthenticated(ctx, p)
}

func (s *Service) markAuthenticated(ctx context.Context, p Principal) (time.Time, error) {
	now := s.now()
	if err := s.store.UpdateOwnerSession(ctx, p.SessionID, storage.OwnerSessionChange{AuthAt: now}); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return time.Time{}, errBadSession
		}
		return time.Time{}, fmt.Errorf("accounts: reauth: %w", err)
	}
	s.log.Info("owner re-authenticated", "accountId", p.Account.ID, "session", p.SessionID)
	return now.Add(ReauthWindow), nil
}
