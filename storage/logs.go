package storage

import (
	"context"
	"time"
)

// LogEntry is one application log entry (SPEC 2, Log entry).
type LogEntry struct {
	ID       string
	AppID    string
	Event    string // dotted event name, e.g. user.login
	Message  string
	Username string
	IP       string
	Country  string // ISO code, "" when unknown
	Level    string // DEBUG, INFO, WARNING, ERROR, CRITICAL
	// Data is a JSON object as text ("" means none).
	Data      string
	CreatedAt time.Time
}

// LogQuery selects log entries of one app; empty members match everything.
type LogQuery struct {
	Event string
	Level string
	// Username matches a case-insensitive substring.
	Username string
	// Start and End bound CreatedAt (inclusive); zero means unbounded.
	Start, End time.Time
	Page       Page
}

// LogStats are the counts of SPEC 4.8's log stats.
type LogStats struct {
	Total   int
	ByLevel map[string]int
	ByEvent map[string]int
}

// Bucket is one time bucket of a series: entries with Start <= CreatedAt < Start+width.
type Bucket struct {
	Start time.Time
	Count int
}

// CountryCount is the number of entries from one country.
type CountryCount struct {
	Country string
	Count   int
}

// LogStore persists log entries and answers the aggregations analytics need. Aggregations
// run in the engine (counting queries, grouping), never by loading entries.
type LogStore interface {
	// InsertLogs writes a batch in one bulk write.
	InsertLogs(ctx context.Context, entries []LogEntry) error
	// ListLogs answers one page, newest first, and the total.
	ListLogs(ctx context.Context, appID string, q LogQuery) ([]LogEntry, int, error)
	// LogStats counts the app's entries since the instant, in total, per level and per event.
	LogStats(ctx context.Context, appID string, since time.Time) (LogStats, error)
	// LogEvents answers the distinct event names of the app, sorted.
	LogEvents(ctx context.Context, appID string) ([]string, error)
	// CountLogs counts the app's entries of the event since the instant.
	CountLogs(ctx context.Context, appID, event string, since time.Time) (int, error)
	// LogSeries counts the app's entries of the event per hourly (hourly=true) or daily UTC
	// bucket from since on; buckets without entries are left out (the caller fills them).
	LogSeries(ctx context.Context, appID, event string, since time.Time, hourly bool) ([]Bucket, error)
	// LogCountries counts the app's entries with a known country since the instant, most first.
	LogCountries(ctx context.Context, appID string, since time.Time) ([]CountryCount, error)
	// DeleteLogsBefore removes the app's entries older than the instant (all apps when
	// appID is ""), answering how many.
	DeleteLogsBefore(ctx context.Context, appID string, before time.Time) (int, error)
	// TrimLogs keeps the app's newest keep entries and removes the rest, answering how many.
	TrimLogs(ctx context.Context, appID string, keep int) (int, error)
	// LogApps answers the ids of apps having more than n entries (for the per-app cap).
	LogApps(ctx context.Context, moreThan int) ([]string, error)
}
