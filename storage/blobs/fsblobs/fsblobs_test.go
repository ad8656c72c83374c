package fsblobs

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keyward/keyward/storage/blobs"
	"github.com/keyward/keyward/storage/blobs/blobstest"
)

// newStore answers a store on a fresh folder, and checks when the test ends that no
// temporary file was left behind, whatever the test did.
func newStore(t *testing.T) *Store {
	t.Helper()
	root := filepath.Join(t.TempDir(), "files")
	s, err := New(root)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		for _, p := range tempFiles(t, root) {
			t.Errorf("temporary file left behind: %s", p)
		}
	})
	return s
}

func tempFiles(t *testing.T, root string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), tmpPrefix) {
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	return found
}

func TestConformance(t *testing.T) {
	blobstest.Run(t, func(t *testing.T) blobs.Store { return newStore(t) })
}

func TestBigBlobMemory(t *testing.T) {
	blobstest.SkipUnlessBig(t)
	blobstest.RunBig(t, newStore(t))
}

func TestLayout(t *testing.T) {
	s := newStore(t)
	if _, _, err := s.Put(t.Context(), "app1/f1", strings.NewReader("x"), 0); err != nil {
		t.Fatalf("Put: %v", err)
	}
	fi, err := os.Stat(filepath.Join(s.Root(), "app1", "f1@"))
	if err != nil {
		t.Fatalf("the blob is not where the package doc says: %v", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		t.Errorf("blob file mode %v: readable by others than the server's user", perm)
	}
}

func TestNewRemovesStaleTemporaryFiles(t *testing.T) {
	s := newStore(t)
	if _, _, err := s.Put(t.Context(), "app1/f1", strings.NewReader("kept"), 0); err != nil {
		t.Fatalf("Put: %v", err)
	}
	// What a crash mid-upload leaves: temporary files at any depth.
	stale := []string{
		filepath.Join(s.Root(), ".tmp-123"),
		filepath.Join(s.Root(), "app1", ".tmp-456"),
		filepath.Join(s.Root(), "app2", "deep", ".tmp-789"),
	}
	for _, p := range stale {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s2, err := New(s.Root())
	if err != nil {
		t.Fatalf("New over a crashed root: %v", err)
	}
	if left := tempFiles(t, s.Root()); len(left) != 0 {
		t.Fatalf("New left stale temporary files: %v", left)
	}
	rc, _, err := s2.Open(t.Context(), "app1/f1")
	if err != nil {
		t.Fatalf("Open after restart: %v", err)
	}
	defer func() { _ = rc.Close() }()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(rc); err != nil || buf.String() != "kept" {
		t.Fatalf("after restart app1/f1 = %q, %v; want \"kept\"", buf.String(), err)
	}
}

func TestNewRefusesUnwritableRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes through any permission")
	}
	parent := t.TempDir()
	root := filepath.Join(parent, "files")
	if err := os.Mkdir(root, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(root, 0o700) })
	if _, err := New(root); err == nil {
		t.Fatal("New on a read-only folder succeeded")
	}
	// A root that is a file cannot be created.
	file := filepath.Join(parent, "plain")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(file); err == nil {
		t.Fatal("New on a regular file succeeded")
	}
}

func TestDeletePrefixPrunesFolders(t *testing.T) {
	s := newStore(t)
	for _, k := range []string{"app1/a", "app1/sub/b", "app2/c"} {
		if _, _, err := s.Put(t.Context(), k, strings.NewReader(k), 0); err != nil {
			t.Fatalf("Put %s: %v", k, err)
		}
	}
	if n, err := s.DeletePrefix(t.Context(), "app1/"); err != nil || n != 2 {
		t.Fatalf("DeletePrefix = %d, %v; want 2, nil", n, err)
	}
	if _, err := os.Stat(filepath.Join(s.Root(), "app1")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the emptied application folder is still there (Stat: %v)", err)
	}
	if _, err := os.Stat(filepath.Join(s.Root(), "app2", "c@")); err != nil {
		t.Errorf("another application's file went: %v", err)
	}
	if _, err := os.Stat(s.Root()); err != nil {
		t.Errorf("the root went: %v", err)
	}
}

func TestOpenReaderSurvivesReplace(t *testing.T) {
	// A download in progress keeps the bytes it started with (rename and unlink leave an
	// open file intact), which is why replacing a file never breaks its downloads.
	s := newStore(t)
	ctx := context.Background()
	if _, _, err := s.Put(ctx, "app1/f", strings.NewReader("old"), 0); err != nil {
		t.Fatal(err)
	}
	rc, _, err := s.Open(ctx, "app1/f")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	if _, _, err := s.Put(ctx, "app1/f", strings.NewReader("new"), 0); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(rc); err != nil || buf.String() != "old" {
		t.Fatalf("reader opened before the replace read %q, %v; want \"old\"", buf.String(), err)
	}
}
