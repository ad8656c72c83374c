package backup

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/blobs"
)

// FormatVersion is the archive format this build writes and reads. A later format is
// refused with both versions named.
const FormatVersion = 1

// Types of archive.
const (
	// TypeArchive carries records as JSON lines (Export, and a MongoDB node's backup).
	TypeArchive = "archive"
	// TypeSQLite carries the embedded node's database file itself (Snapshot).
	TypeSQLite = "sqlite"
)

const (
	manifestName = "manifest.json"
	recordsDir   = "records/"
	blobsDir     = "blobs/"
	databaseName = "keyward.db"
)

// Manifest describes an archive; it is its last entry.
type Manifest struct {
	Format         int              `json:"format"`
	Type           string           `json:"type"`
	KeywardVersion string           `json:"keywardVersion"`
	SchemaVersion  int              `json:"schemaVersion"`
	Engine         string           `json:"engine"`
	CreatedAt      time.Time        `json:"createdAt"`
	Counts         map[string]int   `json:"counts"`
	Entries        map[string]Entry `json:"entries"`
	Notes          []string         `json:"notes,omitempty"`
	// KeyCheck is a value sealed with the node's secrets key (keyCheckPlain under
	// keyCheckContext): Verify opens it with the configured key, so a wrong key is refused
	// even when no record holds a sealed secret.
	KeyCheck string            `json:"keyCheck,omitempty"`
	Extra    map[string]string `json:"extra,omitempty"`
}

// Entry is one file of the archive as the manifest knows it.
type Entry struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Info says what made an archive.
type Info struct {
	KeywardVersion string
	Engine         string // "sqlite" or "mongo"
	// Sealer is the node's secrets key; with it the manifest carries a KeyCheck.
	Sealer storage.Sealer
}

const (
	keyCheckPlain   = "keyward backup key check"
	keyCheckContext = "backup/keyCheck"
)

// Source is a store that can be archived.
type Source interface {
	storage.Store
	storage.ArchiveStore
}

// writer builds the tar.gz: entries are streamed, each hashed on the way.
type writer struct {
	gz *gzip.Writer
	tw *tar.Writer
	m  Manifest
}

func newWriter(w io.Writer, typ string, info Info, schema int) *writer {
	gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // a valid level never fails
	m := Manifest{Format: FormatVersion, Type: typ,
		KeywardVersion: info.KeywardVersion, SchemaVersion: schema, Engine: info.Engine,
		CreatedAt: storage.Now(), Counts: map[string]int{}, Entries: map[string]Entry{}}
	if info.Sealer != nil {
		m.KeyCheck, _ = info.Sealer.Seal(keyCheckPlain, keyCheckContext) // sealing a constant fails only on a broken key, which Open refused already
	}
	return &writer{gz: gz, tw: tar.NewWriter(gz), m: m}
}

// add writes one entry of size bytes read from r.
func (w *writer) add(name string, size int64, r io.Reader) error {
	if err := w.tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: w.m.CreatedAt, Typeflag: tar.TypeReg}); err != nil {
		return fmt.Errorf("archive %s: %w", name, err)
	}
	h := sha256.New()
	n, err := io.Copy(w.tw, io.TeeReader(r, h))
	if err != nil {
		return fmt.Errorf("archive %s: %w", name, err)
	}
	if n != size {
		return fmt.Errorf("archive %s: %d bytes read, %d announced", name, n, size)
	}
	w.m.Entries[name] = Entry{Size: size, SHA256: hex.EncodeToString(h.Sum(nil))}
	return nil
}

// addFile writes a file from disk as entry name.
func (w *writer) addFile(name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	return w.add(name, st.Size(), f)
}

// addRecords writes every record of kind from src as JSON lines, spooled through a
// temporary file (a tar entry's size comes before its bytes).
func (w *writer) addRecords(ctx context.Context, src storage.ArchiveStore, kind string, each func(any)) error {
	tmp, err := os.CreateTemp("", "keyward-archive-*.jsonl")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	bw := bufio.NewWriterSize(tmp, 1<<16)
	enc := json.NewEncoder(bw)
	n := 0
	if err := src.ArchiveRecords(ctx, kind, func(rec any) error {
		n++
		if each != nil {
			each(rec)
		}
		return enc.Encode(rec)
	}); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	size, err := tmp.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	w.m.Counts[kind] = n
	return w.add(recordsDir+kind+".jsonl", size, tmp)
}

