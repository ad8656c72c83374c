package accounts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/storage"
)

// Passkeys (issue 25): WebAuthn credentials of the owner's account, through go-webauthn.
// The relying party id is the public URL's host name and its only origin the public URL's
// scheme and host, so a passkey made for this server answers no other site. A ceremony's
// challenge is stored (storage.PasskeyStore) for PasskeyChallengeTTL and deleted when it is
// finished, so any node of a cluster finishes what another began and a response replayed
// finds no challenge. Every ceremony requires user verification: a passkey is a second
// factor in itself, so a sign-in with one alone needs no password and no TOTP code.
const (
	// PasskeyChallengeTTL is how long a begun ceremony can be finished.
	PasskeyChallengeTTL = 5 * time.Minute
	// MaxPasskeys bounds an account's passkeys.
	MaxPasskeys = 20
	// maxPasskeyName bounds a passkey's name (characters).
	maxPasskeyName = 64
	// maxCredentialJSON bounds a browser's ceremony response.
	maxCredentialJSON = 64 << 10
)

// Purposes of a stored ceremony challenge.
const (
	passkeyRegister = "register"
	passkeyLogin    = "login"
	passkeyReauth   = "reauth"
)

var (
	errPasskeyCeremony = core.E(core.CodeUnauthorized, "this passkey ceremony expired or was finished already: begin again")
	errPasskeyRefused  = core.E(core.CodeUnauthorized, "passkey not accepted")
)

// PasskeyAssertion is a browser's answer to a sign-in or reauthentication ceremony: the
// challenge it answers and the PublicKeyCredential as JSON.
type PasskeyAssertion struct {
	ChallengeID string
	Credential  []byte
}

// PasskeyCeremony is a begun ceremony: its id (sent back with the answer) and the options
// for navigator.credentials (the JSON of protocol.CredentialCreation or
// protocol.CredentialAssertion: {"publicKey": ...}).
type PasskeyCeremony struct {
	ChallengeID string
	Options     any
	ExpiresAt   time.Time
}

// PasskeyInfo is a passkey as the account page lists it.
type PasskeyInfo struct {
	ID         string
	Name       string
	CreatedAt  time.Time
	LastUsedAt time.Time
	// BackedUp tells a synced passkey (a password manager's, a phone's) from one bound to
	// a single device.
	BackedUp bool
}

// passkeyUser is an account as go-webauthn sees it: the user handle is the account id.
type passkeyUser struct {
	account storage.Account
	creds   []webauthn.Credential
}

func (u passkeyUser) WebAuthnID() []byte                         { return []byte(u.account.ID) }
func (u passkeyUser) WebAuthnName() string                       { return u.account.Username }
func (u passkeyUser) WebAuthnDisplayName() string                { return u.account.Username }
func (u passkeyUser) WebAuthnCredentials() []webauthn.Credential { return u.creds }

// relyingParty builds the WebAuthn relying party from the public URL setting. A host that
// is an IP address cannot be a relying party id (browsers refuse it).
func (s *Service) relyingParty() (*webauthn.WebAuthn, error) {
	u, err := url.Parse(s.cfg.PublicURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" {
		return nil, core.E(core.CodeConflict, "passkeys need the public URL setting (KEYWARD_PUBLIC_URL)")
	}
	if net.ParseIP(u.Hostname()) != nil {
		return nil, core.E(core.CodeConflict, "passkeys need a public URL with a host name, not an IP address (browsers refuse an address as relying party): set KEYWARD_PUBLIC_URL")
	}
	wa, err := webauthn.New(&webauthn.Config{RPID: u.Hostname(), RPDisplayName: "Keyward", RPOrigins: []string{u.Scheme + "://" + u.Host}})
	if err != nil {
		return nil, fmt.Errorf("accounts: passkeys: %w", err)
	}
	return wa, nil
}

// passkeyUserOf loads the account's passkeys as go-webauthn credentials.
func (s *Service) passkeyUserOf(ctx context.Context, a storage.Account) (passkeyUser, []storage.Passkey, error) {
	stored, err := s.store.ListPasskeys(ctx, a.ID)
	if err != nil {
		return passkeyUser{}, nil, fmt.Errorf("accounts: passkeys: %w", err)
	}
	u := passkeyUser{account: a}
	for _, p := range stored {
		var c webauthn.Credential
		if err := json.Unmarshal(p.Credential, &c); err != nil {
			return passkeyUser{}, nil, fmt.Errorf("accounts: passkey %s: %w", p.ID, err)
		}
		u.creds = append(u.creds, c)
	}
	return u, stored, nil
}

