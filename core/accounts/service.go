package accounts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/core/passwords"
	"github.com/keyward/keyward/core/plans"
	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/core/usage"
	"github.com/keyward/keyward/mail"
	"github.com/keyward/keyward/storage"
)

// Lifetimes of mailed tokens (SPEC 5.7 for reset).
const (
	VerifyTokenTTL = 24 * time.Hour
	ResetTokenTTL  = time.Hour
	// DefaultTokenTTL is the dashboard JWT lifetime when none is configured.
	DefaultTokenTTL = 24 * time.Hour
)

// apiKeyPrefix starts every API key, so leaked keys are recognisable by secret scanners.
const apiKeyPrefix = "kw_"

// Mailer takes mails for delivery without blocking (mail.Queue).
type Mailer interface {
	Enqueue(m mail.Message)
}

// AppCounter counts an account's applications (the applications domain); nil counts zero.
type AppCounter interface {
	CountApps(ctx context.Context, accountID string) (int, error)
}

// Config configures the service.
type Config struct {
	// JWTSecret signs dashboard tokens (HS256); at least 32 bytes.
	JWTSecret []byte
	// TokenTTL is the JWT lifetime; default DefaultTokenTTL.
	TokenTTL time.Duration
	// TokenLeeway is how long after its expiry a JWT is still accepted (clock differences
	// between the nodes of a cluster); zero accepts none; at most MaxTokenLeeway. The
	// server's default is --jwt-leeway's.
	TokenLeeway time.Duration
	// PublicURL is where owners reach this server, for links in mails.
	PublicURL string
	// Now is the clock; default time.Now. Tests move it.
	Now func() time.Time
	// Country names the country of an address for the new sign-in mail; nil without GeoIP.
	Country func(ip string) string
	// Breach checks new passwords against a breach list; nil checks nothing.
	Breach *BreachChecker
}

// Store is what the service persists: accounts, their mailed tokens, and the JWTs revoked
// by a logout (kept in storage, not only in the cluster engine, so that a logout survives a
// restart of Redis or of the embedded node).
type Store interface {
	storage.AccountStore
	storage.RevocationStore
	storage.OwnerSessionStore
	storage.RecoveryCodeStore
	storage.PasskeyStore
}

// Service runs the account flows.
type Service struct {
	store  Store
	hasher *passwords.Hasher
	plans  *plans.Catalogue
	mailer Mailer
	apps   AppCounter
	tokens tokenIssuer
	cfg    Config
	log    *slog.Logger
	// planEvents receives a plan change's events (SendPlanChanges, planchange.go).
	planEvents planEvents
}

// Deps are the service's collaborators.
type Deps struct {
	Store  Store
	Hasher *passwords.Hasher
	Plans  *plans.Catalogue
	Mailer Mailer
	Apps   AppCounter // optional
	Log    *slog.Logger
}

// New checks the configuration and builds the service.
func New(d Deps, cfg Config) (*Service, error) {
	if len(cfg.JWTSecret) < 32 {
		return nil, fmt.Errorf("accounts: JWT secret must be at least 32 bytes, got %d", len(cfg.JWTSecret))
	}
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = DefaultTokenTTL
	}
	if cfg.TokenLeeway < 0 || cfg.TokenLeeway > MaxTokenLeeway {
		return nil, fmt.Errorf("accounts: token leeway must be from 0 to %s, got %s", MaxTokenLeeway, cfg.TokenLeeway)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	if d.Store == nil || d.Hasher == nil || d.Plans == nil || d.Mailer == nil || d.Log == nil {
		return nil, errors.New("accounts: missing dependency")
	}
	return &Service{store: d.Store, hasher: d.Hasher, plans: d.Plans, mailer: d.Mailer,
		apps: d.Apps, tokens: tokenIssuer{secret: cfg.JWTSecret, ttl: cfg.TokenTTL, leeway: cfg.TokenLeeway}, cfg: cfg, log: d.Log}, nil
}

func (s *Service) now() time.Time { return storage.Truncate(s.cfg.Now()) }

// Errors of the login flows. Their messages never say which part was wrong.
var (
	// One message for a wrong username, password or code: the caller learns nothing
	// about which part failed.
	errInvalidCredentials = core.E(core.CodeUnauthorized, "invalid credentials")
	errInvalidCode        = errInvalidCredentials
	errRequireVerify      = core.E(core.CodeRequireVerify, "email address not verified: check your inbox for the verification link")
	errRequires2FA        = core.E(core.CodeRequires2FA, "two-factor authentication code required")
	errBadSession         = core.E(core.CodeUnauthorized, "invalid or expired token")
)

