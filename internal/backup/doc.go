// Package backup owns Keyward's backups and its engine-neutral archive.
//
// The archive (Export, Import) is a tar.gz of JSON lines, one file per record kind
// (records/<kind>.jsonl, the record types of package storage as the engine stores them:
// sealed secrets stay sealed, the audit chain and the event log's positions are kept), the
// bytes of every file (blobs/<key>) and manifest.json last: the format version, the
// Keyward version and schema version, the count of each kind and the size and SHA-256 of
// every entry. It moves a node's data between engines (SQLite to MongoDB is the way from
// one node to a cluster) and is what a MongoDB node's backup is.
//
// Reading goes through storage.ArchiveStore (each engine's one line per table); writing
// goes through the ordinary Create methods of a store opened without a Sealer, in the
// order of kinds (parents first), so the importer is one loop for both engines. A new
// table is a line in kinds (and in each engine's archive.go): the engines' every-table
// tests fail until it is.
//
// A backup of the embedded node (Snapshot) is the same tar.gz with the SQLite database
// itself (VACUUM INTO on a connection of its own, while the node keeps writing) in place
// of the records: faster to take and restore, same manifest and checks.
//
// Restore checks before it writes anything: the manifest's format, every entry's size and
// checksum, the count of every kind, that the configured secrets key opens every sealed
// secret, and the manifest's KeyCheck, sealed with the node's key when the backup was taken
// (refused, saying so, when it does not open) and that the target is empty. It builds the
// embedded database under a temporary name in the data dir and moves it into place; a
// restore that fails removes what it built.
//
// Scheduler takes a node's backups every interval and when an administrator asks, one at a
// time, stores them at a Destination (Folder, or S3 for any S3-compatible bucket through
// minio-go) under names that carry their time, and keeps the newest Retention.Keep, none
// older than Retention.MaxAge (the newest always). It reports keyward_backup_* metrics; the
// server runs it under its supervisor and the admin routes (http/backups.go) list, take and
// download through it.
package backup
