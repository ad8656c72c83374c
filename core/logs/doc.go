// Package logs owns application logs (SPEC 4.8): the writer that turns the event log's
// events into log entries (a consumer of core/events, in batches, idempotent by event
// id); the janitor (retention by age and per-app cap, and the resumption of purges a
// stopped node left); and the owner's log queries (list, stats, event types) and purge.
//
// A purge (Service.Purge, DELETE .../logs) is stored as an intent before any entry goes
// (storage.LogPurge: the app, the cutoff computed once from days, who asked), its audit
// entry in the same write (audit.Own: SQLite in the intent's transaction; MongoDB staged
// and confirmed by the inserted intent). Its entries then go in chunks of at most 10,000
// (each its own write, so other writers get in), and the intent with the last. The
// request answers what it deleted. An intent left by a node that stopped midway (or
// whose database failed midway) is run to the same cutoff by Janitor.ResumePurges: every
// intent at the janitor's start, then every PurgeEvery (30 s) those untouched for
// PurgeStale (2 minutes; a run touches its intent after each chunk). Runs of one intent
// on two nodes at once delete each entry once between them.
package logs
