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
// Entries are written before the change is acknowledged: Record returns once the entry is
// stored. Concurrent entries share one write (a group commit: one goroutine takes every
// entry queued while the last write ran, up to BatchSize, without a timer). This is a
// write after the change's own, not in its transaction: one SQLite transaction would tie
// every Update method of both engines to the audit log, and MongoDB (FerretDB v1.24) has
// no multi-document transactions anyway. A SIGKILL between the change and its entry loses
// the entry of a change that was never acknowledged; an acknowledged change always has its
// entry. Close writes everything queued before it returns. The same goroutine deletes
// entries older than the retention (default 90 days) once an hour, from the start of each
// account's chain only.
//
// Entries are tamper-evident: the store chains each account's entries (storage.AuditHash:
// a sequence per account and the previous entry's hash), and Verify walks every chain and
// names its first broken entry (`keyward audit verify`).
//
// Which routes are audited, and who the actor is, is the http edge's business; this
// package builds, stores, lists and verifies.
package audit
