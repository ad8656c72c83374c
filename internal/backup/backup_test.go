package backup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/blobs"
	"github.com/keyward/keyward/storage/blobs/fsblobs"
	"github.com/keyward/keyward/storage/blobs/gridfs"
	storagemongo "github.com/keyward/keyward/storage/mongo"
	storagesqlite "github.com/keyward/keyward/storage/sqlite"
	"github.com/keyward/keyward/storage/storagetest"
)

var info = Info{KeywardVersion: "test", Engine: "sqlite"}

// node is a store and its file bytes.
type node struct {
	st      Source
	b       blobs.Store
	dataDir string
}

func sqliteNode(t *testing.T, dataDir string, sealer storage.Sealer) node {
	t.Helper()
	st, err := storagesqlite.Open(t.Context(), storagesqlite.Config{Path: filepath.Join(dataDir, databaseName), Sealer: sealer})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	b, err := fsblobs.New(filepath.Join(dataDir, "files"))
	if err != nil {
		t.Fatal(err)
	}
	return node{st: st, b: b, dataDir: dataDir}
}

func mongoNode(t *testing.T, uri, db string, sealer storage.Sealer) node {
	t.Helper()
	st, err := storagemongo.Open(t.Context(), storagemongo.Config{URI: uri, Database: db, Sealer: sealer})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = st.Database().Drop(ctx)
		_ = st.Close()
	})
	b, err := gridfs.New(t.Context(), st.Database(), "files")
	if err != nil {
		t.Fatal(err)
	}
	return node{st: st, b: b}
}

