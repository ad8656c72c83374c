package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migration is one step of the schema. Steps are applied in order, each in its own
// transaction together with its row in schema_migrations, so a crash mid-way leaves the
// database at the previous step and the next Open resumes there.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations is the schema's whole history. Append only: a released step is never edited,
// a later feature adds version N+1 here (ALTER TABLE, CREATE INDEX, …).
var migrations = []migration{
	{
		version: 1,
		name:    "accounts and account tokens",
		sql: `
CREATE TABLE accounts (
	id                   TEXT    NOT NULL PRIMARY KEY,
	username             TEXT    NOT NULL,
	username_lower       TEXT    NOT NULL,
	email                TEXT    NOT NULL,
	email_lower          TEXT    NOT NULL,
	password_hash        TEXT    NOT NULL,
	role                 TEXT    NOT NULL,
	plan                 TEXT    NOT NULL,
	email_verified       INTEGER NOT NULL,
	two_factor_enabled   INTEGER NOT NULL,
	two_factor_secret    TEXT    NOT NULL,
	two_factor_pending   TEXT    NOT NULL,
	two_factor_last_step INTEGER NOT NULL,
	api_key_hash         TEXT    NOT NULL,
	api_key_prefix       TEXT    NOT NULL,
	api_key_last4        TEXT    NOT NULL,
	tokens_valid_after   INTEGER NOT NULL,
	api_calls_used       INTEGER NOT NULL,
	api_calls_reset_at   INTEGER NOT NULL,
	last_login_at        INTEGER NOT NULL,
	created_at           INTEGER NOT NULL,
	updated_at           INTEGER NOT NULL
) STRICT;

CREATE UNIQUE INDEX accounts_username_lower ON accounts (username_lower);
CREATE UNIQUE INDEX accounts_email_lower ON accounts (email_lower);
-- Not unique, to behave as the MongoDB engine does (FerretDB has no reliable partial
-- unique index); keys are random, so collisions are not a concern. Accounts without a key
-- stay out of the index.
CREATE INDEX accounts_api_key_hash ON accounts (api_key_hash) WHERE api_key_hash <> '';
-- The list order, with id as tie-breaker so that pages never overlap.
CREATE INDEX accounts_created ON accounts (created_at, id);

CREATE TABLE account_tokens (
	hash       TEXT    NOT NULL PRIMARY KEY,
	account_id TEXT    NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
	purpose    TEXT    NOT NULL,
	expires_at INTEGER NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;

CREATE INDEX account_tokens_account ON account_tokens (account_id, purpose);
`,
	},
}

// migrate brings the database at db (the writer pool) to the last migration. Applied steps
// are skipped, so calling it on an up-to-date database changes nothing.
func migrate(ctx context.Context, db *sql.DB) error {
	// schema_migrations is created outside the numbered steps: it is what records them.
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER NOT NULL PRIMARY KEY,
	name       TEXT    NOT NULL,
	applied_at INTEGER NOT NULL
) STRICT`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}

	// A database migrated by a newer Keyward has a schema this build does not know; writing
	// to it could corrupt data the newer version relies on.
	var latest sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&latest); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if known := migrations[len(migrations)-1].version; latest.Valid && latest.Int64 > int64(known) {
		return fmt.Errorf("database schema version %d is newer than this build's %d: upgrade Keyward", latest.Int64, known)
	}

	for _, m := range migrations {
		if err := applyMigration(ctx, db, m); err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
	}
	return nil
}

func applyMigration(ctx context.Context, db *sql.DB, m migration) error {
	// The writer pool begins transactions IMMEDIATE, so when two processes open the same
	// new file at once, one applies the step and the other then sees it recorded.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op

	var applied int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&applied); err != nil {
		return err
	}
	if applied > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.version, m.name, time.Now().UnixMilli()); err != nil {
		return err
	}
	return tx.Commit()
}
