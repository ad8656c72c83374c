package client

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/storage"
)

// secretApps remembers which app an application secret opened, and the file key derived
// from it, so that init does not read the apps table (nor derive the key again) on every
// call: it was a fifth of init's CPU on the embedded default. An entry is only a hint:
// init always checks the secret's hash against the app's snapshot, which the app's
// actor reloads when the secret is regenerated (events.SnapshotChanges: at once on the
// node that stored the change, as soon as the log tells the others), so a regenerated
// secret stops opening sessions as it did before, and an entry that no longer matches is
// dropped. Only secrets that opened an app are kept; refusals read the store as before.
type secretApps struct {
	mu sync.Mutex
	m  map[string]secretApp // by the secret's hash
}

// secretApp is what one secret opens.
type secretApp struct {
	appID, fileKey string
}

// secretAppsMax bounds the cache: one entry per app in use, so reaching it means more
// apps than that are in use at once; it then starts afresh.
const secretAppsMax = 1 << 16

func (c *secretApps) get(hash string) (secretApp, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.m[hash]
	return a, ok
}

func (c *secretApps) put(hash string, a secretApp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= secretAppsMax {
		c.m = make(map[string]secretApp)
	}
	c.m[hash] = a
}

func (c *secretApps) forget(hash string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, hash)
}

// errInvalidSecret answers a secret that opens no app.
var errInvalidSecret = core.E(core.CodeUnauthorized, "invalid application secret")

// openApp answers the snapshot of the app the secret opens and the secret's file key: from
// the cache when the snapshot still has the secret's hash, else from the store.
func (s *Service) openApp(ctx context.Context, secret string) (Snapshot, string, error) {
	hash := secrets.Hash(secret)
	if a, ok := s.secretApps.get(hash); ok {
		snap, err := s.d.Apps.Snapshot(ctx, a.appID)
		switch {
		case err == nil && snap.App.SecretHash == hash:
			return snap, a.fileKey, nil
		case err != nil && !errors.Is(err, storage.ErrNotFound) && core.CodeOf(err) == "":
			return Snapshot{}, "", err // the store is unavailable: so is the lookup below
		}
		// The secret was regenerated, or the app deleted (errAppGone): ask the store.
		s.secretApps.forget(hash)
	}
	app, err := s.d.Store.GetAppBySecretHash(ctx, hash)
	if errors.Is(err, storage.ErrNotFound) {
		return Snapshot{}, "", errInvalidSecret
	}
	if err != nil {
		return Snapshot{}, "", fmt.Errorf("init: find app: %w", err)
	}
	snap, err := s.d.Apps.Snapshot(ctx, app.ID)
	if err != nil {
		return Snapshot{}, "", err
	}
	if snap.App.SecretHash != hash {
		// The secret changed between the lookup and the snapshot.
		return Snapshot{}, "", errInvalidSecret
	}
	fk := fileKeyOf(secret)
	s.secretApps.put(hash, secretApp{appID: app.ID, fileKey: fk})
	return snap, fk, nil
}
