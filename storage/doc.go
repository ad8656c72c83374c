// Package storage owns Keyward's record types and the interfaces every storage engine
// implements. Engines live in sub-packages: storage/sqlite (modernc.org/sqlite, the
// embedded default) and storage/mongo (mongo-driver v2, for clusters). One conformance
// suite, storage/storagetest, runs unchanged against both and is the written contract.
//
// Contract shared by every method:
//   - Missing records answer ErrNotFound; unique-key violations answer ErrConflict. Engines
//     map their driver errors onto these two sentinels and never leak driver types.
//   - Times are stored with millisecond precision in UTC; callers pass times already
//     truncated (see Now) so that what is read back equals what was written.
//   - Case-insensitive uniqueness (account usernames and emails) is enforced by the engine
//     on a lower-cased copy of the value, so it works on MongoDB-wire servers without
//     collation support (FerretDB).
//   - Update methods take an updater function and are atomic per record: concurrent
//     updaters of one record never lose each other's writes.
//   - A lost connection to the database answers an error wrapping ErrUnavailable.
//   - Creating a record under a parent that does not exist (a user of an unknown app, a
//     device of an unknown user) answers ErrNotFound, so deletes never leave orphans.
//   - With a Sealer (the server always gives one), the secrets the server reads back
//     (accounts' TOTP secrets, integrations' signing secrets) are stored sealed, bound to
//     their record, and answered in clear; values found in clear are sealed at open, and a
//     sealed value that does not open (another key) fails the open. storagetest.RunSealing
//     checks it against the raw bytes of each engine.
//   - A write made with a context carrying an EventOutbox (WithEventOutbox) either stores
//     the outbox's events in the write's own transaction and reports them Stored, or
//     leaves them (the producer appends them before it answers): SQLite stores them,
//     MongoDB leaves them (FerretDB 1.24 has no multi-document transactions).
//     Such a write also takes the context's AuditOutbox (the edge's audit draft) and
//     appends its entry to the account's chain in the same transaction (SQLite), or
//     stages it before the write, which carries its id, and appends it after (MongoDB;
//     AuditRecoverer appends what a crash left staged). An AuditParts outbox (one
//     record's part of a bulk request's entry) is stored so too, outside the chain, until
//     AuditPartSettler merges the request's parts into one entry (or, after a crash,
//     RecoverAudit, which SQLite implements for parts only). A bulk change tells
//     its count to a CountedOutbox in its transaction; a client round's sessions, last
//     logins and sign-in events share one transaction (SaveClientRound) on SQLite.
//
// Every engine is also an ArchiveStore (archive.go): it reads each record kind as stored
// for the engine-neutral archive of internal/backup, names every table or collection it
// keeps (the every-table test, storagetest.RunArchive, fails on one that is no kind), and
// restores the audit chain and the event log with their sequences and positions.
package storage
