package storage

import (
	"context"
	"time"
)

// App is an owner's application (SPEC 2, Application). The secret is stored as a SHA-256
// hash (client init finds the app by it) and its last 6 characters for the masked form.
type App struct {
	ID          string
	AccountID   string
	Name        string
	Description string
	Version     string
	Enabled     bool
	Paused      bool
	AntiDebug   bool
	AntiVM      bool `audit:"antiVM"`
	LockHwid    bool
	LockIP      bool
	LockPcName  bool
	SecretHash  string `audit:"secret,secret"`
	SecretLast6 string `audit:"-"`
	// SessionTimeout is the idle timeout of the app's client sessions in seconds; 0 means
	// the server's default.
	SessionTimeout int
	// PlainFiles turns off the encryption of client file downloads for this app (the
	// server-wide switch can only turn it off too).
	PlainFiles bool
	// SigningKey is the app's Ed25519 private key (the base64 of its 32-byte seed) that
	// signs client responses and license files; "" until one is made (core/licensing).
	// The engines seal it at rest like the other secrets they read back.
	SigningKey string `audit:"signingKey,secret"`
	// SignResponses adds X-Signature-Ed25519 and X-Signature-Timestamp to every client
	// API response of the app.
	SignResponses bool
	// GraceSeconds is how long after expiry a user or license may still sign in (0: none).
	GraceSeconds int
	// LicenseFileDays is how many days an offline license file may be used before the
	// program must check in online again (0: the default of 30).
	LicenseFileDays int
	// Portal is the app's buyer portal (issue 23): whether /portal/<appId> is served and
	// which buyer actions it offers (core/commerce reads it at every portal request).
	Portal    AppPortal
	CreatedAt time.Time `audit:"-"`
	UpdatedAt time.Time `audit:"-"`
}

// AppPortal is an app's buyer portal settings: Enabled serves the portal, the switches
// turn each buyer action on or off. The JSON names are the API's (and the audit entry's).
type AppPortal struct {
	Enabled bool `json:"enabled"`
	PortalSwitches
}

// AppCounts are the per-app record counts of the application list (SPEC 4.2).
type AppCounts struct {
	Users     int
	Licenses  int
	Sessions  int
	Variables int
	Files     int
	Tokens    int
	Rules     int
}

// AppStore persists applications. Names are unique per account, compared case-insensitively.
type AppStore interface {
	// CreateApp inserts an app. ErrConflict when the account has an app of that name.
	CreateApp(ctx context.Context, a App) error
	// GetApp reads an app of the account; another account's app is ErrNotFound.
	GetApp(ctx context.Context, accountID, id string) (App, error)
	// GetAppByID reads an app whatever its account (the client API knows an app from its
	// session, not its owner).
	GetAppByID(ctx context.Context, id string) (App, error)
	// GetAppBySecretHash finds the app whose current secret has this hash (client init).
	GetAppBySecretHash(ctx context.Context, hash string) (App, error)
	// ListApps answers every app of the account, oldest first.
	ListApps(ctx context.Context, accountID string) ([]App, error)
	// CountApps counts the account's apps.
	CountApps(ctx context.Context, accountID string) (int, error)
	// UpdateApp applies fn atomically to the account's app (see UpdateAccount).
	// ErrConflict when the new name is taken within the account.
	UpdateApp(ctx context.Context, accountID, id string, fn func(*App) error) (App, error)
	// DeleteApp removes the app and every record that belongs to it, in every collection.
	DeleteApp(ctx context.Context, accountID, id string) error
	// CountAppRecords counts the records of each kind that belong to the app.
	CountAppRecords(ctx context.Context, appID string) (AppCounts, error)
}

// AppStats are the figures of an application's stats (SPEC 4.2).
type AppStats struct {
	Users       int
	ActiveUsers int // enabled, not banned, not expired at Now
	BannedUsers int
	Licenses    int
	// UsedLicenses have UsedCount > 0.
	UsedLicenses int
	// LoginsSinceDay and LoginsSinceWeek count users whose last login is at or after the
	// given instants.
	LoginsSinceDay  int
	LoginsSinceWeek int
	// NewUsers counts users created at or after AppStatsQuery.NewSince (0 when it is zero).
	NewUsers int
}

// AppStatsQuery gives the instants the stats are judged at.
type AppStatsQuery struct {
	Now, DayStart, WeekStart time.Time
	// NewSince, when set, is the start of the period whose new users are counted.
	NewSince time.Time
}

// AppStatsStore computes application stats with counting queries (no records loaded).
type AppStatsStore interface {
	AppStats(ctx context.Context, appID string, q AppStatsQuery) (AppStats, error)
}
