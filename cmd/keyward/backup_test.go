package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackupRestoreExportImportCommands runs the four commands in process on embedded
// data dirs: a backup restores into an empty data dir holding the key, an export imports
// into another; a restore without the key, over data, or of an altered file is refused
// with the reason and writes nothing.
func TestBackupRestoreExportImportCommands(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	cmd := func(want int, args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if got := run(args, &out, &errOut); got != want {
			t.Fatalf("keyward %s: exit %d, want %d\n%s%s", strings.Join(args, " "), got, want, out.String(), errOut.String())
		}
		return out.String() + errOut.String()
	}
	cmd(0, "admin", "create", "--username", "alice", "--email", "alice@example.com", "--password", "Sup3r-secret-pass!", "--data-dir", src,
		"--argon2-memory-kib", "1024", "--argon2-iterations", "1")
	bk := filepath.Join(dir, "b.tar.gz")
	if out := cmd(0, "backup", "--out", bk, "--data-dir", src); !strings.Contains(out, "accounts 1") {
		t.Errorf("backup said: %s", out)
	}
	if out := cmd(1, "restore", bk, "--data-dir", filepath.Join(dir, "nokey")); !strings.Contains(out, "no secrets key") {
		t.Errorf("restore without a key said: %s", out)
	}
	if out := cmd(1, "restore", bk, "--data-dir", src); !strings.Contains(out, "not empty") {
		t.Errorf("restore over data said: %s", out)
	}
	other := filepath.Join(dir, "other")
	if out := cmd(1, "restore", bk, "--data-dir", other, "--secrets-key", strings.Repeat("o", 40)); !strings.Contains(out, "secrets key does not open") {
		t.Errorf("restore with another key said: %s", out)
	}
	if _, err := os.Stat(filepath.Join(other, "keyward.db")); err == nil {
		t.Errorf("a refused restore left a database")
	}
	key, err := os.ReadFile(filepath.Join(src, "secrets.key"))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "dst")
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "secrets.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	if out := cmd(0, "restore", bk, "--data-dir", dst); !strings.Contains(out, "restored") {
		t.Errorf("restore said: %s", out)
	}
	ex := filepath.Join(dir, "e.tar.gz")
	cmd(0, "export", "--out", ex, "--data-dir", dst)
	imp := filepath.Join(dir, "imp")
	cmd(0, "import", ex, "--data-dir", imp, "--secrets-key", strings.TrimSpace(string(key)))
	// The imported node knows alice: creating her again is a conflict.
	if out := cmd(1, "admin", "create", "--username", "alice", "--email", "alice2@example.com", "--password", "Sup3r-secret-pass!",
		"--data-dir", imp, "--secrets-key", strings.TrimSpace(string(key))); !strings.Contains(strings.ToLower(out), "taken") &&
		!strings.Contains(strings.ToLower(out), "exists") && !strings.Contains(strings.ToLower(out), "conflict") {
		t.Errorf("alice after import: %s", out)
	}
	// An archive cut short is refused before anything is written.
	b, _ := os.ReadFile(ex)
	cut := filepath.Join(dir, "cut.tar.gz")
	_ = os.WriteFile(cut, b[:len(b)/2], 0o600)
	cmd(1, "import", cut, "--data-dir", filepath.Join(dir, "cut"), "--secrets-key", strings.TrimSpace(string(key)))
	if _, err := os.Stat(filepath.Join(dir, "cut", "keyward.db")); err == nil {
		t.Errorf("a refused import left a database")
	}
}