// Messages answered whether or not an account exists.
const (
	msgRegistered   = "registration received: check your email to verify your address"
	msgResent       = "if an unverified account uses this address, a new verification email is on its way"
	msgForgot       = "if an account uses this address, a password reset email is on its way"
	msgPasswordSet  = "password changed"
	msgLoggedOut    = "logged out"
	msg2FAEnabled   = "two-factor authentication enabled"
	msg2FADisabled  = "two-factor authentication disabled"
	msgEmailChecked = "email verified"
)

// Principal is an authenticated dashboard caller.
type Principal struct {
	Account storage.Account
	// TokenID and TokenExpiresAt identify the JWT used; empty for API-key callers.
	TokenID        string
	TokenExpiresAt time.Time
	// ViaAPIKey is true when the caller presented the API key instead of a JWT.
	ViaAPIKey bool
	// SessionID names the owner session of a JWT caller; AuthAt is when that session last
	// proved who the owner is (sign-in or re-authentication).
	SessionID string
	AuthAt    time.Time
}

// IsAdmin reports whether the caller has the admin role.
func (p Principal) IsAdmin() bool { return p.Account.Role == storage.RoleAdmin }

// Session is a successful sign-in: a JWT and the account it belongs to.
type Session struct {
	Token     string
	ExpiresAt time.Time
	Account   storage.Account
	// SessionID is the stored session; Refresh the cookie value that renews it
	// ("sid.secret", shown only here), valid until RefreshExpiresAt at the latest.
	SessionID        string
	Refresh          string
	RefreshExpiresAt time.Time
}

func normalizeEmail(e string) string { return strings.TrimSpace(e) }

// newAPIKey returns a fresh key and the stored parts (hash, masked prefix, last 4).
func newAPIKey() (key, hash, prefix, last4 string) {
	key = apiKeyPrefix + secrets.Random(32)
	return key, secrets.Hash(key), key[:len(apiKeyPrefix)+4], key[len(key)-4:]
}

// MaskedAPIKey is the read form of the key: its prefix and last 4 characters.
func MaskedAPIKey(a storage.Account) string {
	if a.APIKeyHash == "" {
		return ""
	}
	return a.APIKeyPrefix + "..." + a.APIKeyLast4
}

// RegisterInput is the body of a registration.
type RegisterInput struct {
	Email    string
	Username string
	Password string
}

// Register creates an unverified account and mails a verification link. The answer is the
// same whether or not the email or username exists: an existing email gets a "you already
// have an account" mail instead, a taken username a mail saying so.
func (s *Service) Register(ctx context.Context, in RegisterInput) (string, error) {
	in.Email = normalizeEmail(in.Email)
	// The password rule first (the issue asks for it before anything else), then the rest.
	if err := core.FirstError(core.ValidatePassword("password", in.Password),
		core.ValidateUsername("username", in.Username), core.ValidateEmail("email", in.Email)); err != nil {
		return "", err
	}
	if err := s.cfg.Breach.Check(ctx, "password", in.Password); err != nil {
		return "", err
	}
	// Hash before any lookup so that every branch costs the same time.
	hash, err := s.hasher.Hash(ctx, in.Password)
	if err != nil {
		return "", err
	}
	if existing, err := s.store.GetAccountByEmail(ctx, in.Email); err == nil {
		s.mailExisting(existing)
		return msgRegistered, nil
	} else if !errors.Is(err, storage.ErrNotFound) {
		return "", fmt.Errorf("accounts: register: %w", err)
	}
	if _, err := s.store.GetAccountByUsername(ctx, in.Username); err == nil {
		s.mailUsernameTaken(in.Email, in.Username)
		return msgRegistered, nil
	} else if !errors.Is(err, storage.ErrNotFound) {
		return "", fmt.Errorf("accounts: register: %w", err)
	}
	a := s.newAccount(in.Username, in.Email, hash, storage.RoleUser)
	if err := s.store.CreateAccount(ctx, a); err != nil {
		if errors.Is(err, storage.ErrConflict) {
			// Lost a race with another registration of the same name or address: answer as
			// if it existed before, which it now does.
			return msgRegistered, nil
		}
		return "", fmt.Errorf("accounts: register: %w", err)
	}
	if err := s.sendVerification(ctx, a); err != nil {
		return "", err
	}
	s.log.Info("account registered", "accountId", a.ID, "username", a.Username)
	return msgRegistered, nil
}

