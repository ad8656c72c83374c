package apps

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/licensing"
	"github.com/keyward/keyward/core/passwords"
	"github.com/keyward/keyward/core/plans"
	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/storage"
)

// Store is what the service needs from storage.
type Store interface {
	storage.AppStore
	storage.AppStatsStore
	storage.UserStore
	storage.LicenseStore
	storage.DeviceStore
	storage.TokenStore
}

// Service runs the application flows.
type Service struct {
	store  Store
	plans  *plans.Catalogue
	hasher *passwords.Hasher
	bus    events.Publisher
	now    func() time.Time
	log    *slog.Logger
	// onDelete run after an app's records are deleted (its files' bytes, for one).
	onDelete []func(ctx context.Context, appID string) error
}

// OnDelete registers fn to run when an app is deleted, after its records are gone; the
// composition root wires what lives outside the record store (file bytes). Call before
// serving.
func (s *Service) OnDelete(fn func(ctx context.Context, appID string) error) {
	s.onDelete = append(s.onDelete, fn)
}

// New builds the service; now defaults to time.Now; bus may be nil (no events).
func New(store Store, catalogue *plans.Catalogue, hasher *passwords.Hasher, bus events.Publisher, now func() time.Time, log *slog.Logger) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, plans: catalogue, hasher: hasher, bus: bus, now: now, log: log}
}

// event is an event of the app (SPEC 6.1 names).
func event(appID string, name events.Type, username, message string, data map[string]any) events.Event {
	return events.Event{Name: name, AppID: appID, Username: username, Message: message, Data: data}
}

// begin starts the events of one change, stored with it (events.Change): the context it
// answers is for the change's own store call only, and Commit runs before the change is
// acknowledged (its error is the change's).
func (s *Service) begin(ctx context.Context) (context.Context, *events.Change) {
	return events.Begin(ctx, s.bus)
}

func (s *Service) clock() time.Time { return storage.Truncate(s.now()) }

// Owner is who calls: the account and its plan.
type Owner struct {
	AccountID string
	Plan      string
}

var errAppNotFound = core.E(core.CodeNotFound, "application not found")

// notFound turns storage.ErrNotFound into a NOT_FOUND error naming the record.
func notFound(err error, what string) error {
	if errors.Is(err, storage.ErrNotFound) {
		return core.E(core.CodeNotFound, "%s not found", what)
	}
	return err
}

// app reads the caller's app, or answers NOT_FOUND (also for another owner's app).
func (s *Service) app(ctx context.Context, o Owner, appID string) (storage.App, error) {
	if _, err := uuid.Parse(appID); err != nil {
		return storage.App{}, errAppNotFound
	}
	a, err := s.store.GetApp(ctx, o.AccountID, appID)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.App{}, errAppNotFound
	}
	return a, err
}

// MaskSecret is the read form of an app secret: three asterisks and the last 6 characters.
func MaskSecret(a storage.App) string { return "***" + a.SecretLast6 }

// newSecret makes an app secret of 32 random bytes (43 URL-safe characters).
func newSecret() (secret, hash, last6 string) {
	secret = secrets.Random(32)
	return secret, secrets.Hash(secret), secret[len(secret)-6:]
}

// Limits of application fields.
const (
	maxAppName        = 64
	maxAppDescription = 500
	maxVersion        = 32
)

func validateAppName(name string) error {
	if strings.TrimSpace(name) == "" {
		return core.Invalid("name", "name is required")
	}
	if len([]rune(name)) > maxAppName {
		return core.Invalid("name", "name must be at most %d characters", maxAppName)
	}
	return nil
}

func validateVersion(field, v string) error {
	if v == "" {
		return core.Invalid(field, "%s must not be empty", field)
	}
	if len(v) > maxVersion {
		return core.Invalid(field, "%s must be at most %d characters", field, maxVersion)
	}
	return nil
}

// CreateAppInput is the body of an application creation.
type CreateAppInput struct {
	Name        string
	Description string
	Version     string
}

