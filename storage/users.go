package storage

import (
	"context"
	"time"
)

// AppUser is an end user of an application (SPEC 2, Application user).
type AppUser struct {
	ID           string
	AppID        string
	Username     string
	PasswordHash string `audit:"password,secret"`
	Email        string
	Level        int
	// ExpiresAt is when the user's access ends; zero means never.
	ExpiresAt   time.Time
	DeviceLimit int
	// Metadata is a JSON object as text ("" means {}), owner-defined.
	Metadata    string
	Enabled     bool
	Banned      bool
	BanReason   string
	HWID        string
	DisplayName string
	PCName      string
	LockedIP    string
	LastLoginIP string
	// Reset limits: at most *ResetMax resets (0 = unlimited), each at least *ResetCooldown
	// seconds after the previous one (0 = none).
	HwidResetMax      int
	HwidResetCooldown int
	IPResetMax        int
	IPResetCooldown   int
	HwidResets        int
	LastHwidResetAt   time.Time
	IPResets          int
	LastIPResetAt     time.Time
	// LicenseID is the user's active license (the subscription), "" when none.
	LicenseID string
	DiscordID string

	LastLoginAt time.Time `audit:"-"`
	CreatedAt   time.Time `audit:"-"`
	UpdatedAt   time.Time `audit:"-"`
}

// UserLogin is one login to record on a user (RecordLogins). HWID and PCName, when not
// empty, replace the user's: the device a user signs in from is recorded even where the
// app does not bind it (the client leaves them empty where the app binds them).
type UserLogin struct {
	AppID, UserID, IP string
	HWID, PCName      string
	At                time.Time
}

// User sort keys (the sortBy values of SPEC 4.3).
const (
	UserSortUsername    = "username"
	UserSortCreatedAt   = "created_at"
	UserSortLastLoginAt = "last_login_at"
	UserSortExpiresAt   = "expires_at"
)

// UserQuery selects users of one app.
type UserQuery struct {
	// Search matches a case-insensitive substring of the username or email.
	Search string
	// SortBy is one of the UserSort* keys (default created_at); Desc reverses it. Ties are
	// broken by id so pages are stable.
	SortBy string
	Desc   bool
	// Banned, when set, keeps only users with that banned flag.
	Banned *bool
	// Expired keeps only users whose ExpiresAt is set and not after Now.
	Expired bool
	// ExpiredAfter, when set, also keeps only users whose ExpiresAt is after it: with
	// Expired and Now minus the app's grace, the users in their grace period.
	ExpiredAfter time.Time
	Now          time.Time
	Page         Page
}

// UserStore persists application users. Usernames are unique per app, case-insensitively.
type UserStore interface {
	CreateUser(ctx context.Context, u AppUser) error
	// CreateUsers inserts all the users, or none: ErrConflict when a username is taken in
	// its app (or repeated in the batch), ErrNotFound when an app does not exist. Imports
	// write users this way, a batch at a time.
	CreateUsers(ctx context.Context, us []AppUser) error
	GetUser(ctx context.Context, appID, id string) (AppUser, error)
	GetUserByUsername(ctx context.Context, appID, username string) (AppUser, error)
	// GetUsers reads the app's users with the given ids in one query (the users of a
	// node's sockets of one app, revalidated together), in no particular order; ids that
	// name no user of the app are left out.
	GetUsers(ctx context.Context, appID string, ids []string) ([]AppUser, error)
	UserStandingStore
	ListUsers(ctx context.Context, appID string, q UserQuery) ([]AppUser, int, error)
	CountUsers(ctx context.Context, appID string) (int, error)
	// UpdateUser applies fn atomically (see UpdateAccount). ErrConflict on a taken username.
	UpdateUser(ctx context.Context, appID, id string, fn func(*AppUser) error) (AppUser, error)
	// RecordLogins sets LastLoginAt and LastLoginIP of each user that exists and whose
	// LastLoginAt is before the login's At, in one write; unknown users are skipped. Logins
	// that change nothing else are recorded this way, in batches, off the request path.
	// Best effort against a concurrent UpdateUser of the same user: either value may win.
	RecordLogins(ctx context.Context, logins []UserLogin) error
	// DeleteUser removes the user and its devices.
	DeleteUser(ctx context.Context, appID, id string) error
}
