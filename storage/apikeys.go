package storage

import (
	"context"
	"time"
)

// APIKey is a scoped API key of an account (issue 14): a named key limited to scopes, to
// some applications and to a lifetime. Only the SHA-256 of the key is stored; Prefix and
// Last4 keep what the masked form shows.
type APIKey struct {
	ID        string
	AccountID string
	Name      string
	Hash      string `audit:"key,secret"`
	Prefix    string `audit:"-"`
	Last4     string `audit:"-"`
	// Scopes are "resource:action" strings or the presets "read" and "full".
	Scopes []string
	// Apps restricts the key to these application ids; empty means every app.
	Apps []string
	// ExpiresAt is the end of the key's life; zero means it never expires.
	ExpiresAt time.Time
	// LastUsedAt and LastUsedIP say when and from where the key was last presented.
	LastUsedAt time.Time `audit:"-"`
	LastUsedIP string    `audit:"-"`
	CreatedAt  time.Time `audit:"-"`
	UpdatedAt  time.Time `audit:"-"`
}

// APIKeyStore persists scoped API keys. Revocation deletes the record, so that a key
// stops working on every node at the next request (nothing caches a key).
type APIKeyStore interface {
	// CreateAPIKey inserts k. ErrConflict when a key with the same id or hash exists.
	CreateAPIKey(ctx context.Context, k APIKey) error
	// GetAPIKeyByHash finds the key with this hash; the empty hash is never found.
	GetAPIKeyByHash(ctx context.Context, hash string) (APIKey, error)
	// GetAPIKey reads one key of the account.
	GetAPIKey(ctx context.Context, accountID, id string) (APIKey, error)
	// ListAPIKeys answers every key of the account, oldest first.
	ListAPIKeys(ctx context.Context, accountID string) ([]APIKey, error)
	// UpdateAPIKey writes the name, scopes, apps, expiry and UpdatedAt of the account's key
	// k.ID and answers the stored result; the other members are kept. ErrNotFound when the
	// account has no such key.
	UpdateAPIKey(ctx context.Context, k APIKey) (APIKey, error)
	// TouchAPIKey records the key's last use. A missing key is no error (it was revoked
	// meanwhile).
	TouchAPIKey(ctx context.Context, id string, at time.Time, ip string) error
	// DeleteAPIKey removes the account's key. ErrNotFound when there is none.
	DeleteAPIKey(ctx context.Context, accountID, id string) error
}
