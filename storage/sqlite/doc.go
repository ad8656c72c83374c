// Package sqlite is Keyward's embedded storage engine, built on modernc.org/sqlite (pure
// Go, no cgo). It owns the SQLite schema, its numbered migrations (migrations.go), and the
// mapping of the storage contract onto SQL; it passes storage/storagetest unchanged.
//
// Shape:
//   - Two connection pools on one file. The writer pool has exactly one connection, and
//     its transactions start with BEGIN IMMEDIATE, because SQLite allows one writer at a
//     time: queueing our own writers in database/sql instead of inside SQLite means they
//     never see SQLITE_BUSY, and taking the write lock up front means a read-then-write
//     transaction can never fail to upgrade. The reader pool has several query_only
//     connections which, in WAL mode, read a consistent snapshot without blocking the
//     writer.
//   - Every connection keeps the statements it runs prepared, by query text, up to 200
//     (stmtcache.go, a wrapper of the driver's connections): modernc.org/sqlite parses a
//     query again at each call that is not a prepared *sql.Stmt, and parsing was most of a
//     point read's cost. Store code runs plain ExecContext/QueryContext and gets the
//     prepared form.
//   - busy_timeout covers the remaining contention: another process on the same file, and
//     WAL checkpoints.
//   - Times are INTEGER unix milliseconds with 0 standing for the zero time.Time, so an
//     instant exactly at the Unix epoch reads back as the zero time; Keyward never stores
//     1970-01-01T00:00:00Z as a meaningful time.
//   - Case-insensitive uniqueness uses unique indexes on columns holding strings.ToLower
//     copies, lowered in Go rather than by SQLite's lower(), which only folds ASCII. The
//     same copies serve the list searches, which use instr() rather than LIKE so that the
//     search is a literal substring ('%' and '_' are not wildcards).
//   - Every Update method shares updateRecord: read, updater, write in one IMMEDIATE
//     transaction on the writer. Bulk inserts (licenses, tokens) run one prepared
//     statement per row in one transaction, so they are all or nothing.
//   - Records of an app (app_users, licenses, devices, app_tokens) carry foreign keys with
//     ON DELETE CASCADE (a device's names both its app and its user), which also make
//     creating a record of an unknown app, or a device of an unknown user, answer
//     ErrNotFound. DeleteApp and DeleteUser still delete the records that belong to them
//     explicitly, in one transaction, so they never depend on a connection having
//     foreign keys enabled; a later record kind of an app must be added to appChildTables.
//     apps.account_id has no foreign key: deleting an account does not delete its apps.
//     Log entries, webhook deliveries and attempts and client session copies have no
//     foreign key either (they are written without a parent check) and are swept the
//     same way.
//   - Lists order by their sort column with id as tie-breaker (both reversed for a
//     descending sort), each backed by an (app_id, column, id) index. A zero time is 0,
//     so it sorts before every time after 1970.
//
// Where it stops scaling: every write in the process goes through one connection, so write
// throughput is that of one SQLite writer (thousands of small transactions a second on a
// local SSD, far less on slow disks), and every Update method holds the write lock while
// its updater function runs; a bulk insert of many licenses holds it for the whole batch. The file must be on a local filesystem of a single host — WAL
// needs shared memory, so network filesystems and several Keyward nodes sharing one file
// are unsupported. A cluster uses the MongoDB engine (storage/mongo) instead.
package sqlite