// addBlobs writes the bytes of every file record. A file removed since its record was
// read has no bytes left to copy: it is named in the manifest's notes.
func (w *writer) addBlobs(ctx context.Context, b blobs.Store, files []storage.File) error {
	for _, f := range files {
		if f.BlobKey == "" {
			continue
		}
		if err := w.addBlob(ctx, b, f.BlobKey); errors.Is(err, blobs.ErrNotFound) {
			w.m.Notes = append(w.m.Notes, fmt.Sprintf("file %s of app %s: bytes gone (deleted while the backup ran)", f.ID, f.AppID))
		} else if err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) addBlob(ctx context.Context, b blobs.Store, key string) error {
	r, size, err := b.Open(ctx, key)
	if err != nil {
		return err
	}
	defer r.Close()
	return w.add(blobsDir+key, size, r)
}

// close writes the manifest and ends the archive.
func (w *writer) close() (Manifest, error) {
	sort.Strings(w.m.Notes)
	body, err := json.MarshalIndent(w.m, "", "  ")
	if err != nil {
		return Manifest{}, err
	}
	if err := w.tw.WriteHeader(&tar.Header{Name: manifestName, Mode: 0o600, Size: int64(len(body)), ModTime: w.m.CreatedAt, Typeflag: tar.TypeReg}); err != nil {
		return Manifest{}, err
	}
	if _, err := w.tw.Write(body); err != nil {
		return Manifest{}, err
	}
	if err := w.tw.Close(); err != nil {
		return Manifest{}, err
	}
	return w.m, w.gz.Close()
}

// Export writes the engine-neutral archive of src (every kind, then the bytes of every
// file) to out.
func Export(ctx context.Context, src Source, b blobs.Store, out io.Writer, info Info) (Manifest, error) {
	schema, err := src.SchemaVersion(ctx)
	if err != nil {
		return Manifest{}, fmt.Errorf("export: %w", err)
	}
	w := newWriter(out, TypeArchive, info, schema)
	var files []storage.File
	for _, k := range kinds {
		var each func(any)
		if k.name == storage.KindFiles {
			each = func(rec any) { files = append(files, rec.(storage.File)) }
		}
		if err := w.addRecords(ctx, src, k.name, each); err != nil {
			return Manifest{}, fmt.Errorf("export %s: %w", k.name, err)
		}
	}
	if err := w.addBlobs(ctx, b, files); err != nil {
		return Manifest{}, fmt.Errorf("export files: %w", err)
	}
	m, err := w.close()
	if err != nil {
		return Manifest{}, fmt.Errorf("export: %w", err)
	}
	return m, nil
}

// entryVisitor is called with each entry of an archive (but the manifest) as it is read.
type entryVisitor func(name string, r io.Reader) error

// readArchive reads the archive at path, calling visit for each entry, and answers its
// manifest after checking every entry's size and SHA-256 against it: an entry missing,
// extra, altered or cut short is an error. visit sees the bytes before the check ends, so
// a caller that writes them must verify the whole archive first (Verify).
func readArchive(path string, visit entryVisitor) (Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return Manifest{}, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<16))
	if err != nil {
		return Manifest{}, fmt.Errorf("%s is not a Keyward archive (gzip: %v)", path, err)
	}
	tr := tar.NewReader(gz)
	seen := map[string]Entry{}
	var m *Manifest
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Manifest{}, fmt.Errorf("%s: %w", path, err)
		}
		if hd.Name == manifestName {
			var mm Manifest
			if err := json.NewDecoder(tr).Decode(&mm); err != nil {
				return Manifest{}, fmt.Errorf("%s: manifest: %w", path, err)
			}
			m = &mm
			continue
		}
		if _, dup := seen[hd.Name]; dup || !validEntryName(hd.Name) {
			return Manifest{}, fmt.Errorf("%s: unexpected entry %q", path, hd.Name)
		}
		h := &countingHash{h: sha256.New()}
		r := io.TeeReader(tr, h)
		if visit != nil {
			if err := visit(hd.Name, r); err != nil {
				return Manifest{}, err
			}
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			return Manifest{}, fmt.Errorf("%s: %s: %w", path, hd.Name, err)
		}
		seen[hd.Name] = Entry{Size: h.n, SHA256: hex.EncodeToString(h.h.Sum(nil))}
	}
	if m == nil {
		return Manifest{}, fmt.Errorf("%s has no manifest (cut short, or not a Keyward archive)", path)
	}
	if m.Format > FormatVersion || m.Format < 1 {
		return Manifest{}, fmt.Errorf("%s is archive format %d; this Keyward reads format %d: use a newer Keyward", path, m.Format, FormatVersion)
	}
	for name, want := range m.Entries {
		got, ok := seen[name]
		if !ok {
			return Manifest{}, fmt.Errorf("%s: entry %s is missing", path, name)
		}
		if got != want {
			return Manifest{}, fmt.Errorf("%s: entry %s does not match its checksum (size %d, SHA-256 %s; manifest says %d, %s)",
				path, name, got.Size, got.SHA256, want.Size, want.SHA256)
		}
	}
	for name := range seen {
		if _, ok := m.Entries[name]; !ok {
			return Manifest{}, fmt.Errorf("%s: entry %s is not in the manifest", path, name)
		}
	}
	return *m, nil
}

func validEntryName(name string) bool {
	switch {
	case name == databaseName:
		return true
	case strings.HasPrefix(name, recordsDir):
		_, ok := kindByName(strings.TrimSuffix(strings.TrimPrefix(name, recordsDir), ".jsonl"))
		return ok && strings.HasSuffix(name, ".jsonl")
	case strings.HasPrefix(name, blobsDir):
		return blobs.ValidKey(strings.TrimPrefix(name, blobsDir)) == nil
	}
	return false
}

type countingHash struct {
	h hash.Hash
	n int64
}

func (c *countingHash) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.h.Write(p)
}

// forEachLine calls f with every line of r (a JSON lines entry).
func forEachLine(r io.Reader, f func(line []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := f(sc.Bytes()); err != nil {
			return err
		}
	}
	return sc.Err()
}