// ceremonyFor is the preamble of a ceremony begun for a known account: the relying party
// and the account as go-webauthn sees it, with its passkeys.
func (s *Service) ceremonyFor(ctx context.Context, a storage.Account) (*webauthn.WebAuthn, passkeyUser, error) {
	wa, err := s.relyingParty()
	if err != nil {
		return nil, passkeyUser{}, err
	}
	user, _, err := s.passkeyUserOf(ctx, a)
	if err != nil {
		return nil, passkeyUser{}, err
	}
	return wa, user, nil
}

// beginAssertion begins a sign-in or reauthentication ceremony that user's passkeys
// answer, with user verification, and stores it for purpose.
func (s *Service) beginAssertion(ctx context.Context, wa *webauthn.WebAuthn, user passkeyUser, purpose string) (PasskeyCeremony, error) {
	assertion, session, err := wa.BeginLogin(user, webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		return PasskeyCeremony{}, fmt.Errorf("accounts: begin passkey %s: %w", purpose, err)
	}
	return s.saveChallenge(ctx, purpose, user.account.ID, session, assertion)
}

// saveChallenge stores a begun ceremony.
func (s *Service) saveChallenge(ctx context.Context, purpose, accountID string, session *webauthn.SessionData, options any) (PasskeyCeremony, error) {
	data, err := json.Marshal(session)
	if err != nil {
		return PasskeyCeremony{}, fmt.Errorf("accounts: passkey challenge: %w", err)
	}
	now := s.now()
	c := storage.WebAuthnChallenge{ID: secrets.Random(24), AccountID: accountID, Purpose: purpose, Data: data,
		ExpiresAt: now.Add(PasskeyChallengeTTL), CreatedAt: now}
	if err := s.store.SaveWebAuthnChallenge(ctx, c); err != nil {
		return PasskeyCeremony{}, fmt.Errorf("accounts: passkey challenge: %w", err)
	}
	return PasskeyCeremony{ChallengeID: c.ID, Options: options, ExpiresAt: c.ExpiresAt}, nil
}

// takeChallenge consumes a stored ceremony (it works once).
func (s *Service) takeChallenge(ctx context.Context, purpose, id string) (storage.WebAuthnChallenge, webauthn.SessionData, error) {
	if id == "" || len(id) > 100 {
		return storage.WebAuthnChallenge{}, webauthn.SessionData{}, core.Invalid("challengeId", "challengeId is required")
	}
	c, err := s.store.ConsumeWebAuthnChallenge(ctx, id, purpose, s.now())
	if errors.Is(err, storage.ErrNotFound) {
		return c, webauthn.SessionData{}, errPasskeyCeremony
	} else if err != nil {
		return c, webauthn.SessionData{}, fmt.Errorf("accounts: passkey challenge: %w", err)
	}
	var sd webauthn.SessionData
	if err := json.Unmarshal(c.Data, &sd); err != nil {
		return c, sd, fmt.Errorf("accounts: passkey challenge: %w", err)
	}
	return c, sd, nil
}

func checkCredentialJSON(b []byte) error {
	if len(b) == 0 {
		return core.Invalid("credential", "credential is required: the PublicKeyCredential as JSON")
	}
	if len(b) > maxCredentialJSON {
		return core.Invalid("credential", "credential must be at most %d bytes", maxCredentialJSON)
	}
	return nil
}

func passkeyName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "Passkey", nil
	}
	if utf8.RuneCountInString(name) > maxPasskeyName || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", core.Invalid("name", "name must be at most %d characters, without control characters", maxPasskeyName)
	}
	return name, nil
}

