package apps

import (
	"context"
	"fmt"
	"time"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/licensing"
	"github.com/keyward/keyward/storage"
)

// Bounds of the licensing settings of an app.
const (
	MaxGraceSeconds    = 365 * 24 * 3600
	MaxLicenseFileDays = 3650
	// MaxSeats bounds a license's floating seats.
	MaxSeats = 100_000
)

func validateLicensing(in UpdateAppInput) error {
	return core.FirstError(intIn("graceSeconds", in.GraceSeconds, 0, MaxGraceSeconds),
		intIn("licenseFileDays", in.LicenseFileDays, 0, MaxLicenseFileDays))
}

// applyLicensing sets the licensing members of an update; turning signing on makes the
// key if the app has none yet.
func applyLicensing(a *storage.App, in UpdateAppInput) {
	core.Set(&a.SignResponses, in.SignResponses)
	core.Set(&a.GraceSeconds, in.GraceSeconds)
	core.Set(&a.LicenseFileDays, in.LicenseFileDays)
	if a.SignResponses && a.SigningKey == "" {
		a.SigningKey = licensing.NewKey()
	}
}

// ensureSigningKey gives a an Ed25519 signing key when it has none (apps made before
// keys existed get theirs on first use). The update only sets a key still missing, so two
// nodes racing agree on one.
func (s *Service) ensureSigningKey(ctx context.Context, a storage.App) (storage.App, error) {
	if a.SigningKey != "" {
		return a, nil
	}
	out, err := s.store.UpdateApp(ctx, a.AccountID, a.ID, audit.Track(ctx, func(x *storage.App) error {
		if x.SigningKey == "" {
			x.SigningKey = licensing.NewKey()
		}
		return nil
	}))
	if err != nil {
		return storage.App{}, fmt.Errorf("apps: make signing key: %w", notFound(err, "application"))
	}
	return out, nil
}

// SigningApp answers the caller's app with its signing key, made if missing (license
// files, the get response).
func (s *Service) SigningApp(ctx context.Context, o Owner, appID string) (storage.App, error) {
	return s.GetApp(ctx, o, appID)
}

// RegenerateSigningKey replaces the app's signing key; the old key stops signing at once
// (every node reloads the app's snapshot on app.signing_key_reset).
func (s *Service) RegenerateSigningKey(ctx context.Context, o Owner, appID string) (storage.App, error) {
	if _, err := s.app(ctx, o, appID); err != nil {
		return storage.App{}, err
	}
	octx, ch := s.begin(ctx)
	ch.Add(event(appID, events.AppSigningKeyReset, "", "application signing key regenerated", nil))
	a, err := s.store.UpdateApp(octx, o.AccountID, appID, audit.Track(ctx, func(a *storage.App) error {
		a.SigningKey, a.UpdatedAt = licensing.NewKey(), s.clock()
		return nil
	}))
	if err != nil {
		return storage.App{}, notFound(err, "application")
	}
	if err := ch.Commit(ctx); err != nil {
		return storage.App{}, err
	}
	return a, nil
}

// inGrace narrows a user query to the users in their grace period when asked ("true"):
// expired, but less than the app's graceSeconds ago (none when the app has no grace).
func inGrace(q *storage.UserQuery, app storage.App, in string) error {
	switch in {
	case "", "false":
		return nil
	case "true":
	default:
		return core.Invalid("inGrace", "inGrace must be true or false")
	}
	q.Expired = true
	// With no grace the window is empty: after Now, nothing expired is kept.
	q.ExpiredAfter = q.Now.Add(-time.Duration(app.GraceSeconds) * time.Second)
	return nil
}
