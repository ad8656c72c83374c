package apikeys

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/core/plans"
	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/storage"
)

// KeyPrefix starts every scoped key, so that the edge tells it from the account key
// ("kw_") without a lookup.
const KeyPrefix = "kws_"

// CodeScopeDenied refuses a scoped key outside its scopes or applications (403).
const CodeScopeDenied core.Code = "SCOPE_DENIED"

// Limits of scoped keys per account, by plan (documented in docs/API.md).
var maxKeysByPlan = map[string]int{plans.Free: 2, plans.Pro: 10, plans.Business: 50}

// MaxKeys answers how many scoped keys an account on the plan may hold.
func MaxKeys(plan string) int {
	if n, ok := maxKeysByPlan[strings.ToLower(plan)]; ok {
		return n
	}
	return maxKeysByPlan[plans.Free]
}

// touchEvery bounds how often a key's last use is written for the same address.
const touchEvery = time.Minute

// MaxNameLength bounds a key's name.
const MaxNameLength = 64

// Store is what the service keeps keys in.
type Store interface {
	storage.APIKeyStore
	GetAccount(ctx context.Context, id string) (storage.Account, error)
	GetApp(ctx context.Context, accountID, id string) (storage.App, error)
}

// Service manages and authenticates scoped keys.
type Service struct {
	store Store
	now   func() time.Time
}

// New makes the service; now defaults to time.Now.
func New(store Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, now: now}
}

// Key is an authenticated scoped key with its grants expanded.
type Key struct {
	storage.APIKey
	Grants Grants
}

// AllowsApp reports whether the key may touch the app (an unrestricted key touches all).
func (k Key) AllowsApp(appID string) bool {
	return len(k.Apps) == 0 || slices.Contains(k.Apps, appID)
}

// Masked is the read form of a key: its prefix and last 4 characters.
func Masked(k storage.APIKey) string { return k.Prefix + "..." + k.Last4 }

// Input is a key's writable members; nil leaves a member as it is on update.
type Input struct {
	Name   *string
	Scopes *[]string
	Apps   *[]string
	// ExpiresAt: a nil pointer keeps the expiry, a zero time removes it.
	ExpiresAt *time.Time
}

var (
	errBadKey  = core.E(core.CodeUnauthorized, "invalid API key")
	errExpired = core.E(core.CodeUnauthorized, "API key expired")
)

// apply validates in onto k.
func (s *Service) apply(ctx context.Context, accountID string, k *storage.APIKey, in Input, creating bool) error {
	if in.Name != nil || creating {
		name := ""
		if in.Name != nil {
			name = strings.TrimSpace(*in.Name)
		}
		if name == "" || len([]rune(name)) > MaxNameLength {
			return &core.Error{Code: core.CodeValidation, Field: "name", Message: fmt.Sprintf("name must be 1 to %d characters", MaxNameLength)}
		}
		k.Name = name
	}
	if in.Scopes != nil || creating {
		var scopes []string
		if in.Scopes != nil {
			scopes = *in.Scopes
		}
		if len(scopes) == 0 {
			return &core.Error{Code: core.CodeValidation, Field: "scopes", Message: "scopes must name at least one scope, or a preset (read, full)"}
		}
		var clean []string
		for _, sc := range scopes {
			sc = strings.ToLower(strings.TrimSpace(sc))
			if !ValidScope(sc) {
				return &core.Error{Code: core.CodeValidation, Field: "scopes", Message: fmt.Sprintf("unknown scope %q: use resource:action (read, create, update, delete, write) or read/full", sc)}
			}
			if !slices.Contains(clean, sc) {
				clean = append(clean, sc)
			}
		}
		k.Scopes = clean
	}
	if in.Apps != nil {
		var apps []string
		for _, id := range *in.Apps {
			if slices.Contains(apps, id) {
				continue
			}
			if _, err := s.store.GetApp(ctx, accountID, id); err != nil {
				if errors.Is(err, storage.ErrNotFound) {
					return &core.Error{Code: core.CodeValidation, Field: "apps", Message: fmt.Sprintf("no application %q on this account", id)}
				}
				return fmt.Errorf("apikeys: check app: %w", err)
			}
			apps = append(apps, id)
		}
		k.Apps = apps
	}
	if in.ExpiresAt != nil {
		at := storage.Truncate(*in.ExpiresAt)
		if !at.IsZero() && (!at.After(s.now()) || !core.WithinTimeRange(at)) {
			return &core.Error{Code: core.CodeValidation, Field: "expiresAt", Message: "expiresAt must be in the future"}
		}
		k.ExpiresAt = at
	}
	return nil
}

