package storage

import (
	"context"
	"time"
)

// License is a license key of an application (SPEC 2, License).
type License struct {
	ID    string
	AppID string
	// Key is unique per app, compared as stored (keys are generated upper-case).
	Key       string
	Level     int
	MaxUses   int // 0 = unlimited
	UsedCount int
	// Duration is how long access lasts from activation, in seconds (0 = no limit).
	Duration int64
	// ExpiresAt is the absolute expiry of the key itself; zero means never.
	ExpiresAt   time.Time
	Note        string
	UsedBy      string // username of the last user who activated it
	DeviceLimit int
	// MaxSeats bounds the live client sessions using the key at once, across the
	// cluster (0 = unlimited).
	MaxSeats    int
	DisplayName string
	Enabled     bool
	Banned      bool
	DiscordID   string
	ActivatedAt time.Time
	CreatedAt   time.Time `audit:"-"`
	UpdatedAt   time.Time `audit:"-"`
}

// License sort keys (the sortBy values of SPEC 4.4).
const (
	LicenseSortKey       = "key"
	LicenseSortCreatedAt = "created_at"
	LicenseSortExpiresAt = "expires_at"
	LicenseSortUsedCount = "used_count"
)

// Bulk-delete filters of licenses.
const (
	LicenseFilterUsed    = "used"
	LicenseFilterExpired = "expired"
	LicenseFilterBanned  = "banned"
)

// LicenseQuery selects licenses of one app.
type LicenseQuery struct {
	// Search matches a case-insensitive substring of the key, usedBy or note.
	Search string
	SortBy string // one of LicenseSort* (default created_at)
	Desc   bool
	// Used, when set, keeps licenses with UsedCount > 0 (true) or == 0 (false).
	Used *bool
	// Banned, when set, keeps licenses with that banned flag.
	Banned *bool
	// Expired keeps only licenses whose ExpiresAt is set and not after Now.
	Expired bool
	Now     time.Time
	Page    Page
}

// LicenseStore persists license keys.
type LicenseStore interface {
	// CreateLicenses inserts all the licenses in one bulk write, or none: ErrConflict when
	// any key exists in its app (nothing is left inserted then).
	CreateLicenses(ctx context.Context, ls []License) error
	GetLicense(ctx context.Context, appID, id string) (License, error)
	GetLicenseByKey(ctx context.Context, appID, key string) (License, error)
	ListLicenses(ctx context.Context, appID string, q LicenseQuery) ([]License, int, error)
	CountLicenses(ctx context.Context, appID string) (int, error)
	// UpdateLicense applies fn atomically (see UpdateAccount).
	UpdateLicense(ctx context.Context, appID, id string, fn func(*License) error) (License, error)
	DeleteLicense(ctx context.Context, appID, id string) error
	// DeleteLicenses removes the app's licenses with these ids and answers how many went.
	// Both bulk deletions are a change's own store call (issue 21): the context's audit
	// entry (AuditOutbox, the route's draft, naming the app) goes with the deletions, its
	// After's member "count" the number deleted (AuditAfterCount; an engine that stages the
	// entry before the deletions sets it once they are done).
	DeleteLicenses(ctx context.Context, appID string, ids []string) (int, error)
	// DeleteLicensesWhere removes the app's licenses matching a LicenseFilter* (expired
	// judged at now) and answers how many went.
	DeleteLicensesWhere(ctx context.Context, appID, filter string, now time.Time) (int, error)
}