// populate writes every kind and the bytes of every file.
func populate(t *testing.T, n node) storagetest.Populated {
	t.Helper()
	p := storagetest.PopulateEveryKind(t, n.st, 2)
	for i, f := range p.Files {
		if _, _, err := n.b.Put(t.Context(), f.BlobKey, strings.NewReader(fmt.Sprintf("bytes of file %d %s", i, f.ID)), 0); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// contents answers every record of every kind as JSON lines, and every file's bytes.
func contents(t *testing.T, n node) (map[string][]string, map[string]string) {
	t.Helper()
	recs := map[string][]string{}
	files := map[string]string{}
	sealer := storagetest.TestSealer(t)
	for _, k := range KindNames() {
		if err := n.st.ArchiveRecords(t.Context(), k, func(r any) error {
			// Sealed values are compared opened: each Open with the key seals one of them
			// again (its key check), with a new nonce.
			switch v := r.(type) {
			case storage.Account:
				if !storage.AccountSealed(sealer, v) {
					t.Errorf("account %s: secret in clear", v.ID)
				}
				if err := storage.OpenAccount(sealer, &v); err != nil {
					return err
				}
				r = v
			case storage.Integration:
				if !sealer.Sealed(v.Secret) {
					t.Errorf("integration %s: secret in clear", v.ID)
				}
				if err := storage.OpenIntegration(sealer, &v); err != nil {
					return err
				}
				r = v
			case storage.StoreConnection:
				if !sealer.Sealed(v.Secret) {
					t.Errorf("store connection %s: secret in clear", v.ID)
				}
				if err := storage.OpenStoreConnection(sealer, &v); err != nil {
					return err
				}
				r = v
			}
			b, err := json.Marshal(r)
			recs[k] = append(recs[k], string(b))
			if f, ok := r.(storage.File); ok {
				rc, _, err := n.b.Open(t.Context(), f.BlobKey)
				if err != nil {
					return err
				}
				defer rc.Close()
				body, err := io.ReadAll(rc)
				files[f.BlobKey] = string(body)
				return err
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		sort.Strings(recs[k])
	}
	return recs, files
}

func sameContents(t *testing.T, what string, a, b node) {
	t.Helper()
	ra, fa := contents(t, a)
	rb, fb := contents(t, b)
	for _, k := range KindNames() {
		if len(ra[k]) == 0 {
			t.Errorf("%s: no %s records to compare", what, k)
		}
		if strings.Join(ra[k], "\n") != strings.Join(rb[k], "\n") {
			t.Errorf("%s: %s differ:\n got %v\nwant %v", what, k, rb[k], ra[k])
		}
	}
	if fmt.Sprint(fa) != fmt.Sprint(fb) || len(fa) == 0 {
		t.Errorf("%s: files differ: got %v want %v", what, fb, fa)
	}
}

func export(t *testing.T, n node) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "export.tar.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Export(t.Context(), n.st, n.b, f, info); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func importInto(t *testing.T, path string, n node) {
	t.Helper()
	if _, err := Verify(path, storagetest.TestSealer(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(t.Context(), path, n.st, n.b); err != nil {
		t.Fatal(err)
	}
}

// TestRoundTripAcrossEngines moves every record kind and file SQLite → MongoDB wire
// (FerretDB) → SQLite and finds them identical, secrets still sealed and opening.
func TestRoundTripAcrossEngines(t *testing.T) {
	uri := testenv.MongoURI(t)
	sealer := storagetest.TestSealer(t)
	a := sqliteNode(t, t.TempDir(), sealer)
	populate(t, a)

	m := mongoNode(t, uri, testenv.UniqueName("kwbackup_"), nil)
	importInto(t, export(t, a), m)
	sameContents(t, "SQLite → MongoDB", a, m)

	c := sqliteNode(t, t.TempDir(), nil)
	importInto(t, export(t, m), c)
	sameContents(t, "SQLite → MongoDB → SQLite", a, c)

	// The kinds the MongoDB engine carries are the archive's.
	checkKinds(t, m.st)

	// The restored secrets open with the key.
	_ = c.st.Close()
	reopened := sqliteNode(t, c.dataDir, sealer)
	if _, err := reopened.st.GetAccount(t.Context(), firstID(t, reopened, storage.KindAccounts)); err != nil {
		t.Errorf("account after the round trip: %v", err)
	}
}

func firstID(t *testing.T, n node, kind string) string {
	var id string
	errStop := errors.New("stop")
	_ = n.st.ArchiveRecords(t.Context(), kind, func(r any) error {
		id = fmt.Sprint(reflectID(r))
		return errStop
	})
	return id
}

func reflectID(r any) string {
	b, _ := json.Marshal(r)
	var v struct{ ID string }
	_ = json.Unmarshal(b, &v)
	return v.ID
}

func checkKinds(t *testing.T, st storage.ArchiveStore) {
	t.Helper()
	carried := map[string]bool{}
	for _, kind := range st.ArchiveTables() {
		if !strings.HasPrefix(kind, "-") {
			carried[kind] = true
		}
	}
	for _, k := range KindNames() {
		if !carried[k] {
			t.Errorf("%T carries no table of kind %s", st, k)
		}
		delete(carried, k)
	}
	for k := range carried {
		t.Errorf("%T carries kind %s, which internal/backup's kinds do not import", st, k)
	}
}

// TestBackupRestoreWhileWriting backs up an embedded node while licenses keep being
// created, restores it into an empty data dir and into a MongoDB database, and compares.
func TestBackupRestoreWhileWriting(t *testing.T) {
	sealer := storagetest.TestSealer(t)
	a := sqliteNode(t, t.TempDir(), sealer)
	p := populate(t, a)
	checkKinds(t, a.st)

	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var written atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil && i < 5000; i++ {
			l := storage.License{ID: fmt.Sprintf("lic-during-%d", i), AppID: p.App.ID, Key: fmt.Sprintf("DURING-%d", i), Enabled: true, CreatedAt: storage.Now()}
			if err := a.st.CreateLicenses(ctx, []storage.License{l}); err != nil {
				return
			}
			written.Add(1)
		}
	}()
	for written.Load() < 20 { // the writer is going
		time.Sleep(time.Millisecond)
	}
	path := filepath.Join(t.TempDir(), "backup.tar.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Take(t.Context(), a.st, a.b, f, info)
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	stop()
	wg.Wait()
	if m.Type != TypeSQLite || m.Counts[storage.KindLicenses] < 2+20 {
		t.Fatalf("manifest %+v", m)
	}

	dir := t.TempDir()
	if _, _, err := Restore(t.Context(), path, Target{DataDir: dir, Sealer: sealer}); err != nil {
		t.Fatal(err)
	}
	restored := sqliteNode(t, dir, sealer)
	// What the backup holds is what the node held at one instant: every record but the
	// licenses written after it, which it cannot have.
	ra, fa := contents(t, a)
	rb, fb := contents(t, restored)
	for _, k := range KindNames() {
		if k == storage.KindLicenses {
			if len(rb[k]) != m.Counts[k] || len(rb[k]) > len(ra[k]) {
				t.Errorf("licenses: %d restored, manifest %d, source %d", len(rb[k]), m.Counts[k], len(ra[k]))
			}
			continue
		}
		if strings.Join(ra[k], "\n") != strings.Join(rb[k], "\n") {
			t.Errorf("%s differ after restore:\n got %v\nwant %v", k, rb[k], ra[k])
		}
	}
	if fmt.Sprint(fa) != fmt.Sprint(fb) {
		t.Errorf("files differ after restore")
	}

	t.Run("NotIntoANonEmptyDataDir", func(t *testing.T) {
		_, _, err := Restore(t.Context(), path, Target{DataDir: dir, Sealer: sealer})
		if !errors.Is(err, ErrNotEmpty) {
			t.Errorf("restore over a data dir with a database: %v, want ErrNotEmpty", err)
		}
	})
	t.Run("RefusesAnotherKey", func(t *testing.T) {
		other := t.TempDir()
		_, _, err := Restore(t.Context(), path, Target{DataDir: other, Sealer: storagetest.OtherSealer(t)})
		if !errors.Is(err, ErrWrongKey) {
			t.Errorf("restore with another key: %v, want ErrWrongKey", err)
		}
		if _, err := os.Stat(filepath.Join(other, databaseName)); err == nil {
			t.Errorf("a refused restore left a database")
		}
	})
	t.Run("RefusesAnAlteredBackup", func(t *testing.T) {
		bad := alter(t, path)
		_, _, err := Restore(t.Context(), bad, Target{DataDir: t.TempDir(), Sealer: sealer})
		if err == nil || !strings.Contains(err.Error(), "checksum") {
			t.Errorf("restore of an altered backup: %v, want a checksum error", err)
		}
	})
	t.Run("ArchiveRefusesAnotherKey", func(t *testing.T) {
		_, err := Verify(export(t, a), storagetest.OtherSealer(t))
		if !errors.Is(err, ErrWrongKey) {
			t.Errorf("verify with another key: %v, want ErrWrongKey", err)
		}
	})
}

// alter rewrites the archive with one byte of its database changed (sizes kept).
func alter(t *testing.T, path string) string {
	t.Helper()
	var entries []struct {
		name string
		body []byte
	}
	if _, err := readArchive(path, func(name string, r io.Reader) error {
		body, err := io.ReadAll(r)
		entries = append(entries, struct {
			name string
			body []byte
		}{name, body})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	m, err := Verify(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := newWriter(&buf, m.Type, info, m.SchemaVersion)
	for _, e := range entries {
		body := e.body
		if e.name == databaseName {
			body = append([]byte(nil), body...)
			body[len(body)/2] ^= 0xff
		}
		if err := w.add(e.name, int64(len(body)), bytes.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	w.m.Entries = m.Entries // the manifest of the original
	w.m.Counts = m.Counts
	if _, err := w.close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "altered.tar.gz")
	if err := os.WriteFile(out, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}