// BeginPasskeyRegistration starts adding a passkey to the caller's account: a discoverable
// credential (so it signs in without a username) with user verification, no attestation,
// excluding the authenticators that hold one of the account's passkeys already.
func (s *Service) BeginPasskeyRegistration(ctx context.Context, p Principal) (PasskeyCeremony, error) {
	if err := requireJWT(p, "add a passkey"); err != nil {
		return PasskeyCeremony{}, err
	}
	wa, user, err := s.ceremonyFor(ctx, p.Account)
	if err != nil {
		return PasskeyCeremony{}, err
	}
	if len(user.creds) >= MaxPasskeys {
		return PasskeyCeremony{}, core.E(core.CodeConflict, "an account has at most %d passkeys: remove one first", MaxPasskeys)
	}
	exclude := make([]protocol.CredentialDescriptor, 0, len(user.creds))
	for i := range user.creds {
		exclude = append(exclude, user.creds[i].Descriptor())
	}
	creation, session, err := wa.BeginRegistration(user,
		webauthn.WithAuthenticatorSelection(protocol.AuthenticatorSelection{ResidentKey: protocol.ResidentKeyRequirementRequired,
			RequireResidentKey: protocol.ResidentKeyRequired(), UserVerification: protocol.VerificationRequired}),
		webauthn.WithConveyancePreference(protocol.PreferNoAttestation), webauthn.WithExclusions(exclude))
	if err != nil {
		return PasskeyCeremony{}, fmt.Errorf("accounts: begin passkey registration: %w", err)
	}
	return s.saveChallenge(ctx, passkeyRegister, p.Account.ID, session, creation)
}

// FinishPasskeyRegistration checks the browser's attestation against the ceremony and
// stores the passkey under name. The first passkey of an account without recovery codes
// makes its ten codes, answered here once.
func (s *Service) FinishPasskeyRegistration(ctx context.Context, p Principal, challengeID, name string, credential []byte) (PasskeyInfo, []string, error) {
	if err := requireJWT(p, "add a passkey"); err != nil {
		return PasskeyInfo{}, nil, err
	}
	name, err := passkeyName(name)
	if err != nil {
		return PasskeyInfo{}, nil, err
	}
	if err := checkCredentialJSON(credential); err != nil {
		return PasskeyInfo{}, nil, err
	}
	wa, err := s.relyingParty()
	if err != nil {
		return PasskeyInfo{}, nil, err
	}
	ch, session, err := s.takeChallenge(ctx, passkeyRegister, challengeID)
	if err != nil {
		return PasskeyInfo{}, nil, err
	}
	if ch.AccountID != p.Account.ID {
		return PasskeyInfo{}, nil, errPasskeyCeremony
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(credential)
	if err != nil {
		return PasskeyInfo{}, nil, core.Invalid("credential", "not a passkey registration: %s", webauthnReason(err))
	}
	user, _, err := s.passkeyUserOf(ctx, p.Account)
	if err != nil {
		return PasskeyInfo{}, nil, err
	}
	cred, err := wa.CreateCredential(user, session, parsed)
	if err != nil {
		s.log.Warn("passkey registration refused", "accountId", p.Account.ID, "err", webauthnReason(err))
		return PasskeyInfo{}, nil, core.Invalid("credential", "passkey registration refused: %s", webauthnReason(err))
	}
	stored, err := json.Marshal(cred)
	if err != nil {
		return PasskeyInfo{}, nil, fmt.Errorf("accounts: passkey: %w", err)
	}
	pk := storage.Passkey{ID: "pk_" + secrets.Random(16), AccountID: p.Account.ID, Name: name, CredentialID: cred.ID,
		Credential: stored, CreatedAt: s.now()}
	// The passkey's write carries its audit entry (a creation: its id and members).
	audit.Created(ctx, passkeyInfo(pk, cred))
	if err := s.store.CreatePasskey(audit.Own(ctx), pk); errors.Is(err, storage.ErrConflict) {
		return PasskeyInfo{}, nil, core.E(core.CodeConflict, "this passkey is registered already")
	} else if err != nil {
		return PasskeyInfo{}, nil, fmt.Errorf("accounts: store passkey: %w", err)
	}
	s.log.Info("passkey added", "accountId", p.Account.ID, "passkey", pk.ID, "backedUp", cred.Flags.BackupState)
	codes, err := s.EnsureRecoveryCodes(ctx, p)
	if err != nil {
		return PasskeyInfo{}, nil, err
	}
	return passkeyInfo(pk, cred), codes, nil
}

func passkeyInfo(p storage.Passkey, c *webauthn.Credential) PasskeyInfo {
	info := PasskeyInfo{ID: p.ID, Name: p.Name, CreatedAt: p.CreatedAt, LastUsedAt: p.LastUsedAt}
	if c != nil {
		info.BackedUp = c.Flags.BackupState
	}
	return info
}

// ListPasskeys answers the caller's passkeys, oldest first.
func (s *Service) ListPasskeys(ctx context.Context, p Principal) ([]PasskeyInfo, error) {
	stored, err := s.store.ListPasskeys(ctx, p.Account.ID)
	if err != nil {
		return nil, fmt.Errorf("accounts: passkeys: %w", err)
	}
	out := make([]PasskeyInfo, 0, len(stored))
	for _, pk := range stored {
		var c webauthn.Credential
		_ = json.Unmarshal(pk.Credential, &c) // written by FinishPasskeyRegistration; a bad record lists without its flag
		out = append(out, passkeyInfo(pk, &c))
	}
	return out, nil
}

// RenamePasskey names one of the caller's passkeys.
func (s *Service) RenamePasskey(ctx context.Context, p Principal, id, name string) error {
	if err := requireJWT(p, "rename a passkey"); err != nil {
		return err
	}
	name, err := passkeyName(name)
	if err != nil {
		return err
	}
	if err := s.store.RenamePasskey(audit.Own(ctx), p.Account.ID, id, name); errors.Is(err, storage.ErrNotFound) {
		return core.E(core.CodeNotFound, "no such passkey")
	} else if err != nil {
		return fmt.Errorf("accounts: rename passkey: %w", err)
	}
	return nil
}

// DeletePasskey removes one of the caller's passkeys (the edge asks for a recent proof of
// identity first).
func (s *Service) DeletePasskey(ctx context.Context, p Principal, id string) error {
	if err := requireJWT(p, "remove a passkey"); err != nil {
		return err
	}
	if err := s.store.DeletePasskey(audit.Own(ctx), p.Account.ID, id); errors.Is(err, storage.ErrNotFound) {
		return core.E(core.CodeNotFound, "no such passkey")
	} else if err != nil {
		return fmt.Errorf("accounts: remove passkey: %w", err)
	}
	s.log.Info("passkey removed", "accountId", p.Account.ID, "passkey", id)
	return nil
}

// BeginPasskeyLogin starts a sign-in with a passkey. Without a username any of this
// server's passkeys may answer (the browser offers the discoverable ones); with one, the
// options list that account's passkeys. A username no account has, or one without
// passkeys, gets the discoverable options: the answer does not tell whether it exists.
func (s *Service) BeginPasskeyLogin(ctx context.Context, username string) (PasskeyCeremony, error) {
	wa, err := s.relyingParty()
	if err != nil {
		return PasskeyCeremony{}, err
	}
	if username != "" && len(username) <= core.MaxEmailLength {
		a, err := s.lookup(ctx, username)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return PasskeyCeremony{}, fmt.Errorf("accounts: begin passkey sign-in: %w", err)
		}
		if err == nil {
			user, _, err := s.passkeyUserOf(ctx, a)
			if err != nil {
				return PasskeyCeremony{}, err
			}
			if len(user.creds) > 0 {
				return s.beginAssertion(ctx, wa, user, passkeyLogin)
			}
		}
	}
	assertion, session, err := wa.BeginDiscoverableLogin(webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		return PasskeyCeremony{}, fmt.Errorf("accounts: begin passkey sign-in: %w", err)
	}
	return s.saveChallenge(ctx, passkeyLogin, "", session, assertion)
}

