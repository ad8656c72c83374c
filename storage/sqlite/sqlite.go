package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/keyward/keyward/storage"
)

// Config says where the database lives.
type Config struct {
	// Path is the database file, created if missing. It must be a real file: the writer
	// and reader pools each open it, so ":memory:" would give them two different databases.
	Path string
	// Sealer encrypts the secrets the server reads back (TOTP secrets, integration signing
	// secrets) before they are written; nil keeps them in clear. When set, Open seals the
	// values still stored in clear and checks that the sealed ones open (the right key).
	Sealer storage.Sealer
	// BackupBeforeMigrate, when set, is the folder where Open copies the database (VACUUM
	// INTO keyward-schema<from>-<time>.db) before it applies pending migrations to a
	// database that has a schema; Migration says where.
	BackupBeforeMigrate string
}

// Migration says what Open did to the schema.
type Migration struct {
	From, To int    // versions before and after; equal when nothing was pending
	Backup   string // the copy made before migrating, "" when none
}

// busyTimeout is how long a connection waits for a lock held by another process (or a
// checkpoint) before failing with SQLITE_BUSY.
const busyTimeout = 10 * time.Second

// Store is the SQLite engine. It is safe for concurrent use.
type Store struct {
	w      *sql.DB // exactly one connection; every write goes through it
	r      *sql.DB // query_only connections for reads
	sealer storage.Sealer
	path   string // the database file, for Snapshot's own connection
	mig    Migration
	// purgeChunk is the rows a chunk of a log purge deletes (0: logDeleteChunk); tests
	// set it small.
	purgeChunk int
}

var _ storage.Store = (*Store)(nil)

// Open opens (creating if needed) the database at cfg.Path and applies pending migrations.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Path == "" || cfg.Path == ":memory:" || strings.HasPrefix(cfg.Path, "file:") {
		return nil, fmt.Errorf("sqlite: open: path %q: need a database file path", cfg.Path)
	}
	// The driver cuts the DSN at the first '?' to find its parameters.
	if strings.ContainsRune(cfg.Path, '?') {
		return nil, fmt.Errorf("sqlite: open: path %q must not contain '?'", cfg.Path)
	}

	if err := createPrivate(cfg.Path); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w: %v", cfg.Path, storage.ErrUnavailable, err)
	}
	w, err := openPool(dsn(cfg.Path, true))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", cfg.Path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	// Reopening the writer would cost the page cache for nothing.
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)

	mig, err := setupWriter(ctx, w, cfg.BackupBeforeMigrate)
	if err != nil {
		_ = w.Close()
		return nil, wrap("open "+cfg.Path, err)
	}

	r, err := openPool(dsn(cfg.Path, false))
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", cfg.Path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	if err := r.PingContext(ctx); err != nil {
		_ = w.Close()
		_ = r.Close()
		return nil, wrap("open readers "+cfg.Path, err)
	}
	st := &Store{w: w, r: r, sealer: cfg.Sealer, path: cfg.Path, mig: mig}
	if err := st.sealStored(ctx); err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", cfg.Path, err)
	}
	return st, nil
}

// openPool opens a pool whose connections keep their statements prepared
// (stmtcache.go).
func openPool(dsn string) (*sql.DB, error) {
	c, err := newCachingConnector(dsn, stmtCacheSize)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// createPrivate creates the database file with mode 0600 when it does not exist yet.
// SQLite gives the files it creates next to it (the -wal and -shm files) the mode of the
// database file, so all three stay private to the server's user; left to the driver, the
// database would be created 0644 (readable by every local user).
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	} else if err != nil {
		return err
	}
	return f.Close()
}

// dsn builds the driver's data source name. Pragmas go in the DSN rather than being run
// once after Open because database/sql may open new connections at any time, and each
// must be configured the same way.
func dsn(path string, writer bool) string {
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
	q.Set("_foreign_keys", "1")
	if writer {
		// journal_mode=WAL is persistent in the file; the writer sets it before anything
		// else touches the database.
		q.Set("_journal_mode", "WAL")
		// NORMAL in WAL mode can lose the last transactions on power loss but never
		// corrupts the database, and saves an fsync per commit.
		q.Set("_synchronous", "NORMAL")
		q.Set("_txlock", "immediate")
		// Deleted content (a removed integration's sealed secret, an old TOTP secret) is
		// overwritten with zeros instead of lingering in free pages of the file.
		q.Add("_pragma", "secure_delete(1)")
	} else {
		q.Set("_synchronous", "NORMAL")
		// A write through the reader pool would bypass the single-writer queue.
		q.Set("_query_only", "1")
	}
	return path + "?" + q.Encode()
}

