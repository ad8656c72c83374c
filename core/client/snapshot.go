package client

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/licensing"
	"github.com/keyward/keyward/core/plans"
	"github.com/keyward/keyward/core/rules"
	"github.com/keyward/keyward/storage"
)

// Snapshot is what an application's actor holds for client requests.
type Snapshot struct {
	App storage.App
	// Plan is the owner's plan, for plan features and the user limit.
	Plan  plans.Plan
	Rules *rules.Set
	// SessionTTL is the idle timeout of the app's client sessions.
	SessionTTL time.Duration
	// EncryptFiles says whether file downloads are encrypted (CLIENT-SDKS.md §5).
	EncryptFiles bool
	// Signer is the app's Ed25519 key, parsed once per load; nil when the app has none.
	Signer ed25519.PrivateKey
}

// SignsResponses reports whether the app's client answers are to be signed.
func (s Snapshot) SignsResponses() bool { return s.App.SignResponses && s.Signer != nil }

// Snapshots answer an application's snapshot (app.Apps, actors/app).
type Snapshots interface {
	Snapshot(ctx context.Context, appID string) (Snapshot, error)
}

// LoaderStore is what loading a snapshot reads.
type LoaderStore interface {
	GetAppByID(ctx context.Context, id string) (storage.App, error)
	// UpdateApp gives an app made before signing keys existed its key on first load.
	UpdateApp(ctx context.Context, accountID, id string, fn func(*storage.App) error) (storage.App, error)
	GetAccount(ctx context.Context, id string) (storage.Account, error)
	ListRules(ctx context.Context, appID string, q storage.RuleQuery) ([]storage.Rule, error)
}

// SnapshotDefaults are the node-wide settings every snapshot carries.
type SnapshotDefaults struct {
	SessionTTL       time.Duration
	EncryptFiles     bool
	CountryAvailable bool
}

// errAppGone is the loader's answer for an application that does not exist.
var errAppGone = core.E(core.CodeUnauthorized, "the application does not exist any more; initialise again")

// NewLoader returns the function the app actors load snapshots with.
func NewLoader(store LoaderStore, catalogue *plans.Catalogue, def SnapshotDefaults) func(ctx context.Context, appID string) (Snapshot, error) {
	return func(ctx context.Context, appID string) (Snapshot, error) {
		app, err := store.GetAppByID(ctx, appID)
		if errors.Is(err, storage.ErrNotFound) {
			return Snapshot{}, errAppGone
		}
		if err != nil {
			return Snapshot{}, fmt.Errorf("load app %s: %w", appID, err)
		}
		acc, err := store.GetAccount(ctx, app.AccountID)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return Snapshot{}, fmt.Errorf("load owner of app %s: %w", appID, err)
		}
		list, err := store.ListRules(ctx, appID, storage.RuleQuery{})
		if err != nil {
			return Snapshot{}, fmt.Errorf("load rules of app %s: %w", appID, err)
		}
		compiled := make([]rules.Rule, 0, len(list))
		for _, r := range list {
			compiled = append(compiled, rules.Rule{ID: r.ID, Type: r.Type, Action: r.Action, Value: r.Value, Enabled: r.Enabled})
		}
		set, err := rules.Compile(compiled, rules.Options{CountryAvailable: def.CountryAvailable})
		if err != nil {
			// A stored rule that no longer validates must not open the app: refuse
			// logins until the owner fixes it, and say why in the server log.
			return Snapshot{}, fmt.Errorf("compile rules of app %s: %w", appID, err)
		}
		ttl := def.SessionTTL
		if app.SessionTimeout > 0 {
			ttl = time.Duration(app.SessionTimeout) * time.Second
		}
		if app.SigningKey == "" {
			// Only a key still missing is set, so nodes loading at once agree on one.
			app, err = store.UpdateApp(ctx, app.AccountID, app.ID, func(a *storage.App) error {
				if a.SigningKey == "" {
					a.SigningKey = licensing.NewKey()
				}
				return nil
			})
			if err != nil {
				return Snapshot{}, fmt.Errorf("make the signing key of app %s: %w", appID, err)
			}
		}
		var signer ed25519.PrivateKey
		if app.SigningKey != "" {
			if signer, err = licensing.ParseKey(app.SigningKey); err != nil {
				return Snapshot{}, fmt.Errorf("app %s: %w", appID, err)
			}
		}
		return Snapshot{App: app, Plan: catalogue.MustGet(acc.Plan), Rules: set, SessionTTL: ttl,
			EncryptFiles: def.EncryptFiles && !app.PlainFiles, Signer: signer}, nil
	}
}