func (s *Service) newAccount(username, email, passwordHash, role string) storage.Account {
	now := s.now()
	_, keyHash, keyPrefix, keyLast4 := newAPIKey()
	return storage.Account{
		ID: uuid.NewString(), Username: username, Email: email, PasswordHash: passwordHash,
		Role: role, Plan: plans.Free,
		APIKeyHash: keyHash, APIKeyPrefix: keyPrefix, APIKeyLast4: keyLast4,
		APICallsResetAt: usage.PeriodEnd(now), CreatedAt: now, UpdatedAt: now,
	}
}

// sendVerification replaces any pending verification token of the account and mails a new one.
func (s *Service) sendVerification(ctx context.Context, a storage.Account) error {
	if err := s.store.DeleteAccountTokens(ctx, a.ID, storage.TokenVerifyEmail); err != nil {
		return fmt.Errorf("accounts: verification token: %w", err)
	}
	token, err := s.newMailedToken(ctx, a.ID, storage.TokenVerifyEmail, VerifyTokenTTL)
	if err != nil {
		return err
	}
	s.mailer.Enqueue(mail.Message{To: a.Email, Subject: "Verify your Keyward email address", Text: fmt.Sprintf(
		"Hello %s,\n\nconfirm your email address to start using Keyward:\n\n%s/verify-email?token=%s\n\n"+
			"Or send this token to POST /api/auth/verify-email:\n\ntoken: %s\n\nThe link is valid for 24 hours.\n",
		a.Username, s.cfg.PublicURL, token, token)})
	return nil
}

func (s *Service) newMailedToken(ctx context.Context, accountID, purpose string, ttl time.Duration) (string, error) {
	token := secrets.Random(32)
	now := s.now()
	err := s.store.CreateAccountToken(ctx, storage.AccountToken{Hash: secrets.Hash(token), AccountID: accountID,
		Purpose: purpose, ExpiresAt: now.Add(ttl), CreatedAt: now})
	if err != nil {
		return "", fmt.Errorf("accounts: store %s token: %w", purpose, err)
	}
	return token, nil
}

func (s *Service) mailExisting(a storage.Account) {
	s.mailer.Enqueue(mail.Message{To: a.Email, Subject: "You already have a Keyward account", Text: fmt.Sprintf(
		"Hello %s,\n\nsomeone (maybe you) tried to register a new Keyward account with this address, "+
			"which already belongs to your account.\n\nSign in at %s, or reset your password with "+
			"POST /api/auth/forgot-password if you forgot it. If this was not you, ignore this email.\n",
		a.Username, s.cfg.PublicURL)})
}

func (s *Service) mailUsernameTaken(email, username string) {
	s.mailer.Enqueue(mail.Message{To: email, Subject: "Your Keyward registration", Text: fmt.Sprintf(
		"Hello,\n\nsomeone (maybe you) tried to register a Keyward account with this address and the "+
			"username %q, which is already taken. Register again with another username. If this was not you, "+
			"ignore this email.\n", username)})
}

// VerifyEmail consumes a verification token, marks the address verified and signs the owner in.
func (s *Service) VerifyEmail(ctx context.Context, token string) (Session, error) {
	if err := core.Required("token", token); err != nil {
		return Session{}, err
	}
	t, err := s.store.ConsumeAccountToken(ctx, storage.TokenVerifyEmail, secrets.Hash(token), s.now())
	if errors.Is(err, storage.ErrNotFound) {
		return Session{}, core.Invalid("token", "verification token is invalid, used or expired")
	} else if err != nil {
		return Session{}, fmt.Errorf("accounts: verify email: %w", err)
	}
	a, err := s.store.UpdateAccount(ctx, t.AccountID, audit.Track(ctx, func(a *storage.Account) error {
		a.EmailVerified = true
		a.LastLoginAt = s.now()
		a.UpdatedAt = s.now()
		return nil
	}))
	if err != nil {
		return Session{}, fmt.Errorf("accounts: verify email: %w", err)
	}
	return s.signIn(ctx, a)
}

// ResendVerification mails a fresh verification link to an unverified account.
func (s *Service) ResendVerification(ctx context.Context, email string) (string, error) {
	email = normalizeEmail(email)
	if err := core.ValidateEmail("email", email); err != nil {
		return "", err
	}
	a, err := s.store.GetAccountByEmail(ctx, email)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return msgResent, nil
	case err != nil:
		return "", fmt.Errorf("accounts: resend verification: %w", err)
	case a.EmailVerified:
		return msgResent, nil
	}
	if err := s.sendVerification(ctx, a); err != nil {
		return "", err
	}
	return msgResent, nil
}

