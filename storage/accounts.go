package storage

import (
	"context"
	"time"
)

// Account roles.
const (
	RoleUser  = "user"
	RoleAdmin = "admin"
)

// Account is a software owner's account (SPEC 2, Account), with what 2FA, email
// verification, password reset and the API key need. Secrets are never stored in clear:
// PasswordHash is a slow hash, APIKeyHash a SHA-256 of the key.
type Account struct {
	ID       string
	Username string
	Email    string
	// PasswordHash is a PHC-encoded argon2id hash.
	PasswordHash string `audit:"password,secret"`
	Role         string
	Plan         string

	EmailVerified bool

	// TwoFactorEnabled says whether login needs a TOTP code. TwoFactorSecret is the active
	// secret; TwoFactorPending is the secret handed out by setup and not yet confirmed. The
	// engines store both sealed (see Sealer) and answer them in clear.
	TwoFactorEnabled bool
	TwoFactorSecret  string `audit:"twoFactorSecret,secret"`
	TwoFactorPending string `audit:"twoFactorPending,secret"`
	// TwoFactorLastStep is the TOTP time step of the last accepted code; a code of that
	// step or an earlier one is refused, so a code works once only.
	TwoFactorLastStep int64 `audit:"-"`
	// APIKeyHash is the SHA-256 (hex) of the full API key; APIKeyPrefix and APIKeyLast4 keep
	// what the masked form shows.
	APIKeyHash   string `audit:"apiKey,secret"`
	APIKeyPrefix string `audit:"-"`
	APIKeyLast4  string `audit:"-"`
	// TokensValidAfter revokes every JWT of the account issued before it (password change
	// or reset). Zero means no such cut-off.
	TokensValidAfter time.Time

	// APICallsUsed counts client API calls of the account's apps in the current month;
	// APICallsResetAt is when the counter starts again.
	APICallsUsed    int64     `audit:"-"`
	APICallsResetAt time.Time `audit:"-"`
	LastLoginAt     time.Time `audit:"-"`
	CreatedAt       time.Time `audit:"-"`
	UpdatedAt       time.Time `audit:"-"`
}

// Purposes of account tokens.
const (
	TokenVerifyEmail   = "verify_email"
	TokenResetPassword = "reset_password"
)

// AccountToken is a mailed single-use token (email verification, password reset). Only
// its hash is stored.
type AccountToken struct {
	Hash      string
	AccountID string
	Purpose   string
	ExpiresAt time.Time
	CreatedAt time.Time
}

// AccountQuery selects accounts for the administration list.
type AccountQuery struct {
	// Search matches a case-insensitive substring of the username or email.
	Search string
	Page   Page
}

// AccountStore persists accounts and their mailed tokens.
type AccountStore interface {
	// CreateAccount inserts a new account. ErrConflict when the username or the email is
	// taken, compared case-insensitively.
	CreateAccount(ctx context.Context, a Account) error
	// GetAccount reads one account by id.
	GetAccount(ctx context.Context, id string) (Account, error)
	// GetAccountByUsername and GetAccountByEmail compare case-insensitively.
	GetAccountByUsername(ctx context.Context, username string) (Account, error)
	GetAccountByEmail(ctx context.Context, email string) (Account, error)
	// GetAccountByAPIKeyHash finds the account whose current API key has this hash; the
	// empty hash is never found.
	GetAccountByAPIKeyHash(ctx context.Context, hash string) (Account, error)
	// UpdateAccount reads the account, applies fn and writes the result atomically: no
	// concurrent update of the same account is lost. fn may be called more than once and
	// must not have side effects; an error from fn aborts the update and is returned
	// matchable with errors.Is/As.
	// The ID and CreatedAt of the result are kept from the stored record; UpdatedAt is set
	// by the caller inside fn if wanted. ErrConflict when the new username/email is taken.
	UpdateAccount(ctx context.Context, id string, fn func(*Account) error) (Account, error)
	// DeleteAccount removes the account and its tokens.
	DeleteAccount(ctx context.Context, id string) error
	// ListAccounts answers one page ordered by creation time (oldest first) and the total.
	ListAccounts(ctx context.Context, q AccountQuery) ([]Account, int, error)

	// CreateAccountToken stores a mailed token. ErrConflict when the hash exists;
	// ErrNotFound when no account has the token's AccountID.
	CreateAccountToken(ctx context.Context, t AccountToken) error
	// ConsumeAccountToken deletes and returns the token with this purpose and hash if it
	// has not expired at now (a token is valid strictly before ExpiresAt). Of concurrent consumers of one token exactly one succeeds;
	// the others, and any caller of an expired or unknown token, get ErrNotFound.
	ConsumeAccountToken(ctx context.Context, purpose, hash string, now time.Time) (AccountToken, error)
	// DeleteAccountTokens removes every token of the account with the purpose; none is no error.
	DeleteAccountTokens(ctx context.Context, accountID, purpose string) error
}
