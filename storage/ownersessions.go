package storage

import (
	"context"
	"time"
)

// OwnerSession is one signed-in dashboard session of an owner (issue 22, 25): the JWTs the
// server issues carry its id, so deleting the session refuses them on every node at once.
// RefreshHash is the SHA-256 (hex) of the refresh secret held in the browser's HttpOnly
// cookie; the secret itself is never stored.
type OwnerSession struct {
	ID          string
	AccountID   string
	RefreshHash string
	// UserAgent and IP are what the sign-in came from (IP is updated on use).
	UserAgent string
	IP        string
	CreatedAt time.Time
	// LastUsedAt is updated now and then as the session is used (not on every request).
	LastUsedAt time.Time
	// AuthAt is when the owner last proved who they are in this session (sign-in or
	// re-authentication); sensitive actions need it recent.
	AuthAt time.Time
	// ExpiresAt ends the session; a refresh moves it on.
	ExpiresAt time.Time
}

// OwnerSessionChange is what UpdateOwnerSession sets; zero members are left as stored.
type OwnerSessionChange struct {
	LastUsedAt time.Time
	IP         string
	AuthAt     time.Time
	ExpiresAt  time.Time
}

// OwnerSessionStore persists owner sessions.
type OwnerSessionStore interface {
	// CreateOwnerSession inserts a session; ErrConflict when the id exists.
	CreateOwnerSession(ctx context.Context, s OwnerSession) error
	// GetOwnerSession reads one session by id, expired or not; ErrNotFound when none.
	GetOwnerSession(ctx context.Context, id string) (OwnerSession, error)
	// UpdateOwnerSession sets the non-zero members of ch; ErrNotFound when no session has the id.
	UpdateOwnerSession(ctx context.Context, id string, ch OwnerSessionChange) error
	// ListOwnerSessions answers the account's sessions that have not expired at now, the
	// most recently used first.
	ListOwnerSessions(ctx context.Context, accountID string, now time.Time) ([]OwnerSession, error)
	// DeleteOwnerSession removes one session of the account; ErrNotFound when the account
	// has no session with that id (another account's session is never touched).
	DeleteOwnerSession(ctx context.Context, accountID, id string) error
	// DeleteOwnerSessions removes every session of the account except keepID ("" keeps
	// none) and answers how many it removed.
	DeleteOwnerSessions(ctx context.Context, accountID, keepID string) (int, error)
	// PurgeOwnerSessions removes the sessions expired at or before now.
	PurgeOwnerSessions(ctx context.Context, now time.Time) (int, error)
}
