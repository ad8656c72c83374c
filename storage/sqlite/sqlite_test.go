package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/storagetest"
)

func openTemp(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(t.Context(), Config{Path: path, Sealer: storagetest.TestSealer(t)})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		return openTemp(t, migratedCopy(t))
	})
}

// migratedCopy answers the path of a new database in the test's temp dir with every
// migration applied: a copy of one migrated once per test process (testenv.FileTemplate),
// as migrating each subtest's store costs more under -race than its checks. The tests
// below that are about migrating start from empty files.
func migratedCopy(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keyward.db")
	testenv.FileTemplate(t, "sqlite-migrated", path, func(p string) error {
		s, err := Open(context.Background(), Config{Path: p})
		if err != nil {
			return err
		}
		return s.Close()
	})
	return path
}

func TestMigrationsAreNumberedInOrder(t *testing.T) {
	// Strictly increasing from 1: branches reserve numbers ahead of their merge, so a gap
	// may exist until the numbers before it are merged.
	for i, m := range migrations {
		if (i == 0 && m.version != 1) || (i > 0 && m.version <= migrations[i-1].version) {
			t.Errorf("migrations[%d] has version %d, not after %d", i, m.version, migrations[max(i-1, 0)].version)
		}
		if m.name == "" || strings.TrimSpace(m.sql) == "" {
			t.Errorf("migration %d has no name or no SQL", m.version)
		}
	}
}

type migrationRow struct {
	version   int
	name      string
	appliedAt int64
}

func migrationRows(t *testing.T, s *Store) []migrationRow {
	t.Helper()
	rows, err := s.r.QueryContext(t.Context(), `SELECT version, name, applied_at FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	defer rows.Close()
	var out []migrationRow
	for rows.Next() {
		var r migrationRow
		if err := rows.Scan(&r.version, &r.name, &r.appliedAt); err != nil {
			t.Fatalf("scan schema_migrations: %v", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	return out
}

func TestReopenKeepsDataAndMigrationsOnce(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "keyward.db")

	s, err := Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	a := storage.Account{ID: "a1", Username: "Persist", Email: "persist@example.com", Plan: "pro", CreatedAt: storage.Now()}
	if err := s.CreateAccount(ctx, a); err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	tok := storage.AccountToken{Hash: "h1", AccountID: a.ID, Purpose: storage.TokenVerifyEmail,
		ExpiresAt: a.CreatedAt.Add(3600e9), CreatedAt: a.CreatedAt}
	if err := s.CreateAccountToken(ctx, tok); err != nil {
		t.Fatalf("CreateAccountToken: %v", err)
	}
	first := migrationRows(t, s)
	if len(first) != len(migrations) {
		t.Fatalf("schema_migrations has %d rows after the first Open, want %d", len(first), len(migrations))
	}
	for i, r := range first {
		if r.version != migrations[i].version || r.name != migrations[i].name {
			t.Errorf("schema_migrations row %d = %+v, want version %d %q", i, r, migrations[i].version, migrations[i].name)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s2 := openTemp(t, path)
	got, err := s2.GetAccountByUsername(ctx, "persist")
	if err != nil {
		t.Fatalf("GetAccountByUsername after reopen: %v", err)
	}
	if got.ID != a.ID || got.Email != a.Email || got.Plan != a.Plan || !got.CreatedAt.Equal(a.CreatedAt) {
		t.Errorf("account after reopen = %+v, want %+v", got, a)
	}
	// Reopening applied nothing again: same rows, same applied_at.
	if again := migrationRows(t, s2); fmt.Sprint(again) != fmt.Sprint(first) {
		t.Errorf("schema_migrations changed on reopen: %v, was %v", again, first)
	}
	// Running the migrations by hand on the migrated database is a no-op too.
	if _, err := migrate(ctx, s2.w, nil); err != nil {
		t.Fatalf("migrate on an up-to-date database: %v", err)
	}
	if again := migrationRows(t, s2); fmt.Sprint(again) != fmt.Sprint(first) {
		t.Errorf("schema_migrations changed by a second migrate: %v, was %v", again, first)
	}
	if _, err := s2.ConsumeAccountToken(ctx, tok.Purpose, tok.Hash, a.CreatedAt); err != nil {
		t.Errorf("token after reopen: %v", err)
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "keyward.db")
	s := openTemp(t, path)
	if _, err := s.w.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from the future', 0)`,
		migrations[len(migrations)-1].version+1); err != nil {
		t.Fatalf("insert: %v", err)
	}
	s2, err := Open(ctx, Config{Path: path})
	if err == nil {
		_ = s2.Close()
		t.Fatal("Open of a database with a newer schema succeeded, want an error")
	}
	known := migrations[len(migrations)-1].version
	if !strings.Contains(err.Error(), "newer") || !strings.Contains(err.Error(), fmt.Sprintf("version %d", known+1)) ||
		!strings.Contains(err.Error(), fmt.Sprintf("build's %d", known)) {
		t.Errorf("Open error = %v, want it to say the schema is newer, naming both versions", err)
	}
}