// LoginInput is the body of a dashboard login.
type LoginInput struct {
	Username      string // username or email
	Password      string
	TwoFactorCode string
	// RecoveryCode stands in for TwoFactorCode once (it signs out the other sessions).
	RecoveryCode string
	// Passkey stands in for TwoFactorCode: an assertion of one of the account's passkeys
	// (of a ceremony begun by BeginPasskeyLogin).
	Passkey *PasskeyAssertion
}

// lookup finds an account by username or email. Usernames cannot contain '@'.
func (s *Service) lookup(ctx context.Context, login string) (storage.Account, error) {
	if strings.Contains(login, "@") {
		return s.store.GetAccountByEmail(ctx, normalizeEmail(login))
	}
	return s.store.GetAccountByUsername(ctx, login)
}

// LoginLimitKey names the budget a login attempt with this username or email counts
// against: the account it names, so that an account's username and email (in any case)
// share one budget; a name no account has counts against itself, trimmed and lower-cased
// as the lookup compares, so that probing names gains no extra tries either.
func (s *Service) LoginLimitKey(ctx context.Context, login string) (string, error) {
	name := strings.ToLower(strings.TrimSpace(login))
	if len(login) > core.MaxEmailLength {
		return "name:" + name, nil // refused by Login before any lookup
	}
	a, err := s.lookup(ctx, login)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return "name:" + name, nil
	case err != nil:
		return "", fmt.Errorf("accounts: login limit: %w", err)
	}
	return "account:" + a.ID, nil
}

// Login checks credentials (and the TOTP code when 2FA is on) and signs the owner in.
func (s *Service) Login(ctx context.Context, in LoginInput) (Session, error) {
	if err := core.FirstError(core.Required("username", in.Username), core.Required("password", in.Password)); err != nil {
		return Session{}, err
	}
	if len(in.Username) > core.MaxEmailLength {
		return Session{}, core.Invalid("username", "username must be at most %d characters", core.MaxEmailLength)
	}
	if len(in.Password) > core.MaxPasswordLength {
		return Session{}, core.Invalid("password", "password must be at most %d bytes", core.MaxPasswordLength)
	}
	if in.TwoFactorCode != "" {
		if err := core.ValidateCode("twoFactorCode", in.TwoFactorCode); err != nil {
			return Session{}, err
		}
	}
	a, err := s.lookup(ctx, in.Username)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return Session{}, fmt.Errorf("accounts: login: %w", err)
	}
	// An unknown account still costs one hash check (a.PasswordHash is "" then).
	if err := s.hasher.Verify(ctx, a.PasswordHash, in.Password); err != nil {
		if !errors.Is(err, passwords.ErrMismatch) {
			s.log.Error("password hash check failed", "accountId", a.ID, "err", err)
		}
		return Session{}, errInvalidCredentials
	}
	if !a.EmailVerified {
		return Session{}, errRequireVerify
	}
	if a.TwoFactorEnabled && in.TwoFactorCode == "" && in.RecoveryCode == "" && in.Passkey == nil {
		return Session{}, errRequires2FA
	}
	byPasskey := a.TwoFactorEnabled && in.TwoFactorCode == "" && in.Passkey != nil
	if byPasskey {
		if _, err := s.verifyPasskey(ctx, passkeyLogin, *in.Passkey, a.ID); err != nil {
			return Session{}, err
		}
	}
	byRecovery := a.TwoFactorEnabled && in.TwoFactorCode == "" && !byPasskey
	if byRecovery {
		if err := s.useRecoveryCode(ctx, a.ID, in.RecoveryCode); err != nil {
			return Session{}, err
		}
	}
	a, err = s.store.UpdateAccount(ctx, a.ID, audit.Track(ctx, func(acc *storage.Account) error {
		if acc.TwoFactorEnabled && !byRecovery && !byPasskey {
			step, ok := matchTOTP(acc.TwoFactorSecret, in.TwoFactorCode, s.cfg.Now(), acc.TwoFactorLastStep)
			if !ok {
				return errInvalidCode
			}
			acc.TwoFactorLastStep = step
		}
		acc.LastLoginAt = s.now()
		return nil
	}))
	if err != nil {
		return Session{}, err
	}
	if byRecovery {
		// A recovery code says the second factor may be lost or stolen: every other
		// session ends.
		if _, err := s.endSessions(ctx, a.ID, "", "recovery code used"); err != nil {
			return Session{}, err
		}
	}
	return s.signIn(ctx, a)
}

