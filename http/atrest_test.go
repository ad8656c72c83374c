package httpapi_test

import (
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	ts "github.com/keyward/keyward/internal/testserver"
)

// TestDataDirIsPrivate starts the embedded node on a data dir left readable by everyone
// (as an older version made it), uses it (a mail in the outbox, a file upload), and checks
// that every folder in it is 0700 and every file 0600: the database and its WAL, the JWT
// secret, the blobs, the mails, and what was there before.
func TestDataDirIsPrivate(t *testing.T) {
	env := ts.Env(t, ts.Pairs[0])
	dir := env["KEYWARD_DATA_DIR"]
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "files", "old"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "files", "old", "blob@"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "files", "old", "blob@"), 0o644); err != nil { // past the umask
		t.Fatal(err)
	}
	s := ts.StartEnv(t, env)
	a := api{t, s, newOwner(t, s).Token}
	id, _ := a.createApp("Private")
	body, ct := multipartBody(t, "x.bin", []byte("private bytes"), nil, nil)
	expectOK(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/apps/" + id + "/files", Token: a.token, Body: body, ContentType: ct}), http.StatusCreated)

	seen := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s has mode %o, want %o", rel, info.Mode().Perm(), want)
		}
		seen[filepath.Base(filepath.Dir(rel))+"/"+filepath.Ext(rel)] = true
		seen[rel] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"keyward.db", "keyward.db-wal", "keyward.db-shm", "jwt.secret", "outbox/.eml", "files/old/blob@"} {
		if !seen[want] {
			t.Errorf("%s was not in the data dir: the test checked less than it should", want)
		}
	}
}