func TestPragmas(t *testing.T) {
	s := openTemp(t, filepath.Join(t.TempDir(), "keyward.db"))
	want := map[string]string{
		"journal_mode": "wal",
		"foreign_keys": "1",
		"synchronous":  "1", // NORMAL
		"busy_timeout": fmt.Sprint(busyTimeout.Milliseconds()),
	}
	for name, db := range map[string]*sql.DB{"writer": s.w, "reader": s.r} {
		for pragma, v := range want {
			var got string
			if err := db.QueryRowContext(t.Context(), "PRAGMA "+pragma).Scan(&got); err != nil {
				t.Fatalf("%s: PRAGMA %s: %v", name, pragma, err)
			}
			if !strings.EqualFold(got, v) {
				t.Errorf("%s: PRAGMA %s = %s, want %s", name, pragma, got, v)
			}
		}
	}
	var secureDelete string
	if err := s.w.QueryRowContext(t.Context(), "PRAGMA secure_delete").Scan(&secureDelete); err != nil || secureDelete != "1" {
		t.Errorf("writer: PRAGMA secure_delete = %q (%v), want 1", secureDelete, err)
	}
	// The reader pool refuses writes, so none can bypass the single writer.
	if _, err := s.r.ExecContext(t.Context(), `DELETE FROM accounts`); err == nil {
		t.Error("write through the reader pool succeeded, want it refused")
	}
}

// TestFilesArePrivate checks the modes of the database and of the WAL and shared-memory
// files SQLite creates next to it: readable by the server's user only.
func TestFilesArePrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keyward.db")
	s := openTemp(t, path)
	if err := s.CreateAccount(t.Context(), storage.Account{ID: "a1", Username: "a", Email: "a@x"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("stat %s: %v", p, err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %o, want 600", filepath.Base(p), fi.Mode().Perm())
		}
	}
}