// Authenticate checks a dashboard JWT: signature, expiry, revocation (logout) and the
// account's cut-off (password change).
func (s *Service) Authenticate(ctx context.Context, token string) (Principal, error) {
	c, err := s.tokens.parse(token, s.cfg.Now())
	if err != nil {
		return Principal{}, errBadSession
	}
	revoked, err := s.store.IsTokenRevoked(ctx, c.ID, s.cfg.Now())
	if err != nil {
		return Principal{}, fmt.Errorf("accounts: revocation check: %w", err)
	}
	if revoked {
		return Principal{}, errBadSession
	}
	a, err := s.store.GetAccount(ctx, c.Subject)
	if errors.Is(err, storage.ErrNotFound) {
		return Principal{}, errBadSession
	} else if err != nil {
		return Principal{}, fmt.Errorf("accounts: authenticate: %w", err)
	}
	// Both times are whole milliseconds (tokens and storage keep no more), compared exactly.
	if !a.TokensValidAfter.IsZero() && c.IssuedAt.Before(a.TokensValidAfter.Truncate(time.Millisecond)) {
		return Principal{}, errBadSession
	}
	o, err := s.checkSession(ctx, c)
	if err != nil {
		return Principal{}, err
	}
	return Principal{Account: a, TokenID: c.ID, TokenExpiresAt: c.ExpiresAt.Time, SessionID: o.ID, AuthAt: o.AuthAt}, nil
}

// AuthenticateAPIKey finds the account whose current API key is key.
func (s *Service) AuthenticateAPIKey(ctx context.Context, key string) (Principal, error) {
	if !strings.HasPrefix(key, apiKeyPrefix) || len(key) > 128 {
		return Principal{}, core.E(core.CodeUnauthorized, "invalid API key")
	}
	a, err := s.store.GetAccountByAPIKeyHash(ctx, secrets.Hash(key))
	if errors.Is(err, storage.ErrNotFound) {
		return Principal{}, core.E(core.CodeUnauthorized, "invalid API key")
	} else if err != nil {
		return Principal{}, fmt.Errorf("accounts: authenticate API key: %w", err)
	}
	return Principal{Account: a, ViaAPIKey: true}, nil
}

// Logout revokes the presented JWT until it would have expired.
func (s *Service) Logout(ctx context.Context, p Principal) (string, error) {
	if p.TokenID == "" {
		return "", core.E(core.CodeForbidden, "an API key cannot log out; regenerate it to revoke it")
	}
	// The revocation is the sign-out: its write carries the audit entry (audit.Own).
	if err := s.store.RevokeToken(audit.Own(ctx), p.TokenID, p.TokenExpiresAt); err != nil {
		return "", fmt.Errorf("accounts: logout: %w", err)
	}
	if p.SessionID != "" {
		if err := s.store.DeleteOwnerSession(ctx, p.Account.ID, p.SessionID); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return "", fmt.Errorf("accounts: logout: %w", err)
		}
	}
	s.log.Info("owner signed out", "accountId", p.Account.ID, "session", p.SessionID)
	return msgLoggedOut, nil
}

func requireJWT(p Principal, what string) error {
	if p.ViaAPIKey {
		return core.E(core.CodeForbidden, "an API key cannot %s; sign in with your password", what)
	}
	return nil
}

// ForgotPassword mails a single-use reset link (valid 1 hour) to a known address.
func (s *Service) ForgotPassword(ctx context.Context, email string) (string, error) {
	email = normalizeEmail(email)
	if err := core.ValidateEmail("email", email); err != nil {
		return "", err
	}
	a, err := s.store.GetAccountByEmail(ctx, email)
	if errors.Is(err, storage.ErrNotFound) {
		return msgForgot, nil
	} else if err != nil {
		return "", fmt.Errorf("accounts: forgot password: %w", err)
	}
	token, err := s.newMailedToken(ctx, a.ID, storage.TokenResetPassword, ResetTokenTTL)
	if err != nil {
		return "", err
	}
	s.mailer.Enqueue(mail.Message{To: a.Email, Subject: "Reset your Keyward password", Text: fmt.Sprintf(
		"Hello %s,\n\na password reset was asked for your Keyward account. Choose a new password here:\n\n"+
			"%s/reset-password?token=%s\n\nOr send this token with your new password to POST /api/auth/reset-password:\n\n"+
			"token: %s\n\nThe link works once and for 1 hour. If you did not ask for it, ignore this email.\n",
		a.Username, s.cfg.PublicURL, token, token)})
	return msgForgot, nil
}

