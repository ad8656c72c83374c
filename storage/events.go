package storage

import (
	"context"
	"time"
)

// EventRecord is one stored event of the durable event log (issue 21): what a change
// published, kept until every consumer that must see it has read it.
type EventRecord struct {
	// ID is the event's own id (a UUID), given by the publisher: consumers are idempotent
	// by it (a log entry and a webhook delivery carry it).
	ID string
	// Pos is the event's position in the log, across apps, assigned by AppendEvents:
	// positive, increasing in append order. Consumers read in Pos order with a cursor.
	Pos int64
	// Seq is the event's number among its app's events (1, 2, …), assigned by
	// AppendEvents in the same order as Pos: of two events of one app, the one with the
	// higher Pos has the higher Seq.
	Seq int64
	// Type is the event's dotted name (SPEC 6.1), e.g. user.login.
	Type string
	// AppID is the app the event concerns ("" for none).
	AppID string
	// Payload is the whole event as JSON, as the publisher encoded it.
	Payload []byte
	At      time.Time
}

// EventLogStore is the durable event log: appended to before a change is acknowledged,
// read by consumers with their stored cursors, compacted once consumed.
type EventLogStore interface {
	// AppendEvents stores the events in one write, in the order given, assigning each its
	// Pos and Seq (written into evs). Either every event is stored or the error says the
	// batch was not (on the MongoDB engine a failed batch may leave some of its events
	// stored: the caller answers the change with an error, and consumers are idempotent).
	// Concurrent appends, from this process or another node, never share a Pos, nor a Seq
	// within an app.
	AppendEvents(ctx context.Context, evs []EventRecord) error
	// ReadEvents answers up to n events with Pos > after, in Pos order.
	ReadEvents(ctx context.Context, after int64, n int) ([]EventRecord, error)
	// LastEventPos answers the highest Pos stored (0 when the log is empty).
	LastEventPos(ctx context.Context) (int64, error)
	// EventCursor answers the stored cursor of a consumer: the Pos of the last event it
	// handled (0 when it has none).
	EventCursor(ctx context.Context, consumer string) (int64, error)
	// SetEventCursor stores the consumer's cursor. A cursor only moves forward: a pos
	// lower than the stored one changes nothing.
	SetEventCursor(ctx context.Context, consumer string, pos int64) error
	// CompactEvents removes up to limit events with Pos <= through created before before,
	// oldest first, and answers how many. The newest event of each app is kept (it carries
	// the app's sequence on), so compaction never makes a Seq or a Pos be given twice.
	CompactEvents(ctx context.Context, through int64, before time.Time, limit int) (int, error)
}