// FinishPasskeyLogin signs the owner in with a passkey's assertion: no password and no
// TOTP code (the passkey verified its user). The session, its log line and the new
// sign-in mail are those of a password sign-in.
func (s *Service) FinishPasskeyLogin(ctx context.Context, in PasskeyAssertion) (Session, error) {
	a, err := s.verifyPasskey(ctx, passkeyLogin, in, "")
	if err != nil {
		return Session{}, err
	}
	if !a.EmailVerified {
		return Session{}, errRequireVerify
	}
	a, err = s.store.UpdateAccount(ctx, a.ID, audit.Track(ctx, func(acc *storage.Account) error {
		acc.LastLoginAt = s.now()
		return nil
	}))
	if err != nil {
		return Session{}, err
	}
	s.log.Info("owner signed in with a passkey", "accountId", a.ID)
	return s.signIn(ctx, a)
}

// BeginPasskeyReauth starts a reauthentication with one of the caller's passkeys.
func (s *Service) BeginPasskeyReauth(ctx context.Context, p Principal) (PasskeyCeremony, error) {
	if p.SessionID == "" {
		return PasskeyCeremony{}, core.E(core.CodeForbidden, "an API key cannot re-authenticate")
	}
	wa, user, err := s.ceremonyFor(ctx, p.Account)
	if err != nil {
		return PasskeyCeremony{}, err
	}
	if len(user.creds) == 0 {
		return PasskeyCeremony{}, core.E(core.CodeConflict, "this account has no passkey: confirm with the password or a 2FA code")
	}
	return s.beginAssertion(ctx, wa, user, passkeyReauth)
}

