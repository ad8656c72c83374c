package storage

import "context"

// EventOutbox carries the events of a change into the write that makes the change (the
// transactional outbox): an engine that can writes them in the change's own transaction,
// so the change and its events are stored together or not at all. The event log's
// producers put one in the context of the change's store call (events.Change); an engine
// that cannot (MongoDB: FerretDB 1.24 has no multi-document transactions) leaves it, and
// the producer writes the events itself before it acknowledges the change.
type EventOutbox interface {
	// Take answers the events to write with the change (nil when none are left). The
	// engine calls it inside its write transaction, after the change's own statements
	// (so an updater that adds events sees them written), appends what it answers as
	// AppendEvents does (assigning Pos and Seq) and reports the outcome with Stored. A
	// write that fails or is rolled back leaves them to be taken again.
	Take() []EventRecord
	// Stored reports that recs (as Take answered them, with Pos and Seq set) were
	// committed with the change.
	Stored(recs []EventRecord)
}

type outboxKey struct{}

// WithEventOutbox answers ctx carrying the outbox for the store calls made with it.
func WithEventOutbox(ctx context.Context, o EventOutbox) context.Context {
	return context.WithValue(ctx, outboxKey{}, o)
}

// EventOutboxFrom answers the outbox ctx carries, nil when none.
func EventOutboxFrom(ctx context.Context) EventOutbox {
	o, _ := ctx.Value(outboxKey{}).(EventOutbox)
	return o
}

// WithoutEventOutbox answers ctx whose store calls write no outbox: a write made while
// serving a change that is not the change itself (a read-modify-write of something
// else) must not carry the change's events.
func WithoutEventOutbox(ctx context.Context) context.Context {
	if EventOutboxFrom(ctx) == nil {
		return ctx
	}
	return context.WithValue(ctx, outboxKey{}, nil)
}

// CountedOutbox is an outbox whose events depend on how many records the change touched
// (a bulk delete answers "n license(s) deleted", and writes no event when n is 0). The
// engine calls Counted in the change's transaction, after its statements and before
// Take. An engine that does not call it leaves the producer to call it with the count the
// store call answered.
type CountedOutbox interface {
	EventOutbox
	Counted(n int)
}

// OutboxCounted tells ctx's outbox, if it is a CountedOutbox, how many records the
// change touched (for the engines, inside the change's transaction).
func OutboxCounted(ctx context.Context, n int) {
	if o, ok := EventOutboxFrom(ctx).(CountedOutbox); ok {
		o.Counted(n)
	}
}

// AuditOutbox carries the audit entry of a change into the write that makes it (issue
// 21: audit with the change), as EventOutbox carries its events. The HTTP edge puts one in
// the request's context (its draft: actor, address, route, record); an engine that can
// takes it in the change's own store call (the one that carries the EventOutbox: a write
// made while serving a change that is not the change itself carries neither) and appends
// the entry at the end of its account's chain (AppendAudit's rules) in the change's
// transaction (SQLite). MongoDB (FerretDB 1.24 has no multi-document transactions)
// stages the entry before the change's write, marks the written document with it and
// appends it after (AuditRecoverer appends what a stopped node left staged).
type AuditOutbox interface {
	// TakeAudit answers the entry to append with the change; false when there is none
	// or it cannot be told (a creation that handed over no record): the edge then
	// appends it after the change. SQLite calls it inside its write transaction, after
	// the change's statements and its events; MongoDB just before the change's write.
	TakeAudit() (AuditEntry, bool)
	// AuditStored reports that the entry TakeAudit answered was stored with the change
	// (committed with it, or staged and confirmed by its write). A write that fails or
	// is rolled back leaves it to be taken again.
	AuditStored()
}

type auditOutboxKey struct{}

// WithAuditOutbox answers ctx carrying the audit outbox for the store calls made with it.
func WithAuditOutbox(ctx context.Context, o AuditOutbox) context.Context {
	return context.WithValue(ctx, auditOutboxKey{}, o)
}

// AuditOutboxFrom answers the audit outbox ctx carries, nil when none. Engines take it
// only in a write that also carries an EventOutbox (see AuditOutbox).
func AuditOutboxFrom(ctx context.Context) AuditOutbox {
	o, _ := ctx.Value(auditOutboxKey{}).(AuditOutbox)
	return o
}

// AuditParts is an AuditOutbox whose entries are parts of one entry (issue 21): a bulk
// request that changes each record in a write of its own (users bulk and import, licenses
// add-time) has one entry holding every changed record. Each record's write stores its
// part with the change, as it would an entry (SQLite: in the change's transaction;
// MongoDB: staged and confirmed by the write), but not in the chain: the parts of a group
// are appended as one entry by AuditPartSettler.SettleAuditParts once the request is done,
// or by the engine's RecoverAudit when its node stopped before (MergeAuditParts makes it).
type AuditParts interface {
	AuditOutbox
	// AuditGroup names the entry the parts make (the request's).
	AuditGroup() string
}
