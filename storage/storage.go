package storage

import (
	"context"
	"errors"
	"time"
)

var (
	// ErrNotFound is answered when the record asked for does not exist.
	ErrNotFound = errors.New("storage: not found")
	// ErrConflict is answered when a write would break a uniqueness rule.
	ErrConflict = errors.New("storage: conflict")
	// ErrUnavailable wraps errors caused by the database being unreachable.
	ErrUnavailable = errors.New("storage: unavailable")
	// ErrLimit is answered when a write would pass a count limit it was given
	// (DeviceStore.CreateDeviceWithin); nothing was written.
	ErrLimit = errors.New("storage: limit reached")
)

// Now returns the current time as engines store it: UTC, millisecond precision.
func Now() time.Time { return Truncate(time.Now()) }

// Truncate brings t to the precision engines store (UTC milliseconds). The zero time stays zero.
func Truncate(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Millisecond)
}

// MaxPageSize is the largest page any list method returns; larger limits are refused at the edge.
const MaxPageSize = 200

// Page selects a window of a list.
type Page struct {
	Limit  int // 1..MaxPageSize; 0 means the default of 50
	Offset int
}

// Normalize fills the default limit.
func (p Page) Normalize() Page {
	if p.Limit <= 0 {
		p.Limit = 50
	}
	if p.Limit > MaxPageSize {
		p.Limit = MaxPageSize
	}
	if p.Offset < 0 {
		p.Offset = 0
	}
	return p
}

// Store is everything Keyward persists. Engines implement all of it.
type Store interface {
	AccountStore
	APIKeyStore
	AuditStore
	RevocationStore
	OwnerSessionStore
	RecoveryCodeStore
	PasskeyStore
	AppStore
	AppStatsStore
	UserStore
	LicenseStore
	DeviceStore
	TokenStore
	VariableStore
	FileStore
	RuleStore
	LogStore
	LogPurgeStore
	IntegrationStore
	DeliveryStore
	ClientSessionStore
	WSHookStore
	EventLogStore
	CommerceStore
	// Ping reports whether the database answers, for readiness checks.
	Ping(ctx context.Context) error
	// Close releases the engine's connections. It is safe to call once.
	Close() error
}