// verifyPasskey consumes the ceremony in.ChallengeID names and checks the assertion
// against it: origin, relying party, challenge, user verification, signature, and the
// sign counter (one that did not move on, from an authenticator that counts, says the
// passkey may be cloned: refused, as go-webauthn flags it). want, when set, is the only
// account the passkey may belong to. The passkey's updated record is stored.
func (s *Service) verifyPasskey(ctx context.Context, purpose string, in PasskeyAssertion, want string) (storage.Account, error) {
	if err := checkCredentialJSON(in.Credential); err != nil {
		return storage.Account{}, err
	}
	wa, err := s.relyingParty()
	if err != nil {
		return storage.Account{}, err
	}
	ch, session, err := s.takeChallenge(ctx, purpose, in.ChallengeID)
	if err != nil {
		return storage.Account{}, err
	}
	if want != "" && ch.AccountID != "" && ch.AccountID != want {
		return storage.Account{}, errPasskeyRefused
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(in.Credential)
	if err != nil {
		return storage.Account{}, core.Invalid("credential", "not a passkey assertion: %s", webauthnReason(err))
	}
	var (
		account storage.Account
		cred    *webauthn.Credential
	)
	if len(session.UserID) == 0 {
		handler := func(rawID, userHandle []byte) (webauthn.User, error) {
			pk, err := s.store.GetPasskeyByCredentialID(ctx, rawID)
			if err != nil {
				return nil, err
			}
			if !bytes.Equal([]byte(pk.AccountID), userHandle) {
				return nil, errors.New("user handle of another account")
			}
			a, err := s.store.GetAccount(ctx, pk.AccountID)
			if err != nil {
				return nil, err
			}
			user, _, err := s.passkeyUserOf(ctx, a)
			account = a
			return user, err
		}
		_, cred, err = wa.ValidatePasskeyLogin(handler, session, parsed)
	} else {
		account, err = s.store.GetAccount(ctx, string(session.UserID))
		if errors.Is(err, storage.ErrNotFound) {
			return storage.Account{}, errPasskeyRefused
		} else if err != nil {
			return storage.Account{}, fmt.Errorf("accounts: passkey: %w", err)
		}
		var user passkeyUser
		if user, _, err = s.passkeyUserOf(ctx, account); err != nil {
			return storage.Account{}, err
		}
		cred, err = wa.ValidateLogin(user, session, parsed)
	}
	if err != nil {
		s.log.Warn("passkey assertion refused", "purpose", purpose, "accountId", account.ID, "err", webauthnReason(err))
		return storage.Account{}, errPasskeyRefused
	}
	if want != "" && account.ID != want {
		return storage.Account{}, errPasskeyRefused
	}
	if cred.Authenticator.CloneWarning {
		s.log.Warn("passkey sign counter did not move on: the authenticator may be cloned; refused",
			"accountId", account.ID, "counter", cred.Authenticator.SignCount)
		return storage.Account{}, errPasskeyRefused
	}
	pk, err := s.store.GetPasskeyByCredentialID(ctx, cred.ID)
	if err != nil {
		return storage.Account{}, fmt.Errorf("accounts: passkey: %w", err)
	}
	stored, err := json.Marshal(cred)
	if err != nil {
		return storage.Account{}, fmt.Errorf("accounts: passkey: %w", err)
	}
	if err := s.store.UsePasskey(ctx, pk.ID, stored, s.now()); errors.Is(err, storage.ErrNotFound) {
		return storage.Account{}, errPasskeyRefused // removed meanwhile
	} else if err != nil {
		return storage.Account{}, fmt.Errorf("accounts: passkey: %w", err)
	}
	return account, nil
}

// webauthnReason answers the library's detailed reason of a refusal, for logs and
// validation messages (it names the check that failed, never a secret).
func webauthnReason(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		if pe.DevInfo != "" {
			return pe.Details + ": " + pe.DevInfo
		}
		return pe.Details
	}
	return err.Error()
}