// CreateApp creates an app within the plan's maxApps and returns it with its full secret,
// the only time the secret is shown.
func (s *Service) CreateApp(ctx context.Context, o Owner, in CreateAppInput) (storage.App, string, error) {
	in.Name = strings.TrimSpace(in.Name)
	if in.Version == "" {
		in.Version = "1.0.0"
	}
	if err := core.FirstError(validateAppName(in.Name), validateVersion("version", in.Version)); err != nil {
		return storage.App{}, "", err
	}
	if len([]rune(in.Description)) > maxAppDescription {
		return storage.App{}, "", core.Invalid("description", "description must be at most %d characters", maxAppDescription)
	}
	plan := s.plans.MustGet(o.Plan)
	n, err := s.store.CountApps(ctx, o.AccountID)
	if err != nil {
		return storage.App{}, "", fmt.Errorf("apps: count: %w", err)
	}
	if n >= plan.Limits.MaxApps {
		return storage.App{}, "", core.E(core.CodePlanLimit, "the %s plan allows %d application(s); upgrade to create more", plan.Name, plan.Limits.MaxApps)
	}
	secret, hash, last6 := newSecret()
	now := s.clock()
	a := storage.App{ID: uuid.NewString(), AccountID: o.AccountID, Name: in.Name, Description: in.Description, Version: in.Version,
		Enabled: true, SecretHash: hash, SecretLast6: last6, SigningKey: licensing.NewKey(), CreatedAt: now, UpdatedAt: now}
	// The creation carries no event of its own, but is the change's own store call: its
	// audit entry goes in its write (events.Change carries the edge's draft there).
	octx, ch := s.begin(ctx)
	audit.Created(ctx, a)
	if err := s.store.CreateApp(octx, a); err != nil {
		if errors.Is(err, storage.ErrConflict) {
			return storage.App{}, "", core.E(core.CodeConflict, "you already have an application named %q", in.Name)
		}
		return storage.App{}, "", fmt.Errorf("apps: create: %w", err)
	}
	if err := ch.Commit(ctx); err != nil {
		return storage.App{}, "", err
	}
	return a, secret, nil
}

// AppWithCounts is an app of the list with its record counts.
type AppWithCounts struct {
	App    storage.App
	Counts storage.AppCounts
}

// ListApps answers the caller's apps with their counts.
func (s *Service) ListApps(ctx context.Context, o Owner) ([]AppWithCounts, error) {
	list, err := s.store.ListApps(ctx, o.AccountID)
	if err != nil {
		return nil, fmt.Errorf("apps: list: %w", err)
	}
	out := make([]AppWithCounts, 0, len(list))
	for _, a := range list {
		c, err := s.store.CountAppRecords(ctx, a.ID)
		if err != nil {
			return nil, fmt.Errorf("apps: counts: %w", err)
		}
		out = append(out, AppWithCounts{App: a, Counts: c})
	}
	return out, nil
}

// GetApp answers one of the caller's apps, with a signing key (an app made before keys
// existed gets one now).
func (s *Service) GetApp(ctx context.Context, o Owner, appID string) (storage.App, error) {
	a, err := s.app(ctx, o, appID)
	if err != nil {
		return a, err
	}
	return s.ensureSigningKey(ctx, a)
}

// UpdateAppInput holds the members to change; nil members stay as they are.
type UpdateAppInput struct {
	Name, Description, Version                                   *string
	Enabled, Paused, AntiDebug, AntiVM, LockHwid, LockIP, LockPc *bool
	// SessionTimeout is the client sessions' idle timeout in seconds (0: server default);
	// FileEncryption false sends this app's client downloads unencrypted.
	SessionTimeout *int
	FileEncryption *bool
	// The licensing members (see storage.App).
	SignResponses   *bool
	GraceSeconds    *int
	LicenseFileDays *int
	// Portal changes the buyer portal's settings (issue 23); nil members stay.
	Portal *PortalInput
}

// PortalInput changes the members of the app's buyer portal (storage.AppPortal) that are
// given.
type PortalInput struct {
	Enabled, HWIDReset, SeatRelease, Downloads, Resend *bool
}

func (in *PortalInput) apply(p *storage.AppPortal) {
	if in == nil {
		return
	}
	core.Set(&p.Enabled, in.Enabled)
	core.Set(&p.HWIDReset, in.HWIDReset)
	core.Set(&p.SeatRelease, in.SeatRelease)
	core.Set(&p.Downloads, in.Downloads)
	core.Set(&p.Resend, in.Resend)
}

// Bounds of the per-app client session timeout, in seconds.
const (
	MinSessionTimeout = 60
	MaxSessionTimeout = 30 * 24 * 3600
)

