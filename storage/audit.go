package storage

import (
	"context"
	"time"
)

// Actor types of an audit entry: how the caller authenticated.
const (
	ActorSession    = "session"
	ActorAccountKey = "account_key"
	ActorAPIKey     = "api_key"
)

// AuditEntry is one change made through the Dashboard or admin API (issue 14). Secrets and
// passwords are never in it (the edge redacts them before recording).
type AuditEntry struct {
	ID string
	// AccountID is the account whose caller made the change.
	AccountID string
	// AppID is the application the change touched, "" for account-level routes.
	AppID string
	// ActorType is ActorSession, ActorAccountKey or ActorAPIKey; ActorID the session's
	// token id or the scoped key's id; ActorName the username or the key's name.
	ActorType string
	ActorID   string
	ActorName string
	IP        string
	Method    string
	// Route is the router's pattern; Path the path requested.
	Route      string
	Path       string
	RecordType string
	RecordID   string
	Status     int
	// Before and After are JSON objects of the changed members of an update ("" for
	// none).
	Before    string
	After     string
	CreatedAt time.Time
}

// AuditQuery selects audit entries, newest first. Empty members do not filter; an empty
// AccountID lists every account (administrators).
type AuditQuery struct {
	AccountID  string
	AppID      string
	ActorID    string
	RecordType string
	// Since (inclusive) and Until (exclusive) bound CreatedAt when not zero.
	Since time.Time
	Until time.Time
	Page  Page
}

// AuditStore persists the audit log.
type AuditStore interface {
	// AppendAudit inserts the entries (a batch). An entry whose id is stored already is
	// skipped, so that a batch retried after an unclear failure writes each entry once.
	AppendAudit(ctx context.Context, entries []AuditEntry) error
	// ListAudit answers one page, newest first, and the total of matches.
	ListAudit(ctx context.Context, q AuditQuery) ([]AuditEntry, int, error)
	// DeleteAuditBefore removes entries created before t and answers how many.
	DeleteAuditBefore(ctx context.Context, t time.Time) (int, error)
}
