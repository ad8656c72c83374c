package logs

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/storage"
)

// AppAccess checks that the caller owns the app (apps.Service).
type AppAccess interface {
	GetApp(ctx context.Context, o apps.Owner, appID string) (storage.App, error)
}

// Store is what the logs package keeps its entries and purges in.
type Store interface {
	storage.LogStore
	storage.LogPurgeStore
}

// Service answers the owner's log queries and purges.
type Service struct {
	store Store
	apps  AppAccess
	now   func() time.Time
}

// NewService builds the service; now defaults to time.Now.
func NewService(store Store, access AppAccess, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, apps: access, now: now}
}

var levels = map[string]bool{events.LevelDebug: true, events.LevelInfo: true, events.LevelWarning: true,
	events.LevelError: true, events.LevelCritical: true}

// QueryInput is the list query of SPEC 4.8 as strings from the URL.
type QueryInput struct {
	Event, Level, Username, StartDate, EndDate string
	Page                                       storage.Page
}

func parseStamp(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, core.Invalid(field, "%s must be an RFC 3339 timestamp", field)
	}
	return t, nil
}

// List answers one page of the app's log entries, newest first, and the total.
func (s *Service) List(ctx context.Context, o apps.Owner, appID string, in QueryInput) ([]storage.LogEntry, int, storage.Page, error) {
	q := storage.LogQuery{Event: in.Event, Level: in.Level, Username: in.Username, Page: in.Page.Normalize()}
	var err error
	if q.Start, err = parseStamp("startDate", in.StartDate); err != nil {
		return nil, 0, q.Page, err
	}
	if q.End, err = parseStamp("endDate", in.EndDate); err != nil {
		return nil, 0, q.Page, err
	}
	if !q.Start.IsZero() && !q.End.IsZero() && q.End.Before(q.Start) {
		return nil, 0, q.Page, core.Invalid("endDate", "endDate must not be before startDate")
	}
	if in.Level != "" && !levels[in.Level] {
		return nil, 0, q.Page, core.Invalid("level", "level must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL")
	}
	if len(in.Event) > 100 || len(in.Username) > 100 {
		return nil, 0, q.Page, core.Invalid("event", "event and username filters must be at most 100 characters")
	}
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return nil, 0, q.Page, err
	}
	list, total, err := s.store.ListLogs(ctx, appID, q)
	if err != nil {
		return nil, 0, q.Page, fmt.Errorf("logs: list: %w", err)
	}
	return list, total, q.Page, nil
}

// Stats counts the app's entries of the last hours (default 24, at most 8760).
func (s *Service) Stats(ctx context.Context, o apps.Owner, appID, hours string) (storage.LogStats, error) {
	h, err := core.IntParam("hours", hours, 24, 24*365)
	if err != nil {
		return storage.LogStats{}, err
	}
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return storage.LogStats{}, err
	}
	st, err := s.store.LogStats(ctx, appID, s.now().Add(-time.Duration(h)*time.Hour))
	if err != nil {
		return storage.LogStats{}, fmt.Errorf("logs: stats: %w", err)
	}
	return st, nil
}

// Events lists the distinct event names logged for the app.
func (s *Service) Events(ctx context.Context, o apps.Owner, appID string) ([]string, error) {
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return nil, err
	}
	names, err := s.store.LogEvents(ctx, appID)
	if err != nil {
		return nil, fmt.Errorf("logs: events: %w", err)
	}
	if names == nil {
		names = []string{}
	}
	return names, nil
}

// Asker names who asked for a purge, for its stored intent: the account's user or the
// key's name, and the request's id.
type Asker struct {
	Actor     string
	RequestID string
}

// Purge removes the app's entries older than days (default 30) and answers how many it
// removed (SPEC 4.8: data.deleted).
//
// The purge is stored first, as an intent (storage.LogPurge: the app, the cutoff computed
// here once, who asked), and its audit entry is stored in the same write (audit.Own: the
// intent's insert is the change's own store call; SQLite appends the entry in its
// transaction, MongoDB stages it and the inserted intent confirms it). Only then do the
// entries go, in chunks (storage.LogPurgeStore.RunLogPurge), and the intent with the
// last. A purge cut short (a crash, a database lost midway) is finished by the janitor of
// a node (ResumePurges, at start and then every PurgeEvery), to the same cutoff: an
// acknowledged purge always completes, and its entry exists once. The deletion does not
// end with the request's context (a client that goes away does not stop it midway).
func (s *Service) Purge(ctx context.Context, o apps.Owner, appID, days string, by Asker) (int, error) {
	d, err := core.IntParam("days", days, 30, 36500)
	if err != nil {
		return 0, err
	}
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return 0, err
	}
	now := s.now()
	p := storage.LogPurge{ID: uuid.NewString(), AppID: appID, Days: d, Before: storage.Truncate(now.AddDate(0, 0, -d)),
		AccountID: o.AccountID, Actor: by.Actor, RequestID: by.RequestID, CreatedAt: storage.Truncate(now), TouchedAt: storage.Now()}
	audit.Created(ctx, p) // the entry's after: the days asked and the cutoff
	if err := s.store.BeginLogPurge(audit.Own(ctx), p); err != nil {
		return 0, fmt.Errorf("logs: purge: %w", err)
	}
	n, err := s.store.RunLogPurge(storage.WithoutEventOutbox(context.WithoutCancel(ctx)), p)
	if err != nil {
		e := core.E(core.CodeUnavailable, "the purge is stored and the server will finish it, but it could not be completed now")
		e.Cause = fmt.Errorf("logs: purge %s: %w", p.ID, err)
		return 0, e
	}
	return n, nil
}