// setPassword stores a new password hash and revokes every earlier JWT of the account.
func (s *Service) setPassword(a *storage.Account, hash string) {
	a.PasswordHash = hash
	a.TokensValidAfter = s.now()
	a.UpdatedAt = s.now()
}

// ResetPassword consumes a mailed reset token and sets the new password.
func (s *Service) ResetPassword(ctx context.Context, token, newPassword string) (string, error) {
	if err := core.FirstError(core.Required("token", token), core.ValidatePassword("newPassword", newPassword)); err != nil {
		return "", err
	}
	if err := s.cfg.Breach.Check(ctx, "newPassword", newPassword); err != nil {
		return "", err
	}
	hash, err := s.hasher.Hash(ctx, newPassword)
	if err != nil {
		return "", err
	}
	t, err := s.store.ConsumeAccountToken(ctx, storage.TokenResetPassword, secrets.Hash(token), s.now())
	if errors.Is(err, storage.ErrNotFound) {
		return "", core.Invalid("token", "reset token is invalid, used or expired")
	} else if err != nil {
		return "", fmt.Errorf("accounts: reset password: %w", err)
	}
	_, err = s.store.UpdateAccount(ctx, t.AccountID, audit.Track(ctx, func(a *storage.Account) error {
		s.setPassword(a, hash)
		// The token arrived by mail, which proves the address as well as a verification would.
		a.EmailVerified = true
		return nil
	}))
	if err != nil {
		return "", fmt.Errorf("accounts: reset password: %w", err)
	}
	if err := s.store.DeleteAccountTokens(ctx, t.AccountID, storage.TokenResetPassword); err != nil {
		s.log.Error("could not delete other reset tokens", "accountId", t.AccountID, "err", err)
	}
	if _, err := s.endSessions(ctx, t.AccountID, "", "password reset"); err != nil {
		return "", err
	}
	return msgPasswordSet, nil
}

// ResetPasswordBy2FA proves identity with a TOTP code and sets the new password.
func (s *Service) ResetPasswordBy2FA(ctx context.Context, login, code, newPassword string) (string, error) {
	if err := core.FirstError(core.Required("username", login), core.ValidateCode("twoFactorCode", code),
		core.ValidatePassword("newPassword", newPassword)); err != nil {
		return "", err
	}
	if len(login) > core.MaxEmailLength {
		return "", core.Invalid("username", "username must be at most %d characters", core.MaxEmailLength)
	}
	if err := s.cfg.Breach.Check(ctx, "newPassword", newPassword); err != nil {
		return "", err
	}
	hash, err := s.hasher.Hash(ctx, newPassword)
	if err != nil {
		return "", err
	}
	a, err := s.lookup(ctx, login)
	if errors.Is(err, storage.ErrNotFound) {
		return "", errInvalidCode
	} else if err != nil {
		return "", fmt.Errorf("accounts: reset by 2FA: %w", err)
	}
	_, err = s.store.UpdateAccount(ctx, a.ID, audit.Track(ctx, func(acc *storage.Account) error {
		if !acc.TwoFactorEnabled {
			return errInvalidCode
		}
		step, ok := matchTOTP(acc.TwoFactorSecret, code, s.cfg.Now(), acc.TwoFactorLastStep)
		if !ok {
			return errInvalidCode
		}
		acc.TwoFactorLastStep = step
		s.setPassword(acc, hash)
		return nil
	}))
	if err != nil {
		return "", err
	}
	if _, err := s.endSessions(ctx, a.ID, "", "password reset by 2FA"); err != nil {
		return "", err
	}
	return msgPasswordSet, nil
}

// ChangePasswordInput is the body of a password change.
type ChangePasswordInput struct {
	CurrentPassword string
	TwoFactorCode   string
	NewPassword     string
}