// TestDeletedBytesAreOverwritten deletes an integration whose secret is a marker and checks
// that the marker is nowhere in the database file once the store is closed (the WAL is
// checkpointed into it): secure_delete zeroes what a delete frees.
func TestDeletedBytesAreOverwritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keyward.db")
	s, err := Open(t.Context(), Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := s.CreateApp(ctx, storage.App{ID: "app1", AccountID: "acc", Name: "A"}); err != nil {
		t.Fatal(err)
	}
	const marker = "DELETED-SECRET-MARKER-0123456789"
	for _, id := range []string{"i1", "i2"} { // i2 keeps the page in use after i1 goes
		if err := s.CreateIntegration(ctx, storage.Integration{ID: id, AppID: "app1", Name: id, Kind: "CUSTOM",
			URL: "https://example.com/hook", Secret: marker + id}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteIntegration(ctx, "app1", "i1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(marker+"i2")) {
		t.Fatal("the kept integration's secret is not in the file: the test reads the wrong bytes")
	}
	if bytes.Contains(raw, []byte(marker+"i1")) {
		t.Error("a deleted integration's secret is still in the database file")
	}
}

// TestTwoStoresOneFile runs concurrent updaters through two Stores on the same file, as two
// processes would be: only busy_timeout and BEGIN IMMEDIATE keep them from failing with
// SQLITE_BUSY or losing updates.
func TestTwoStoresOneFile(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "keyward.db")
	s1 := openTemp(t, path)
	s2 := openTemp(t, path)
	if err := s1.CreateAccount(ctx, storage.Account{ID: "c", Username: "c", Email: "c@c"}); err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}

	const perStore = 15
	var wg sync.WaitGroup
	errs := make(chan error, 2*perStore)
	for _, s := range []*Store{s1, s2} {
		for range perStore {
			wg.Go(func() {
				_, err := s.UpdateAccount(ctx, "c", func(a *storage.Account) error {
					a.APICallsUsed++
					return nil
				})
				if err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("UpdateAccount: %v", err)
	}
	got, err := s2.GetAccount(ctx, "c")
	if err != nil {
		t.Fatalf("GetAccount: %v", err)
	}
	if got.APICallsUsed != 2*perStore {
		t.Errorf("APICallsUsed = %d, want %d", got.APICallsUsed, 2*perStore)
	}
}

func TestOpenRejectsBadPaths(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file:x.db", filepath.Join(t.TempDir(), "a?b.db")} {
		if s, err := Open(t.Context(), Config{Path: p}); err == nil {
			_ = s.Close()
			t.Errorf("Open(%q) succeeded, want an error", p)
		}
	}
	// A directory that does not exist cannot hold the file: the error says unavailable.
	_, err := Open(t.Context(), Config{Path: filepath.Join(t.TempDir(), "missing", "dir", "k.db")})
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Open in a missing directory: error = %v, want ErrUnavailable", err)
	}
}

// tableCounts counts, straight from the tables, the rows of every app record kind that
// belong to appID.
func tableCounts(t *testing.T, s *Store, appID string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range append([]string{"apps"}, appChildTables...) {
		col := "app_id"
		if table == "apps" {
			col = "id"
		}
		var n int
		if err := s.r.QueryRowContext(t.Context(), `SELECT count(*) FROM `+table+` WHERE `+col+` = ?`, appID).Scan(&n); err != nil {
			t.Fatalf("count %s: %v", table, err)
		}
		out[table] = n
	}
	return out
}

// seedApp creates an app with one record of every kind (two devices).
func seedApp(t *testing.T, s *Store, id, name string) {
	t.Helper()
	ctx := t.Context()
	if err := s.CreateApp(ctx, storage.App{ID: id, AccountID: "acc", Name: name}); err != nil {
		t.Fatalf("CreateApp: %v", err)
	}
	u := storage.AppUser{ID: id + "-u", AppID: id, Username: "alice"}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	for _, hw := range []string{"hw1", "hw2"} {
		if err := s.CreateDevice(ctx, storage.Device{ID: id + "-" + hw, AppID: id, UserID: u.ID, HWID: hw}); err != nil {
			t.Fatalf("CreateDevice: %v", err)
		}
	}
	if err := s.CreateLicenses(ctx, []storage.License{{ID: id + "-l", AppID: id, Key: "K"}}); err != nil {
		t.Fatalf("CreateLicenses: %v", err)
	}
	if err := s.CreateTokens(ctx, []storage.Token{{ID: id + "-t", AppID: id, Value: "v"}}); err != nil {
		t.Fatalf("CreateTokens: %v", err)
	}
	// One variable of each scope: the user's goes with DeleteUser, the others stay.
	if err := s.CreateVariables(ctx, []storage.Variable{
		{ID: id + "-va", AppID: id, Scope: storage.ScopeApp, Key: "k"},
		{ID: id + "-vu", AppID: id, Scope: storage.ScopeUser, OwnerID: u.ID, Key: "k"},
		{ID: id + "-vl", AppID: id, Scope: storage.ScopeLicense, OwnerID: id + "-l", Key: "k"},
	}); err != nil {
		t.Fatalf("CreateVariables: %v", err)
	}
	if err := s.CreateFile(ctx, storage.File{ID: id + "-f", AppID: id, Name: "f"}); err != nil {
		t.Fatalf("CreateFile: %v", err)
	}
	if err := s.CreateRules(ctx, []storage.Rule{{ID: id + "-r", AppID: id, Type: "ip", Action: "blacklist", Value: "v"}}); err != nil {
		t.Fatalf("CreateRules: %v", err)
	}
	if err := s.InsertLogs(ctx, []storage.LogEntry{{ID: id + "-log", AppID: id, Event: "e", CreatedAt: storage.Now()}}); err != nil {
		t.Fatalf("InsertLogs: %v", err)
	}
	if err := s.CreateIntegration(ctx, storage.Integration{ID: id + "-i", AppID: id, Name: "i", Kind: "CUSTOM"}); err != nil {
		t.Fatalf("CreateIntegration: %v", err)
	}
	if err := s.CreateDeliveries(ctx, []storage.Delivery{{ID: id + "-d", AppID: id, IntegrationID: id + "-i",
		State: storage.DeliveryPending}, {ID: id + "-done", AppID: id, IntegrationID: id + "-i",
		State: storage.DeliveryDelivered}}); err != nil {
		t.Fatalf("CreateDeliveries: %v", err)
	}
	if err := s.AddDeliveryAttempt(ctx, storage.DeliveryAttempt{ID: id + "-a", AppID: id, IntegrationID: id + "-i",
		DeliveryID: id + "-d", Attempt: 1}); err != nil {
		t.Fatalf("AddDeliveryAttempt: %v", err)
	}
	if err := s.SaveClientSessions(ctx, []storage.ClientSession{{TokenHash: id + "-s", AppID: id, UserID: u.ID,
		ExpiresAt: storage.Now().Add(time.Hour)}}); err != nil {
		t.Fatalf("SaveClientSessions: %v", err)
	}
	if err := s.CreateWSHook(ctx, storage.WSHook{ID: id + "-h", AppID: id, Name: "h", Event: "e",
		Actions: []byte(`[{"type":"log"}]`)}); err != nil {
		t.Fatalf("CreateWSHook: %v", err)
	}
}

// TestDeleteWithoutForeignKeys: DeleteApp and DeleteUser remove the records that belong to
// the app or user themselves; the foreign keys' ON DELETE CASCADE is only a second line of
// defence. With foreign key enforcement off on the writer (as on a connection opened
// without the pragma), nothing may be left behind.
func TestDeleteWithoutForeignKeys(t *testing.T) {
	ctx := t.Context()
	s := openTemp(t, filepath.Join(t.TempDir(), "keyward.db"))
	seedApp(t, s, "doomed", "Doomed")
	seedApp(t, s, "kept", "Kept")
	seedApp(t, s, "user-only", "UserOnly")
	full := map[string]int{"apps": 1, "app_users": 1, "devices": 2, "licenses": 1, "app_tokens": 1,
		"variables": 3, "files": 1, "rules": 1, "logs": 1, "integrations": 1, "webhook_deliveries": 1, "webhook_attempts": 1, "client_sessions": 1,
		"ws_hooks": 1, "webhook_history": 1}
	if got := tableCounts(t, s, "doomed"); fmt.Sprint(got) != fmt.Sprint(full) {
		t.Fatalf("rows before the delete = %v, want %v", got, full)
	}

	// The writer pool has exactly one connection, so the pragma holds for what follows.
	if _, err := s.w.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
		t.Fatalf("foreign_keys off: %v", err)
	}
	var on int
	if err := s.w.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&on); err != nil || on != 0 {
		t.Fatalf("PRAGMA foreign_keys = (%d, %v), want 0", on, err)
	}

	if err := s.DeleteApp(ctx, "acc", "doomed"); err != nil {
		t.Fatalf("DeleteApp: %v", err)
	}
	none := map[string]int{"apps": 0, "app_users": 0, "devices": 0, "licenses": 0, "app_tokens": 0,
		"variables": 0, "files": 0, "rules": 0, "logs": 0, "integrations": 0, "webhook_deliveries": 0, "webhook_attempts": 0, "client_sessions": 0,
		"ws_hooks": 0, "webhook_history": 0}
	if got := tableCounts(t, s, "doomed"); fmt.Sprint(got) != fmt.Sprint(none) {
		t.Errorf("rows of the deleted app = %v, want none", got)
	}
	if got := tableCounts(t, s, "kept"); fmt.Sprint(got) != fmt.Sprint(full) {
		t.Errorf("rows of the other app = %v, want %v", got, full)
	}

	if err := s.DeleteUser(ctx, "user-only", "user-only-u"); err != nil {
		t.Fatalf("DeleteUser: %v", err)
	}
	got := tableCounts(t, s, "user-only")
	if got["app_users"] != 0 || got["devices"] != 0 || got["variables"] != 2 || got["licenses"] != 1 || got["app_tokens"] != 1 {
		t.Errorf("rows after DeleteUser = %v, want the user, its devices and its variable gone, the rest kept", got)
	}
}

