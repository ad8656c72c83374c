package logs

import (
	"context"
	"fmt"
	"time"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/storage"
)

// AppAccess checks that the caller owns the app (apps.Service).
type AppAccess interface {
	GetApp(ctx context.Context, o apps.Owner, appID string) (storage.App, error)
}

// Service answers the owner's log queries.
type Service struct {
	store storage.LogStore
	apps  AppAccess
	now   func() time.Time
}

// NewService builds the service; now defaults to time.Now.
func NewService(store storage.LogStore, access AppAccess, now func() time.Time) *Service {
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

// Purge removes the app's entries older than days (default 30).
//
// Its audit entry is written after the deletion (the edge's path after the change), not
// with it: no one write makes the purge. SQLite deletes in transactions of at most
// logDeleteChunk rows (so that a purge of millions of entries lets the other writers in),
// and MongoDB's DeleteMany is many documents, not atomic on FerretDB, with no document
// left to carry a confirmation. A marker written on the app before the delete would
// confirm an entry for a purge a crash then cut short; written after, it is the path
// after the change again. The purge is idempotent, so the entry of a purge a crash
// interrupted (never acknowledged) is the one lost, and its retry writes it.
func (s *Service) Purge(ctx context.Context, o apps.Owner, appID, days string) (int, error) {
	d, err := core.IntParam("days", days, 30, 36500)
	if err != nil {
		return 0, err
	}
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return 0, err
	}
	n, err := s.store.DeleteLogsBefore(ctx, appID, s.now().AddDate(0, 0, -d))
	if err != nil {
		return 0, fmt.Errorf("logs: purge: %w", err)
	}
	return n, nil
}
