package storage

import (
	"context"
	"time"
)

// RevocationStore keeps the dashboard JWTs revoked by a logout until they would have
// expired anyway. It is the durable record: the cluster engine only caches it, so a
// logged-out token stays refused across a restart of Redis (or of the embedded node).
type RevocationStore interface {
	// RevokeToken records the token id revoked until expiresAt (the token's own expiry).
	// Revoking an id again keeps the later of the two expiries.
	RevokeToken(ctx context.Context, id string, expiresAt time.Time) error
	// IsTokenRevoked reports whether id is revoked at now: recorded with an expiry after now.
	IsTokenRevoked(ctx context.Context, id string, now time.Time) (bool, error)
	// PurgeRevocations removes every revocation whose expiry is at or before now (the token
	// is refused by its own expiry then) and answers how many it removed.
	PurgeRevocations(ctx context.Context, now time.Time) (int, error)
}