// TestUpgradeFromVersion1 opens a database made by a build that knew only migration 1:
// the next Open applies the later steps and keeps the data.
// openAtVersion opens path as a binary of schema version n did: its migrations only, and
// none of the hot statements a later schema prepares at open (their tables may not exist).
// openBeforeMigration opens path as the binary just before migration version did, for a
// test of that migration's upgrade.
func openBeforeMigration(t *testing.T, path string, version int) *Store {
	t.Helper()
	before := slices.IndexFunc(migrations, func(m migration) bool { return m.version == version })
	if before < 0 {
		t.Fatalf("no migration %d", version)
	}
	s, err := openAtVersion(t.Context(), path, before)
	if err != nil {
		t.Fatalf("Open before migration %d: %v", version, err)
	}
	return s
}

func openAtVersion(ctx context.Context, path string, n int) (*Store, error) {
	allMigrations := migrations
	migrations = allMigrations[:n]
	defer func() { migrations = allMigrations }()
	return Open(ctx, Config{Path: path})
}

func TestUpgradeFromVersion1(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "keyward.db")

	s, err := openAtVersion(ctx, path, 1)
	if err != nil {
		t.Fatalf("Open at version 1: %v", err)
	}
	a := storage.Account{ID: "a1", Username: "old", Email: "old@example.com"}
	if err := s.CreateAccount(ctx, a); err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s2 := openTemp(t, path)
	if rows := migrationRows(t, s2); len(rows) != len(migrations) {
		t.Fatalf("schema_migrations has %d rows after the upgrade, want %d", len(rows), len(migrations))
	}
	if _, err := s2.GetAccount(ctx, a.ID); err != nil {
		t.Errorf("account after the upgrade: %v", err)
	}
	seedApp(t, s2, "app", "App")
}