// Create makes a key for the account and answers it with the full key, shown this once.
func (s *Service) Create(ctx context.Context, a storage.Account, in Input) (storage.APIKey, string, error) {
	list, err := s.store.ListAPIKeys(ctx, a.ID)
	if err != nil {
		return storage.APIKey{}, "", fmt.Errorf("apikeys: count: %w", err)
	}
	if limit := MaxKeys(a.Plan); len(list) >= limit {
		return storage.APIKey{}, "", core.E(core.CodePlanLimit, "the %s plan allows %d API keys", a.Plan, limit)
	}
	now := storage.Truncate(s.now())
	k := storage.APIKey{ID: uuid.NewString(), AccountID: a.ID, CreatedAt: now, UpdatedAt: now}
	if err := s.apply(ctx, a.ID, &k, in, true); err != nil {
		return storage.APIKey{}, "", err
	}
	full := KeyPrefix + secrets.Random(32)
	k.Hash, k.Prefix, k.Last4 = secrets.Hash(full), full[:len(KeyPrefix)+4], full[len(full)-4:]
	// The key's creation carries its audit entry (the hash redacted).
	audit.Created(ctx, k)
	if err := s.store.CreateAPIKey(audit.Own(ctx), k); err != nil {
		return storage.APIKey{}, "", fmt.Errorf("apikeys: create: %w", err)
	}
	return k, full, nil
}

// List answers the account's keys, oldest first.
func (s *Service) List(ctx context.Context, accountID string) ([]storage.APIKey, error) {
	list, err := s.store.ListAPIKeys(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("apikeys: list: %w", err)
	}
	return list, nil
}

// Update changes the name, scopes, apps or expiry of the account's key.
func (s *Service) Update(ctx context.Context, accountID, id string, in Input) (storage.APIKey, error) {
	k, err := s.store.GetAPIKey(ctx, accountID, id)
	if err != nil {
		return storage.APIKey{}, keyErr(err)
	}
	before := k
	if err := s.apply(ctx, accountID, &k, in, false); err != nil {
		return storage.APIKey{}, err
	}
	k.UpdatedAt = storage.Truncate(s.now())
	// The record as written goes to the entry, which the update's write carries.
	audit.Changed(ctx, before, k)
	out, err := s.store.UpdateAPIKey(audit.Own(ctx), k)
	if err != nil {
		return storage.APIKey{}, keyErr(err)
	}
	return out, nil
}

// Revoke deletes the account's key; every node refuses it from the next request on.
func (s *Service) Revoke(ctx context.Context, accountID, id string) error {
	return keyErr(s.store.DeleteAPIKey(audit.Own(ctx), accountID, id))
}

func keyErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrNotFound):
		return core.E(core.CodeNotFound, "API key not found")
	default:
		return fmt.Errorf("apikeys: %w", err)
	}
}

// IsScoped reports whether key has the form of a scoped key.
func IsScoped(key string) bool { return strings.HasPrefix(key, KeyPrefix) }

// Authenticate finds the live key and its account, and records its use from ip.
func (s *Service) Authenticate(ctx context.Context, key, ip string) (storage.Account, Key, error) {
	if !IsScoped(key) || len(key) > 128 {
		return storage.Account{}, Key{}, errBadKey
	}
	hash := secrets.Hash(key)
	k, err := s.store.GetAPIKeyByHash(ctx, hash)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.Account{}, Key{}, errBadKey
	}
	if err != nil {
		return storage.Account{}, Key{}, fmt.Errorf("apikeys: authenticate: %w", err)
	}
	// The lookup went by hash through an index; compare once more in constant time so
	// that the answer never depends on how much of the hash matched.
	if subtle.ConstantTimeCompare([]byte(k.Hash), []byte(hash)) != 1 {
		return storage.Account{}, Key{}, errBadKey
	}
	now := s.now()
	if !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt) {
		return storage.Account{}, Key{}, errExpired
	}
	a, err := s.store.GetAccount(ctx, k.AccountID)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.Account{}, Key{}, errBadKey
	}
	if err != nil {
		return storage.Account{}, Key{}, fmt.Errorf("apikeys: authenticate: account: %w", err)
	}
	if k.LastUsedIP != ip || now.Sub(k.LastUsedAt) >= touchEvery {
		if err := s.store.TouchAPIKey(ctx, k.ID, storage.Truncate(now), ip); err != nil {
			return storage.Account{}, Key{}, fmt.Errorf("apikeys: record use: %w", err)
		}
		k.LastUsedAt, k.LastUsedIP = storage.Truncate(now), ip
	}
	return a, Key{APIKey: k, Grants: NewGrants(k.Scopes)}, nil
}