func setupWriter(ctx context.Context, w *sql.DB, backupDir string) (Migration, error) {
	var mode string
	if err := w.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return Migration{}, err
	}
	// SQLite silently keeps another mode where WAL is impossible (some network or
	// read-only filesystems); the concurrency design above depends on WAL.
	if !strings.EqualFold(mode, "wal") {
		return Migration{}, fmt.Errorf("journal_mode is %q, want wal (is the file on a local filesystem?)", mode)
	}
	var mig Migration
	var before func(from, to int) error
	if backupDir != "" {
		before = func(from, to int) error {
			if err := os.MkdirAll(backupDir, 0o700); err != nil {
				return fmt.Errorf("backup before migrating: %w", err)
			}
			path := filepath.Join(backupDir, fmt.Sprintf("keyward-schema%d-%s.db", from, time.Now().UTC().Format("20060102T150405.000Z")))
			if _, err := w.ExecContext(ctx, `VACUUM INTO ?`, path); err != nil {
				return fmt.Errorf("backup before migrating from schema %d to %d into %s: %w", from, to, path, err)
			}
			mig.Backup = path
			return nil
		}
	}
	from, err := migrate(ctx, w, before)
	if err != nil {
		return Migration{}, fmt.Errorf("migrate: %w", err)
	}
	mig.From, mig.To = from, LatestSchemaVersion()
	return mig, nil
}

// Migration says what Open did to the schema: the versions before and after, and where
// it copied the database before migrating.
func (s *Store) Migration() Migration { return s.mig }

// Ping reports whether both pools can reach the database file.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.w.PingContext(ctx); err != nil {
		return wrap("ping", err)
	}
	if err := s.r.PingContext(ctx); err != nil {
		return wrap("ping", err)
	}
	return nil
}

// Close closes both pools. In WAL mode closing the last connection checkpoints the log
// into the main file.
func (s *Store) Close() error {
	return errors.Join(s.r.Close(), s.w.Close())
}

// readRow runs a read through the reader pool. Each connection keeps the query
// prepared (stmtcache.go), as it does every query; readRow stays as the name of the
// point reads that run at every request.
func (s *Store) readRow(ctx context.Context, query string, args ...any) *sql.Row {
	return s.r.QueryRowContext(ctx, query, args...)
}

// txStmt answers query run in tx. The writer's connection keeps it prepared
// (stmtcache.go), so a transaction that runs it per row parses it once.
func (s *Store) txStmt(_ context.Context, tx *sql.Tx, query string) txQuery {
	return txQuery{tx: tx, query: query}
}

// txQuery is one statement of a transaction, run as often as needed: a row's (or a
// bounded chunk's) read or write by key, never a scan. It runs without its context's
// cancellation (the transaction keeps it: database/sql rolls the transaction back once
// the context ends): the driver watches a cancellable context with a goroutine of its
// own per statement (modernc.org/sqlite's interruptOnDone), which cost more than the
// statement itself for a row, and there is nothing long to interrupt.
type txQuery struct {
	tx    *sql.Tx
	query string
}

func (q txQuery) ExecContext(ctx context.Context, args ...any) (sql.Result, error) {
	return q.tx.ExecContext(context.WithoutCancel(ctx), q.query, args...)
}

func (q txQuery) QueryRowContext(ctx context.Context, args ...any) *sql.Row {
	return q.tx.QueryRowContext(context.WithoutCancel(ctx), q.query, args...)
}

// wrap adds the operation to err and maps driver errors onto the storage sentinels. The
// driver's message is kept as text, never its type, so callers match sentinels only.
// Errors that are not the driver's (context cancellation) stay matchable as they are.
func wrap(op string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: %s: %w", op, storage.ErrNotFound)
	}
	var se *msqlite.Error
	if !errors.As(err, &se) {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	code := se.Code()
	switch {
	case code == sqlite3.SQLITE_CONSTRAINT_UNIQUE || code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return fmt.Errorf("sqlite: %s: %w: %s", op, storage.ErrConflict, se.Error())
	case code&0xff == sqlite3.SQLITE_BUSY,
		code&0xff == sqlite3.SQLITE_LOCKED,
		code&0xff == sqlite3.SQLITE_IOERR,
		code&0xff == sqlite3.SQLITE_CANTOPEN,
		code&0xff == sqlite3.SQLITE_FULL:
		return fmt.Errorf("sqlite: %s: %w: %s", op, storage.ErrUnavailable, se.Error())
	}
	return fmt.Errorf("sqlite: %s: %s", op, se.Error())
}

// isForeignKey reports a foreign key violation, which only a token for an unknown
// account causes.
func isForeignKey(err error) bool {
	var se *msqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

// toMillis and fromMillis convert times to and from their column form: unix milliseconds,
// 0 for the zero time (whose own unix value is a large negative number).
func toMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMillis(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}