// TestUpgradeAddsAppSessionSettings opens a database made at migration 4, whose apps have
// no session_timeout or plain_files: after the upgrade they read as 0 and false (the
// server's default, encrypted files) and can be changed.
func TestUpgradeAddsAppSessionSettings(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "keyward.db")

	s, err := openAtVersion(ctx, path, 4)
	if err != nil {
		t.Fatalf("Open at version 4: %v", err)
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO apps (id, account_id, name, name_lower, description, version,
	enabled, paused, anti_debug, anti_vm, lock_hwid, lock_ip, lock_pc_name, secret_hash, secret_last6, created_at, updated_at)
VALUES ('app', 'acc', 'Old', 'old', '', '1.0', 1, 0, 0, 0, 0, 0, 0, 'hash', '123456', 1, 2)`); err != nil {
		t.Fatalf("insert app at version 4: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s2 := openTemp(t, path)
	a, err := s2.GetApp(ctx, "acc", "app")
	if err != nil {
		t.Fatalf("GetApp after the upgrade: %v", err)
	}
	if a.Name != "Old" || !a.Enabled || a.SessionTimeout != 0 || a.PlainFiles {
		t.Errorf("app after the upgrade = %+v, want the old app with SessionTimeout 0 and PlainFiles false", a)
	}
	if _, err := s2.UpdateApp(ctx, "acc", "app", func(x *storage.App) error {
		x.SessionTimeout, x.PlainFiles = 900, true
		return nil
	}); err != nil {
		t.Fatalf("UpdateApp: %v", err)
	}
	if a, err := s2.GetAppBySecretHash(ctx, "hash"); err != nil || a.SessionTimeout != 900 || !a.PlainFiles {
		t.Errorf("GetAppBySecretHash after UpdateApp = (%+v, %v), want SessionTimeout 900 and PlainFiles", a, err)
	}
	if err := s2.SaveClientSessions(ctx, []storage.ClientSession{{TokenHash: "h", AppID: "app"}}); err != nil {
		t.Errorf("SaveClientSessions after the upgrade: %v", err)
	}
}

func TestSealing(t *testing.T) {
	storagetest.RunSealing(t, storagetest.SealingHarness{
		NewLocation: func(t *testing.T) string { return filepath.Join(t.TempDir(), "keyward.db") },
		Open: func(t *testing.T, where string, sealer storage.Sealer) (storage.Store, error) {
			return Open(t.Context(), Config{Path: where, Sealer: sealer})
		},
		Raw: func(t *testing.T, where string) []byte {
			var raw []byte
			for _, p := range []string{where, where + "-wal"} {
				b, err := os.ReadFile(p)
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
				raw = append(raw, b...)
			}
			return raw
		},
	})
}
