// Package audit owns the audit log (issues 14 and 21): the changes owners and
// administrators make through the Dashboard and admin APIs, who made them (session,
// account key or scoped key), from where, on what record, and for updates the members of
// the record that the write changed, before and after.
//
// What an entry says of a change comes from the records, not the request: the core
// services' update paths wrap their store updater in Track (or call Changed), which hands
// the record as read and as written to the request's collector (WithChanges, put in the
// context by the HTTP edge); Diff turns the pair into the members that differ, secrets
// redacted by the record's own fields (the `audit` struct tags of the storage records).
//
// Entries are stored before the change is acknowledged, by one of two paths:
//
//   - With the change (storage.AuditOutbox). The HTTP edge puts the request's draft
//     (actor, address, route, record, the route's success status) in the context; the
//     change's own store call, the one that carries its events (events.Change), takes it
//     with the records the service handed over by then (Track for an update, Created for
//     a creation, which names the created record: the one, or the app for a batch). On
//     SQLite the entry is appended at the end of its account's chain in the change's
//     transaction: the change, its events and its entry are stored together or not at
//     all. On MongoDB (FerretDB v1.24 has no multi-document transactions) it is staged
//     before the change's write, the written document carries its id (a deletion: its
//     absence confirms it), and it is appended after; storage.AuditRecoverer appends what
//     a node stopped between the two left staged (the writer runs it at start and every
//     30 s). This covers the updates, deletions and creations made through events.Change,
//     the bulk routes whose records go in one write (a license import), and the changes
//     that publish no event, whose services mark their own store call with Own (an
//     outbox with no events): API keys, passkeys, the account's settings (password, API
//     key, two-factor, plan, an administrator's change), a sign-out's revocation, an
//     email change's confirmation token, store connections and product mappings, token
//     edits, an integration's new signing secret, an integration's test (the attempt's
//     record), a webhook's redelivery (the delivery's write; on MongoDB the queue insert
//     that takes it back from the history, and every later write and move of the
//     delivery keeps the marker, which RecoverAudit looks for in both collections), a ban
//     sent over a dashboard socket (its job's context carries the socket's entry, built
//     from the socket's actor, address and app: dashboard.ChangeAuditor), the purge of an
//     app's logs (its intent, storage.LogPurge: the entry goes with the intent's insert,
//     before any log entry is deleted; see below), a bulk deletion of licenses (by ids
//     or by filter; see below). Socket hooks and file uploads ride their events.Change
//     (a hook's change stores app.hooks_change with it). On MongoDB a partial update
//     carries the marker through updateAudited, a creation through insertOwned, a
//     deletion through deleteOne, a bulk deletion through stageDeleteMany.
//   - With the change, in parts (storage.AuditParts): the bulk routes that change each
//     record in a write of its own (users bulk and import, licenses add-time). Each
//     record's write stores its part of the request's one entry as above (SQLite: in its
//     transaction; MongoDB: staged and confirmed by it); once the handler is done the edge
//     has the parts merged into the entry (SettleParts: storage.AuditPartSettler), and
//     what a stopped node left is merged by the engine's RecoverAudit (both engines),
//     so a record changed before a crash never lacks its entry. A bulk row whose write
//     carries no part hands its change to the path after the change.
//   - After the change (Record), before the answer leaves, where no single write can
//     carry the entry (listed below). A SIGKILL between such a change and its entry
//     loses the entry of a change that was never acknowledged.
//     keyward_audit_entries_total{written} counts both paths by route (a dashboard
//     socket's entries as WS /api/apps/:appId/ws/connect).
//
// The purge of an app's logs (DELETE .../logs) is no one write (SQLite deletes in
// transactions of at most 10,000 rows so other writers get in; MongoDB's DeleteMany is
// not atomic on FerretDB), so it is stored first as an intent (storage.LogPurgeStore:
// the app, the cutoff computed once, who asked) and its entry goes with the intent's
// write (Own; on MongoDB staged and confirmed by the inserted intent, which the purge
// settles before it removes the intent). The entries then go in chunks, and the intent
// with the last. An intent a stopped node left is run to its cutoff by the log janitor
// of the next node at start and by every node's sweep every 30 s (logs.Janitor
// ResumePurges): an acknowledged purge always completes, and its entry exists once.
//
// A bulk deletion of licenses (licenses/bulk-delete) names the app as its record (the
// route is OfApp) and says what was asked (ids or filter) and how many went (count). Its
// store call (DeleteLicenses, DeleteLicensesWhere) takes the draft: on SQLite in the
// deletions' transaction, the count told before it is taken. On MongoDB the deletions are
// many writes and leave no document to carry a marker, so the entry is staged once before
// any of them with the ids of the licenses found to delete; the absence of any of them
// confirms it. The request appends it once the deletions are done, its count set; a node
// stopped in between leaves it to RecoverAudit, which appends it, counting the listed
// licenses gone, or drops it (older than the claim lease) when none is gone. A deletion
// that finds nothing to delete on MongoDB stages nothing and is written after (no change).
//
// What is still written after the change, and why:
//
//   - actions that store nothing, where after the action is the honest choice:
//     deliveries to live sockets (REST broadcast, chat, push, command, kick,
//     force-logout, and the same sent over a dashboard socket), a license check
//     (licenses/verify), a signed license file, an email change asked for an address
//     that is taken (only a mail goes).
//
// Record's concurrent entries share one write (a group commit: one goroutine takes every
// entry queued while the last write ran, up to BatchSize, without a timer). Close writes
// everything queued before it returns. The same goroutine deletes entries older than the
// retention (default 90 days) once an hour, from the start of each account's chain only.
//
// Entries are tamper-evident: the store chains each account's entries (storage.AuditHash:
// a sequence per account and the previous entry's hash), and Verify walks every chain and
// names its first broken entry (`keyward audit verify`).
//
// Which routes are audited, and who the actor is, is the http edge's business; this
// package builds, stores, lists and verifies.
package audit
