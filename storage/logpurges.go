package storage

import (
	"context"
	"time"
)

// LogPurge is the intent of a purge of an app's log entries (DELETE .../logs, issue 21):
// every entry of the app created before Before goes. It is stored before any entry is
// deleted, in one write with the purge's audit entry (the AuditOutbox of the store call,
// as audit.Own marks it), so that an acknowledged purge has its entry once and a purge
// cut short by a crash is finished by whichever node resumes it (RunLogPurge), exactly
// to the cutoff computed when it was asked. Its `audit` tags make the entry's after:
// the days asked and the cutoff.
type LogPurge struct {
	ID    string `audit:"-"`
	AppID string `audit:"-"`
	// Days is what the owner asked (days=N); Before the cutoff computed from it once.
	Days   int       `audit:"days"`
	Before time.Time `audit:"before"`
	// AccountID and Actor name who asked (the account, and the session's username or the
	// key's name); RequestID the request, for the node's log.
	AccountID string    `audit:"-"`
	Actor     string    `audit:"-"`
	RequestID string    `audit:"-"`
	CreatedAt time.Time `audit:"-"`
	// TouchedAt is when the node running the purge last reported progress (at its start,
	// then after each chunk): a purge not touched for a while has no node running it.
	TouchedAt time.Time `audit:"-"`
}

// LogPurgeStore stores the purges of app logs as intents (LogPurge) and runs them.
type LogPurgeStore interface {
	// BeginLogPurge stores the intent. With an AuditOutbox in ctx (and the event outbox
	// that marks the change's own store call: audit.Own), the purge's audit entry is
	// stored in the same write: SQLite in its transaction, MongoDB staged before the
	// insert and confirmed by the inserted document. No log entry is deleted by it.
	BeginLogPurge(ctx context.Context, p LogPurge) error
	// RunLogPurge deletes the app's entries created before p.Before in chunks (each its
	// own write, so that other writers get in), touching the intent between them, then
	// removes the intent (on MongoDB once its audit entry is in the chain: the intent is
	// what confirms it). It answers how many entries this call deleted. It may run again,
	// or on several nodes at once, for one intent: an entry goes once, and the purge ends
	// at its cutoff whatever was written since.
	RunLogPurge(ctx context.Context, p LogPurge) (int, error)
	// LogPurges answers the stored intents, oldest first.
	LogPurges(ctx context.Context) ([]LogPurge, error)
}