// ChangePassword sets a new password after proof by the current password or, with 2FA on,
// a TOTP code. Every earlier JWT stops working; the answer carries a fresh session.
func (s *Service) ChangePassword(ctx context.Context, p Principal, in ChangePasswordInput) (Session, error) {
	if err := requireJWT(p, "change the password"); err != nil {
		return Session{}, err
	}
	if err := core.ValidatePassword("newPassword", in.NewPassword); err != nil {
		return Session{}, err
	}
	if in.TwoFactorCode != "" {
		if err := core.ValidateCode("twoFactorCode", in.TwoFactorCode); err != nil {
			return Session{}, err
		}
	}
	switch {
	case in.CurrentPassword != "":
		if len(in.CurrentPassword) > core.MaxPasswordLength {
			return Session{}, errInvalidCredentials
		}
		if err := s.hasher.Verify(ctx, p.Account.PasswordHash, in.CurrentPassword); err != nil {
			return Session{}, core.E(core.CodeUnauthorized, "current password is wrong")
		}
	case in.TwoFactorCode != "":
		if !p.Account.TwoFactorEnabled {
			return Session{}, core.Invalid("currentPassword", "currentPassword is required (two-factor authentication is not enabled)")
		}
	default:
		return Session{}, core.Invalid("currentPassword", "currentPassword is required, or twoFactorCode when two-factor authentication is enabled")
	}
	if err := s.cfg.Breach.Check(ctx, "newPassword", in.NewPassword); err != nil {
		return Session{}, err
	}
	hash, err := s.hasher.Hash(ctx, in.NewPassword)
	if err != nil {
		return Session{}, err
	}
	a, err := s.store.UpdateAccount(audit.Own(ctx), p.Account.ID, audit.Track(ctx, func(a *storage.Account) error {
		if in.CurrentPassword == "" {
			step, ok := matchTOTP(a.TwoFactorSecret, in.TwoFactorCode, s.cfg.Now(), a.TwoFactorLastStep)
			if !ok {
				return core.E(core.CodeUnauthorized, "two-factor code is wrong or already used")
			}
			a.TwoFactorLastStep = step
		}
		s.setPassword(a, hash)
		return nil
	}))
	if err != nil {
		return Session{}, err
	}
	// Every session ends, this one too: the answer carries a fresh one.
	if _, err := s.endSessions(ctx, a.ID, "", "password changed"); err != nil {
		return Session{}, err
	}
	return s.signIn(ctx, a)
}

// RegenerateAPIKey replaces the API key; the old key stops working at once. The full key is
// returned only here.
func (s *Service) RegenerateAPIKey(ctx context.Context, p Principal) (string, error) {
	if err := requireJWT(p, "regenerate the API key"); err != nil {
		return "", err
	}
	key, hash, prefix, last4 := newAPIKey()
	_, err := s.store.UpdateAccount(audit.Own(ctx), p.Account.ID, audit.Track(ctx, func(a *storage.Account) error {
		a.APIKeyHash, a.APIKeyPrefix, a.APIKeyLast4 = hash, prefix, last4
		a.UpdatedAt = s.now()
		return nil
	}))
	if err != nil {
		return "", fmt.Errorf("accounts: regenerate API key: %w", err)
	}
	return key, nil
}

// Setup2FA stores a pending TOTP secret and returns it with its otpauth:// URL. 2FA stays
// off until Enable2FA confirms a code.
func (s *Service) Setup2FA(ctx context.Context, p Principal) (secret, url string, err error) {
	if err := requireJWT(p, "change two-factor authentication"); err != nil {
		return "", "", err
	}
	if p.Account.TwoFactorEnabled {
		return "", "", core.E(core.CodeConflict, "two-factor authentication is already enabled; disable it first")
	}
	secret, url, err = newTOTPSecret(p.Account.Email)
	if err != nil {
		return "", "", fmt.Errorf("accounts: 2FA setup: %w", err)
	}
	_, err = s.store.UpdateAccount(audit.Own(ctx), p.Account.ID, audit.Track(ctx, func(a *storage.Account) error {
		a.TwoFactorPending = secret
		a.UpdatedAt = s.now()
		return nil
	}))
	if err != nil {
		return "", "", fmt.Errorf("accounts: 2FA setup: %w", err)
	}
	return secret, url, nil
}

// Enable2FA turns 2FA on when code matches the pending secret.
func (s *Service) Enable2FA(ctx context.Context, p Principal, code string) (string, error) {
	if err := requireJWT(p, "change two-factor authentication"); err != nil {
		return "", err
	}
	if err := core.ValidateCode("code", code); err != nil {
		return "", err
	}
	_, err := s.store.UpdateAccount(audit.Own(ctx), p.Account.ID, audit.Track(ctx, func(a *storage.Account) error {
		if a.TwoFactorEnabled {
			return core.E(core.CodeConflict, "two-factor authentication is already enabled")
		}
		if a.TwoFactorPending == "" {
			return core.Invalid("code", "call /api/auth/2fa/setup first")
		}
		step, ok := matchTOTP(a.TwoFactorPending, code, s.cfg.Now(), 0)
		if !ok {
			return core.Invalid("code", "code does not match the secret from setup")
		}
		a.TwoFactorEnabled, a.TwoFactorSecret, a.TwoFactorPending, a.TwoFactorLastStep = true, a.TwoFactorPending, "", step
		a.UpdatedAt = s.now()
		return nil
	}))
	if err != nil {
		return "", err
	}
	if _, err := s.endSessions(ctx, p.Account.ID, p.SessionID, "two-factor authentication changed"); err != nil {
		return "", err
	}
	return msg2FAEnabled, nil
}