// UpdateApp changes only the given members.
func (s *Service) UpdateApp(ctx context.Context, o Owner, appID string, in UpdateAppInput) (storage.App, error) {
	if in.Name != nil {
		trimmed := strings.TrimSpace(*in.Name)
		in.Name = &trimmed
		if err := validateAppName(trimmed); err != nil {
			return storage.App{}, err
		}
	}
	if in.Version != nil {
		if err := validateVersion("version", *in.Version); err != nil {
			return storage.App{}, err
		}
	}
	if in.Description != nil && len([]rune(*in.Description)) > maxAppDescription {
		return storage.App{}, core.Invalid("description", "description must be at most %d characters", maxAppDescription)
	}
	if t := in.SessionTimeout; t != nil && *t != 0 && (*t < MinSessionTimeout || *t > MaxSessionTimeout) {
		return storage.App{}, core.Invalid("sessionTimeout", "sessionTimeout must be 0 (the server default) or %d to %d seconds", MinSessionTimeout, MaxSessionTimeout)
	}
	if err := validateLicensing(in); err != nil {
		return storage.App{}, err
	}
	if _, err := s.app(ctx, o, appID); err != nil {
		return storage.App{}, err
	}
	octx, ch := s.begin(ctx)
	a, err := s.store.UpdateApp(octx, o.AccountID, appID, audit.Track(ctx, func(a *storage.App) error {
		applyLicensing(a, in)
		core.Set(&a.Name, in.Name)
		core.Set(&a.Description, in.Description)
		core.Set(&a.Version, in.Version)
		core.Set(&a.Enabled, in.Enabled)
		core.Set(&a.Paused, in.Paused)
		core.Set(&a.AntiDebug, in.AntiDebug)
		core.Set(&a.AntiVM, in.AntiVM)
		core.Set(&a.LockHwid, in.LockHwid)
		core.Set(&a.LockIP, in.LockIP)
		core.Set(&a.LockPcName, in.LockPc)
		core.Set(&a.SessionTimeout, in.SessionTimeout)
		if in.FileEncryption != nil {
			a.PlainFiles = !*in.FileEncryption
		}
		in.Portal.apply(&a.Portal)
		a.UpdatedAt = s.clock()
		data := map[string]any{"paused": a.Paused, "enabled": a.Enabled}
		if in.Portal != nil {
			data["portal"] = a.Portal
		}
		ch.Set(event(a.ID, events.AppUpdate, "", "application settings changed", data))
		return nil
	}))
	switch {
	case errors.Is(err, storage.ErrConflict):
		return storage.App{}, core.E(core.CodeConflict, "you already have an application named %q", *in.Name)
	case err != nil:
		return storage.App{}, notFound(err, "application")
	}
	if err := ch.Commit(ctx); err != nil {
		return storage.App{}, err
	}
	return a, nil
}

// DeleteApp removes the app and everything under it; confirm must be true.
func (s *Service) DeleteApp(ctx context.Context, o Owner, appID string, confirm bool) error {
	if !confirm {
		return core.Invalid("confirm", "confirm must be true to delete an application and all its data")
	}
	if _, err := s.app(ctx, o, appID); err != nil {
		return err
	}
	// Every node's actor of the app drops it (events.SnapshotChanges).
	octx, ch := s.begin(ctx)
	ch.Add(event(appID, events.AppDelete, "", "application deleted", nil))
	if err := s.store.DeleteApp(octx, o.AccountID, appID); err != nil {
		return notFound(err, "application")
	}
	if err := ch.Commit(ctx); err != nil {
		return err
	}
	for _, fn := range s.onDelete {
		if err := fn(ctx, appID); err != nil {
			return fmt.Errorf("apps: delete app data: %w", err)
		}
	}
	return nil
}

// RegenerateSecret replaces the app secret; the old one stops working at once.
func (s *Service) RegenerateSecret(ctx context.Context, o Owner, appID string) (string, error) {
	if _, err := s.app(ctx, o, appID); err != nil {
		return "", err
	}
	secret, hash, last6 := newSecret()
	octx, ch := s.begin(ctx)
	ch.Add(event(appID, events.AppSecretReset, "", "application secret regenerated", nil))
	_, err := s.store.UpdateApp(octx, o.AccountID, appID, audit.Track(ctx, func(a *storage.App) error {
		a.SecretHash, a.SecretLast6, a.UpdatedAt = hash, last6, s.clock()
		return nil
	}))
	if err != nil {
		return "", notFound(err, "application")
	}
	if err := ch.Commit(ctx); err != nil {
		return "", err
	}
	return secret, nil
}

// Stats are the figures of SPEC 4.2's stats call.
type Stats struct {
	storage.AppStats
	ActiveSessions int
}

// AppStats computes the app's stats; "today" and "this week" start at UTC midnight and at
// the most recent Monday (UTC).
func (s *Service) AppStats(ctx context.Context, o Owner, appID string) (Stats, error) {
	if _, err := s.app(ctx, o, appID); err != nil {
		return Stats{}, err
	}
	now := s.clock()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	week := day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
	st, err := s.store.AppStats(ctx, appID, storage.AppStatsQuery{Now: now, DayStart: day, WeekStart: week})
	if err != nil {
		return Stats{}, fmt.Errorf("apps: stats: %w", err)
	}
	return Stats{AppStats: st}, nil
}

// CountApps implements accounts.AppCounter.
func (s *Service) CountApps(ctx context.Context, accountID string) (int, error) {
	return s.store.CountApps(ctx, accountID)
}
