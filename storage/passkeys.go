package storage

import (
	"context"
	"time"
)

// Passkey is one of an owner's WebAuthn credentials (issue 25). Credential is the relying
// party library's own record of it (public key, flags, authenticator, sign counter) as
// JSON, so the storage keeps what the ceremony checks without knowing its shape.
type Passkey struct {
	ID           string
	AccountID    string
	Name         string
	CredentialID []byte // the authenticator's credential id, unique across accounts
	Credential   []byte
	CreatedAt    time.Time
	LastUsedAt   time.Time // zero until the first sign-in
}

// WebAuthnChallenge is a ceremony begun and not finished: the library's session data
// (challenge, expected user, options) as JSON, kept in the database so that any node of a
// cluster can finish it, and deleted when it is used.
type WebAuthnChallenge struct {
	ID        string
	AccountID string // "" for a sign-in that names no account (discoverable passkeys)
	Purpose   string // "register", "login" or "reauth"
	Data      []byte
	ExpiresAt time.Time
	CreatedAt time.Time
}

// PasskeyStore keeps owners' passkeys and the challenges of their ceremonies.
type PasskeyStore interface {
	// CreatePasskey stores a passkey; ErrConflict when its credential id is stored already,
	// ErrNotFound when the engine can tell the account is missing.
	CreatePasskey(ctx context.Context, p Passkey) error
	// ListPasskeys answers the account's passkeys, oldest first.
	ListPasskeys(ctx context.Context, accountID string) ([]Passkey, error)
	// GetPasskeyByCredentialID answers the passkey with this credential id, or ErrNotFound.
	GetPasskeyByCredentialID(ctx context.Context, credentialID []byte) (Passkey, error)
	// UsePasskey records a sign-in: the library's updated record (its sign counter) and
	// the time; ErrNotFound when the passkey is gone.
	UsePasskey(ctx context.Context, id string, credential []byte, at time.Time) error
	// RenamePasskey names one of the account's passkeys; ErrNotFound when it has none of
	// this id.
	RenamePasskey(ctx context.Context, accountID, id, name string) error
	// DeletePasskey removes one of the account's passkeys; ErrNotFound when it has none
	// of this id.
	DeletePasskey(ctx context.Context, accountID, id string) error
	// SaveWebAuthnChallenge stores a ceremony's challenge (and drops expired ones).
	SaveWebAuthnChallenge(ctx context.Context, c WebAuthnChallenge) error
	// ConsumeWebAuthnChallenge deletes and answers the challenge of this id and purpose if
	// it has not expired at now. Of concurrent consumers exactly one succeeds; the others,
	// and any caller of an expired or unknown challenge, get ErrNotFound.
	ConsumeWebAuthnChallenge(ctx context.Context, id, purpose string, now time.Time) (WebAuthnChallenge, error)
}
