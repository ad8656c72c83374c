package sqlite

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/storagetest"
)

func TestArchive(t *testing.T) {
	storagetest.RunArchive(t, storagetest.ArchiveHarness{
		Open: func(t *testing.T, sealer storage.Sealer) storage.Store {
			s, err := Open(t.Context(), Config{Path: filepath.Join(t.TempDir(), "keyward.db"), Sealer: sealer})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
		Tables: func(t *testing.T, st storage.Store) []string {
			rows, err := st.(*Store).r.QueryContext(t.Context(), `SELECT name FROM sqlite_master WHERE type = 'table'`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var out []string
			for rows.Next() {
				var n string
				if err := rows.Scan(&n); err != nil {
					t.Fatal(err)
				}
				out = append(out, n)
			}
			return out
		},
	})
}

// TestSnapshot copies the database with VACUUM INTO on its own connection (internal/backup
// tests it while writes continue): the copy opens with the key and holds the records.
func TestSnapshot(t *testing.T) {
	s := openTemp(t, filepath.Join(t.TempDir(), "keyward.db"))
	p := storagetest.PopulateEveryKind(t, s, 1)
	path := filepath.Join(t.TempDir(), "copy.db")
	if err := s.Snapshot(t.Context(), path); err != nil {
		t.Fatal(err)
	}
	c, err := Open(t.Context(), Config{Path: path, Sealer: storagetest.TestSealer(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.GetAppByID(t.Context(), p.App.ID); err != nil {
		t.Errorf("the copy lacks the app: %v", err)
	}
	if v, err := c.SchemaVersion(t.Context()); err != nil || v != LatestSchemaVersion() {
		t.Errorf("copy's schema version %d, %v; want %d", v, err, LatestSchemaVersion())
	}
}

// withMigrations runs f with extra steps appended to the schema's history.
func withMigrations(t *testing.T, extra ...migration) {
	t.Helper()
	orig := migrations
	migrations = append(append([]migration(nil), orig...), extra...)
	t.Cleanup(func() { migrations = orig })
}

// TestFailedMigrationChangesNothing: of two pending steps, the second fails; the first's
// table is not there and the schema is at its old version, data intact.
func TestFailedMigrationChangesNothing(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "keyward.db")
	s := openTemp(t, path)
	p := storagetest.PopulateEveryKind(t, s, 1)
	_ = s.Close()
	last := LatestSchemaVersion()
	withMigrations(t,
		migration{version: last + 1, name: "fine", sql: `CREATE TABLE step_one (a TEXT) STRICT; ALTER TABLE apps ADD COLUMN extra INTEGER NOT NULL DEFAULT 0;`},
		migration{version: last + 2, name: "broken", sql: `ALTER TABLE no_such_table ADD COLUMN b INTEGER`})
	if s2, err := Open(ctx, Config{Path: path}); err == nil {
		_ = s2.Close()
		t.Fatal("Open with a failing migration succeeded")
	} else if !strings.Contains(err.Error(), "broken") {
		t.Errorf("error %v does not name the failing step", err)
	}
	migrations = migrations[:len(migrations)-2]
	s3 := openTemp(t, path)
	if v, _ := s3.SchemaVersion(ctx); v != last {
		t.Errorf("schema version %d after a failed migration, want %d", v, last)
	}
	var n int
	if err := s3.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'step_one'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the first step's table is there (%d, %v): the failed migration was not undone", n, err)
	}
	if _, err := s3.r.ExecContext(ctx, `SELECT extra FROM apps`); err == nil {
		t.Errorf("the first step's column is there")
	}
	if _, err := s3.GetAppByID(ctx, p.App.ID); err != nil {
		t.Errorf("app after a failed migration: %v", err)
	}
}

// TestBackupBeforeMigrate: a pending step on a database with a schema copies it first,
// and Migration says where; the copy opens at the old version.
func TestBackupBeforeMigrate(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "keyward.db")
	s := openTemp(t, path)
	if m := s.Migration(); m.Backup != "" || m.From != 0 {
		t.Errorf("a new database: %+v, want no backup", m)
	}
	storagetest.PopulateEveryKind(t, s, 1)
	_ = s.Close()
	last := LatestSchemaVersion()
	withMigrations(t, migration{version: last + 1, name: "next", sql: `CREATE TABLE next_step (a TEXT) STRICT`})
	s2, err := Open(ctx, Config{Path: path, BackupBeforeMigrate: filepath.Join(dir, "backups")})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	m := s2.Migration()
	if m.From != last || m.To != last+1 || m.Backup == "" {
		t.Fatalf("Migration() = %+v, want from %d to %d with a backup", m, last, last+1)
	}
	c, err := sql.Open("sqlite", m.Backup) // not Open: it would migrate the copy
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var n int
	if err := c.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, last+1).Scan(&n); err != nil || n != 0 {
		t.Errorf("the copy has the new step (%d, %v): it was made after migrating", n, err)
	}
}
