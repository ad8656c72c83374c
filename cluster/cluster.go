package cluster

import (
	"context"
	"errors"
	"time"
)

// ErrUnavailable wraps errors caused by the engine being unreachable.
var ErrUnavailable = errors.New("cluster: unavailable")

// Decision is a rate limiter's answer for one hit.
type Decision struct {
	Allowed bool
	// Remaining is how many more hits the window allows after this one.
	Remaining int
	// RetryAfter is, for a refused hit, how long until the oldest counted hit leaves the
	// window and one more hit would be allowed.
	RetryAfter time.Duration
}

// RateLimiter counts hits per key in a sliding window. The count is exact: with limit N
// and window W, a hit is allowed if and only if fewer than N allowed hits of the same key
// happened in the W before it. Refused hits are not counted. Keys are any strings.
type RateLimiter interface {
	Allow(ctx context.Context, key string, limit int, window time.Duration) (Decision, error)
}

// OneTimeTokens stores short-lived values that can be taken once (nonces, pending codes).
type OneTimeTokens interface {
	// PutToken stores value under key for ttl, replacing what was there.
	PutToken(ctx context.Context, key, value string, ttl time.Duration) error
	// TakeToken atomically reads and deletes key. ok is false when the key is absent or
	// expired. Of concurrent takers of one key exactly one gets ok.
	TakeToken(ctx context.Context, key string) (value string, ok bool, err error)
}

// Revocations is a list of revoked identifiers (JWT ids) kept until they would have
// expired anyway.
type Revocations interface {
	// Revoke marks id revoked until the given time; after it the entry may be forgotten.
	Revoke(ctx context.Context, id string, until time.Time) error
	// IsRevoked reports whether id is revoked now.
	IsRevoked(ctx context.Context, id string) (bool, error)
}

// Counters are shared integer counters grouped under a name, for figures bumped on every
// request and written to storage in batches (the monthly API calls of an account).
type Counters interface {
	// AddCount adds delta to field of group and answers the field's new value.
	AddCount(ctx context.Context, group, field string, delta int64) (int64, error)
	// TakeCounts atomically reads and empties group, answering field → value. A concurrent
	// AddCount lands either in this take or in the group for the next one: none is lost or
	// taken twice.
	TakeCounts(ctx context.Context, group string) (map[string]int64, error)
}

// Engine is everything a node coordinates with its peers through.
type Engine interface {
	RateLimiter
	OneTimeTokens
	Revocations
	Counters
	// Name says which engine this is ("memory", "redis"), for logs.
	Name() string
	// Ping reports whether the engine answers, for readiness checks.
	Ping(ctx context.Context) error
	// Close stops the engine's background work and releases its connections.
	Close() error
}