// Disable2FA turns 2FA off after proof by password and a fresh code.
func (s *Service) Disable2FA(ctx context.Context, p Principal, password, code string) (string, error) {
	if err := requireJWT(p, "change two-factor authentication"); err != nil {
		return "", err
	}
	if err := core.FirstError(core.Required("password", password), core.ValidateCode("code", code)); err != nil {
		return "", err
	}
	if !p.Account.TwoFactorEnabled {
		return "", core.E(core.CodeConflict, "two-factor authentication is not enabled")
	}
	if len(password) > core.MaxPasswordLength || s.hasher.Verify(ctx, p.Account.PasswordHash, password) != nil {
		return "", errInvalidCode
	}
	_, err := s.store.UpdateAccount(audit.Own(ctx), p.Account.ID, audit.Track(ctx, func(a *storage.Account) error {
		if !a.TwoFactorEnabled {
			return core.E(core.CodeConflict, "two-factor authentication is not enabled")
		}
		if _, ok := matchTOTP(a.TwoFactorSecret, code, s.cfg.Now(), a.TwoFactorLastStep); !ok {
			return errInvalidCode
		}
		a.TwoFactorEnabled, a.TwoFactorSecret, a.TwoFactorPending, a.TwoFactorLastStep = false, "", "", 0
		a.UpdatedAt = s.now()
		return nil
	}))
	if err != nil {
		return "", err
	}
	if _, err := s.endSessions(ctx, p.Account.ID, p.SessionID, "two-factor authentication changed"); err != nil {
		return "", err
	}
	return msg2FADisabled, nil
}

// View is the full account record of SPEC 2 as GET /api/auth/me answers it.
type View struct {
	Account          storage.Account
	Plan             plans.Plan
	ApplicationCount int
	// APICallsUsed and APICallsResetAt reflect the current month even when the stored
	// counter has not been reset yet.
	APICallsUsed    int64
	APICallsResetAt time.Time
}

// Me returns the caller's full account view.
func (s *Service) Me(ctx context.Context, p Principal) (View, error) {
	return s.view(ctx, p.Account)
}

func (s *Service) view(ctx context.Context, a storage.Account) (View, error) {
	v := View{Account: a, Plan: s.plans.MustGet(a.Plan), APICallsUsed: a.APICallsUsed, APICallsResetAt: a.APICallsResetAt}
	if now := s.now(); !v.APICallsResetAt.After(now) {
		v.APICallsUsed, v.APICallsResetAt = 0, usage.PeriodEnd(now)
	}
	if s.apps != nil {
		n, err := s.apps.CountApps(ctx, a.ID)
		if err != nil {
			return View{}, fmt.Errorf("accounts: count apps: %w", err)
		}
		v.ApplicationCount = n
	}
	return v, nil
}

// Plans lists the catalogue.
func (s *Service) Plans() []plans.Plan { return s.plans.All() }

// SelectPlan lets an owner move themselves to the free plan; paid plans are assigned by an
// administrator.
func (s *Service) SelectPlan(ctx context.Context, p Principal, name string) (View, error) {
	if err := core.Required("plan", name); err != nil {
		return View{}, err
	}
	plan, ok := s.plans.Get(name)
	if !ok {
		return View{}, core.Invalid("plan", "plan must be one of free, pro, business")
	}
	if plan.Name != plans.Free {
		return View{}, core.E(core.CodeForbidden, "the %s plan is assigned by an administrator", plan.Name)
	}
	a, err := s.updatePlan(audit.Own(ctx), p.Account.ID, audit.Track(ctx, func(a *storage.Account) error {
		a.Plan = plan.Name
		a.UpdatedAt = s.now()
		return nil
	}))
	if err != nil {
		return View{}, fmt.Errorf("accounts: select plan: %w", err)
	}
	return s.view(ctx, a)
}
