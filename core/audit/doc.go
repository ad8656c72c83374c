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
//     and, on SQLite, appends the entry at the end of its account's chain in the change's
//     transaction, from the records the updater handed over by then: the change, its
//     events and its entry are stored together or not at all. This covers every update and
//     delete made through events.Change of a record the path names (or of the app itself).
//   - After the change (Record), before the answer leaves: MongoDB (FerretDB v1.24 has no
//     multi-document transactions, so the entry is a write the answer waits for), creations
//     (the record's id is known from the answer only), bulk routes (one entry for every
//     record, written after them all), dashboard socket actions, and changes made with no
//     events.Change of their own (no transaction to ride). A SIGKILL between such a change
//     and its entry loses the entry of a change that was never acknowledged.
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
