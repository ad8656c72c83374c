// Package analytics answers the owner's analytics (SPEC 4.8): an overview of users,
// licenses, sessions and activity over a period, a time series of one event with empty
// buckets filled, a country breakdown and the most recent log entries. Every figure comes
// from counting queries or engine-side grouping; no log entries are loaded to count them.
package analytics

import (
	"context"
	"fmt"
	"time"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/storage"
)

// Store is what analytics reads.
type Store interface {
	storage.AppStatsStore
	storage.LogStore
}

// AppAccess checks that the caller owns the app (apps.Service).
type AppAccess interface {
	GetApp(ctx context.Context, o apps.Owner, appID string) (storage.App, error)
}

// Service computes analytics.
type Service struct {
	store Store
	apps  AppAccess
	now   func() time.Time
}

// New builds the service; now defaults to time.Now.
func New(store Store, access AppAccess, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, apps: access, now: now}
}

var overviewPeriods = map[string]time.Duration{"1h": time.Hour, "24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour, "30d": 30 * 24 * time.Hour}

// Overview is SPEC 4.8's analytics overview.
type Overview struct {
	Period                              string
	Users, NewUsers, Active, Banned     int
	Licenses, UnusedLicenses            int
	ActiveSessions                      int
	Logins, FailedLogins, Registrations int
}

// Overview answers the figures of the period (1h, 24h default, 7d, 30d).
func (s *Service) Overview(ctx context.Context, o apps.Owner, appID, period string) (Overview, error) {
	if period == "" {
		period = "24h"
	}
	d, ok := overviewPeriods[period]
	if !ok {
		return Overview{}, core.Invalid("period", "period must be one of 1h, 24h, 7d, 30d")
	}
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return Overview{}, err
	}
	now := storage.Truncate(s.now())
	since := now.Add(-d)
	st, err := s.store.AppStats(ctx, appID, storage.AppStatsQuery{Now: now, DayStart: since, WeekStart: since, NewSince: since})
	if err != nil {
		return Overview{}, fmt.Errorf("analytics: stats: %w", err)
	}
	out := Overview{Period: period, Users: st.Users, NewUsers: st.NewUsers, Active: st.LoginsSinceDay, Banned: st.BannedUsers,
		Licenses: st.Licenses, UnusedLicenses: st.Licenses - st.UsedLicenses}
	for event, n := range map[string]*int{"user.login": &out.Logins, "user.login_failed": &out.FailedLogins, "user.register": &out.Registrations} {
		c, err := s.store.CountLogs(ctx, appID, event, since)
		if err != nil {
			return Overview{}, fmt.Errorf("analytics: count %s: %w", event, err)
		}
		*n = c
	}
	return out, nil
}

// Point is one bucket of a time series.
type Point struct {
	Bucket time.Time
	Count  int
}

// Timeseries counts the event (default user.login) per hour over 24h, or per day over 7d
// (default) or 30d, with every bucket present (zero when empty), oldest first.
func (s *Service) Timeseries(ctx context.Context, o apps.Owner, appID, period, event string) ([]Point, error) {
	if event == "" {
		event = "user.login"
	}
	if len(event) > 100 {
		return nil, core.Invalid("event", "event must be at most 100 characters")
	}
	var n int
	hourly := false
	switch period {
	case "24h":
		n, hourly = 24, true
	case "", "7d":
		n = 7
	case "30d":
		n = 30
	default:
		return nil, core.Invalid("period", "period must be one of 24h, 7d, 30d")
	}
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return nil, err
	}
	now := s.now().UTC()
	step := 24 * time.Hour
	last := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	if hourly {
		step = time.Hour
		last = now.Truncate(time.Hour)
	}
	first := last.Add(-time.Duration(n-1) * step)
	buckets, err := s.store.LogSeries(ctx, appID, event, first, hourly)
	if err != nil {
		return nil, fmt.Errorf("analytics: series: %w", err)
	}
	counts := make(map[int64]int, len(buckets))
	for _, b := range buckets {
		counts[b.Start.UTC().Unix()] += b.Count
	}
	out := make([]Point, n)
	for i := range out {
		at := first.Add(time.Duration(i) * step)
		out[i] = Point{Bucket: at, Count: counts[at.Unix()]}
	}
	return out, nil
}

// Geography counts log entries per country over the last days (default 30).
func (s *Service) Geography(ctx context.Context, o apps.Owner, appID, days string) ([]storage.CountryCount, error) {
	d, err := core.IntParam("days", days, 30, 3650)
	if err != nil {
		return nil, err
	}
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return nil, err
	}
	list, err := s.store.LogCountries(ctx, appID, s.now().AddDate(0, 0, -d))
	if err != nil {
		return nil, fmt.Errorf("analytics: geography: %w", err)
	}
	return list, nil
}

// Recent answers the newest log entries (limit default 20, at most 200).
func (s *Service) Recent(ctx context.Context, o apps.Owner, appID, limit string) ([]storage.LogEntry, error) {
	n, err := core.IntParam("limit", limit, 20, storage.MaxPageSize)
	if err != nil {
		return nil, err
	}
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return nil, err
	}
	list, _, err := s.store.ListLogs(ctx, appID, storage.LogQuery{Page: storage.Page{Limit: n}})
	if err != nil {
		return nil, fmt.Errorf("analytics: recent: %w", err)
	}
	return list, nil
}
