package backup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/blobs"
	"github.com/keyward/keyward/storage/blobs/fsblobs"
	"github.com/keyward/keyward/storage/blobs/gridfs"
	storagemongo "github.com/keyward/keyward/storage/mongo"
	storagesqlite "github.com/keyward/keyward/storage/sqlite"
)

// Take writes a backup of the running node's store: a Snapshot on the embedded engine,
// the archive (Export) on MongoDB.
func Take(ctx context.Context, src storage.Store, b blobs.Store, out io.Writer, info Info) (Manifest, error) {
	switch s := src.(type) {
	case *storagesqlite.Store:
		return Snapshot(ctx, s, b, out, info)
	case Source:
		return Export(ctx, s, b, out, info)
	}
	return Manifest{}, fmt.Errorf("backup: store %T cannot be backed up", src)
}

// Snapshot writes a backup of the embedded node while it keeps serving: the database as
// of one read transaction (VACUUM INTO a temporary file, on a connection of its own),
// the bytes of every file that copy names, and the manifest with the count of each kind.
func Snapshot(ctx context.Context, src *storagesqlite.Store, b blobs.Store, out io.Writer, info Info) (Manifest, error) {
	dir, err := os.MkdirTemp("", "keyward-backup-")
	if err != nil {
		return Manifest{}, fmt.Errorf("backup: %w", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, databaseName)
	if err := src.Snapshot(ctx, path); err != nil {
		return Manifest{}, fmt.Errorf("backup: %w", err)
	}
	counts, files, schema, err := countSQLite(ctx, path, nil)
	if err != nil {
		return Manifest{}, fmt.Errorf("backup: the copy: %w", err)
	}
	w := newWriter(out, TypeSQLite, info, schema)
	w.m.Counts = counts
	if err := w.addFile(databaseName, path); err != nil {
		return Manifest{}, fmt.Errorf("backup: %w", err)
	}
	if err := w.addBlobs(ctx, b, files); err != nil {
		return Manifest{}, fmt.Errorf("backup files: %w", err)
	}
	m, err := w.close()
	if err != nil {
		return Manifest{}, fmt.Errorf("backup: %w", err)
	}
	return m, nil
}

// countSQLite opens the database at path (with sealer: every sealed secret must open)
// and answers the count of each kind, its files and its schema version.
func countSQLite(ctx context.Context, path string, sealer storage.Sealer) (map[string]int, []storage.File, int, error) {
	st, err := storagesqlite.Open(ctx, storagesqlite.Config{Path: path, Sealer: sealer})
	if err != nil {
		if errors.Is(err, secrets.ErrCannotOpen) {
			return nil, nil, 0, fmt.Errorf("%w (%v)", ErrWrongKey, err)
		}
		return nil, nil, 0, err
	}
	defer st.Close()
	counts := map[string]int{}
	var files []storage.File
	for _, k := range kinds {
		err := st.ArchiveRecords(ctx, k.name, func(rec any) error {
			counts[k.name]++
			if f, ok := rec.(storage.File); ok {
				files = append(files, f)
			}
			return nil
		})
		if err != nil {
			return nil, nil, 0, err
		}
	}
	schema, err := st.SchemaVersion(ctx)
	return counts, files, schema, err
}

// Target is where a restore writes: an empty data dir (the embedded engine) or, with
// MongoURI, an empty MongoDB database.
type Target struct {
	DataDir       string
	MongoURI      string
	MongoDatabase string
	// Sealer is the configured secrets key; the backup's sealed secrets must open with it.
	Sealer storage.Sealer
}

// Restore checks the backup at path (see Verify; an embedded database is opened with the
// key under a temporary name in the data dir) and writes it into t, which must be empty.
// An embedded target is built under a temporary name and moved into place at the end;
// a MongoDB database is written in place (MongoDB-wire servers cannot rename one).
func Restore(ctx context.Context, path string, t Target) (Manifest, Report, error) {
	if t.Sealer == nil {
		return Manifest{}, Report{}, errors.New("restore: no secrets key configured")
	}
	m, err := Verify(path, t.Sealer)
	if err != nil {
		return Manifest{}, Report{}, err
	}
	if t.MongoURI != "" {
		if m.Type != TypeArchive {
			return m, Report{}, fmt.Errorf("restore: %s is a backup of an embedded node; restore it into a data dir, then `keyward export` it for MongoDB", path)
		}
		rep, err := restoreMongo(ctx, path, t)
		return m, rep, err
	}
	rep, err := restoreDataDir(ctx, path, m, t)
	return m, rep, err
}

func restoreMongo(ctx context.Context, path string, t Target) (Report, error) {
	st, err := storagemongo.Open(ctx, storagemongo.Config{URI: t.MongoURI, Database: t.MongoDatabase})
	if err != nil {
		return Report{}, fmt.Errorf("restore: %w", err)
	}
	defer st.Close()
	b, err := gridfs.New(ctx, st.Database(), "files")
	if err != nil {
		return Report{}, fmt.Errorf("restore: %w", err)
	}
	return Import(ctx, path, st, b)
}

// restoreDataDir builds the store in <data dir>/.restore-<random>/ and moves it into place.
func restoreDataDir(ctx context.Context, path string, m Manifest, t Target) (Report, error) {
	dbPath, filesDir := filepath.Join(t.DataDir, databaseName), filepath.Join(t.DataDir, "files")
	if err := emptyDataDir(dbPath, filesDir); err != nil {
		return Report{}, err
	}
	if err := os.MkdirAll(t.DataDir, 0o700); err != nil {
		return Report{}, fmt.Errorf("restore: %w", err)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(t.DataDir, ".restore-"+hex.EncodeToString(rnd[:]))
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return Report{}, fmt.Errorf("restore: %w", err)
	}
	defer os.RemoveAll(tmp)
	tmpDB, tmpFiles := filepath.Join(tmp, databaseName), filepath.Join(tmp, "files")
	b, err := fsblobs.New(tmpFiles)
	if err != nil {
		return Report{}, fmt.Errorf("restore: %w", err)
	}
	var rep Report
	switch m.Type {
	case TypeSQLite:
		if m.SchemaVersion > storagesqlite.LatestSchemaVersion() {
			return Report{}, fmt.Errorf("restore: the backup's schema version %d is newer than this build's %d: restore with a newer Keyward", m.SchemaVersion, storagesqlite.LatestSchemaVersion())
		}
		rep = Report{Counts: m.Counts}
		if _, err := readArchive(path, func(name string, r io.Reader) error {
			if name == databaseName {
				return writeFile(tmpDB, r)
			}
			if key, ok := strings.CutPrefix(name, blobsDir); ok {
				rep.Blobs++
				_, _, err := b.Put(ctx, key, r, 0)
				return err
			}
			return nil
		}); err != nil {
			return Report{}, fmt.Errorf("restore: %w", err)
		}
	case TypeArchive:
		st, err := storagesqlite.Open(ctx, storagesqlite.Config{Path: tmpDB})
		if err != nil {
			return Report{}, fmt.Errorf("restore: %w", err)
		}
		rep, err = Import(ctx, path, st, b)
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return Report{}, fmt.Errorf("restore: %w", err)
		}
	default:
		return Report{}, fmt.Errorf("restore: unknown backup type %q", m.Type)
	}
	// Open what was built with the key (every sealed secret must open) and count it.
	counts, _, _, err := countSQLite(ctx, tmpDB, t.Sealer)
	if err != nil {
		return Report{}, fmt.Errorf("restore: %w", err)
	}
	wants := map[string]int{}
	for _, k := range kinds {
		wants[k.name] = m.Counts[k.name] - rep.Skipped[k.name]
	}
	got, wants := countGroups(counts), countGroups(wants)
	for _, k := range kinds {
		if _, grouped := countedAs[k.name]; grouped {
			continue // counted with its group
		}
		if got[k.name] != wants[k.name] {
			return Report{}, fmt.Errorf("restore: %s: %d records restored, the backup has %d", k.name, got[k.name], wants[k.name])
		}
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		_ = os.Remove(tmpDB + suffix) // closed cleanly: nothing left in them
	}
	if err := os.Rename(tmpFiles, filesDir); err != nil {
		return Report{}, fmt.Errorf("restore: %w", err)
	}
	if err := os.Rename(tmpDB, dbPath); err != nil {
		return Report{}, fmt.Errorf("restore: %w", err)
	}
	return rep, nil
}

// emptyDataDir refuses a data dir that holds a database or files (keys and settings may be
// there: the secrets key must be, unless configured).
func emptyDataDir(dbPath, filesDir string) error {
	if _, err := os.Stat(dbPath); err == nil {
		return fmt.Errorf("restore: %w: %s exists (restore into an empty data dir)", ErrNotEmpty, dbPath)
	}
	entries, err := os.ReadDir(filesDir)
	if err == nil && len(entries) > 0 {
		return fmt.Errorf("restore: %w: %s holds files", ErrNotEmpty, filesDir)
	}
	if err == nil {
		return os.Remove(filesDir)
	}
	return nil
}

func writeFile(path string, r io.Reader) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
