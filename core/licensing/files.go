package licensing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/pkg/licensefile"
	"github.com/keyward/keyward/storage"
)

// Store is what issuing a license file reads.
type Store interface {
	GetLicense(ctx context.Context, appID, id string) (storage.License, error)
	GetUserByUsername(ctx context.Context, appID, username string) (storage.AppUser, error)
	ListVariables(ctx context.Context, appID, scope, ownerID string) ([]storage.Variable, error)
}

// Files issues offline license files (docs/LICENSING.md).
type Files struct {
	store Store
	bus   events.Publisher
	now   func() time.Time
}

// NewFiles builds the issuer; bus may be nil, now defaults to time.Now.
func NewFiles(store Store, bus events.Publisher, now func() time.Time) *Files {
	if now == nil {
		now = time.Now
	}
	return &Files{store: store, bus: bus, now: now}
}

// Issued is a license file and what it states.
type Issued struct {
	Text    []byte
	Payload licensefile.Payload
}

// Request says who asks for a file, for the event.
type Request struct {
	// By is "owner" or "client".
	By string
	IP string
	// User is the user of a client session ("" for the owner route).
	User *storage.AppUser
}

var errLicenseGone = core.E(core.CodeNotFound, "license not found")

// Issue makes a file for the app's license licenseID, signed with the app's key. A
// banned or disabled license is refused (BANNED, FORBIDDEN); a deleted one is NOT_FOUND.
// The file is bound to the HWID of the user the license is activated by, when that user
// has one.
func (f *Files) Issue(ctx context.Context, app storage.App, licenseID string, req Request) (Issued, error) {
	if app.SigningKey == "" {
		return Issued{}, fmt.Errorf("licensing: app %s has no signing key", app.ID)
	}
	key, err := ParseKey(app.SigningKey)
	if err != nil {
		return Issued{}, err
	}
	lic, err := f.store.GetLicense(ctx, app.ID, licenseID)
	if errors.Is(err, storage.ErrNotFound) {
		return Issued{}, errLicenseGone
	}
	if err != nil {
		return Issued{}, fmt.Errorf("licensing: read license: %w", err)
	}
	if lic.Banned {
		return Issued{}, core.E(core.CodeBanned, "the license is banned; no license file can be issued")
	}
	if !lic.Enabled {
		return Issued{}, core.E(core.CodeForbidden, "the license is disabled; no license file can be issued")
	}
	now := storage.Truncate(f.now()).Truncate(time.Second)
	expires := LicenseExpiry(lic)
	if !expires.IsZero() && !now.Before(expires) {
		return Issued{}, core.E(core.CodeExpired, "the license has expired")
	}
	user := req.User
	if user == nil && lic.UsedBy != "" {
		if u, err := f.store.GetUserByUsername(ctx, app.ID, lic.UsedBy); err == nil {
			user = &u
		}
	}
	vars, err := f.store.ListVariables(ctx, app.ID, storage.ScopeLicense, lic.ID)
	if err != nil {
		return Issued{}, fmt.Errorf("licensing: read license variables: %w", err)
	}
	days := app.LicenseFileDays
	if days <= 0 {
		days = DefaultLicenseFileDays
	}
	p := licensefile.Payload{AppID: app.ID, LicenseID: lic.ID, Key: lic.Key, Level: lic.Level, Duration: lic.Duration,
		IssuedAt: now.Format(time.RFC3339), CheckInBy: now.AddDate(0, 0, days).Format(time.RFC3339),
		Variables: make(map[string]string, len(vars))}
	if !expires.IsZero() {
		p.ExpiresAt = expires.UTC().Format(time.RFC3339)
	}
	if user != nil {
		p.Username, p.HWID = user.Username, user.HWID
		// The user's own access may end first.
		if ue := user.ExpiresAt; !ue.IsZero() && (expires.IsZero() || ue.Before(expires)) {
			if !now.Before(ue) {
				return Issued{}, core.E(core.CodeExpired, "the user's access has expired")
			}
			p.ExpiresAt = ue.UTC().Format(time.RFC3339)
		}
	}
	for _, v := range vars {
		p.Variables[v.Key] = v.Value
	}
	text, err := licensefile.Encode(key, p)
	if err != nil {
		return Issued{}, err
	}
	p.Version = licensefile.FormatVersion
	if f.bus != nil {
		if err := f.bus.Publish(ctx, events.Event{Name: events.LicenseFile, AppID: app.ID, Username: p.Username, IP: req.IP,
			Message: "license file issued for " + lic.Key,
			Data:    map[string]any{"licenseId": lic.ID, "key": lic.Key, "by": req.By, "checkInBy": p.CheckInBy, "hwid": p.HWID}}); err != nil {
			return Issued{}, err
		}
	}
	return Issued{Text: text, Payload: p}, nil
}

// LicenseExpiry is when a license ends: its own expiry, or its activation plus its
// duration when that comes first; zero means never.
func LicenseExpiry(l storage.License) time.Time {
	exp := l.ExpiresAt
	if l.Duration > 0 && !l.ActivatedAt.IsZero() {
		byDuration := l.ActivatedAt.Add(time.Duration(l.Duration) * time.Second)
		if exp.IsZero() || byDuration.Before(exp) {
			exp = byDuration
		}
	}
	return exp
}
