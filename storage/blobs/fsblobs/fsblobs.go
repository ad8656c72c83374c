package fsblobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keyward/keyward/storage/blobs"
	"github.com/keyward/keyward/storage/blobs/internal/copyhash"
)

const (
	// fileSuffix ends every blob's file name. '@' is outside the key alphabet, so no
	// folder (a key segment) can have a blob's name; see the package doc.
	fileSuffix = "@"
	// tmpPrefix starts the names of uploads in progress. Keys cannot have a segment
	// starting with ".", so a temporary name never collides with a key's file or folder.
	tmpPrefix = ".tmp-"
	// copyBufSize is the one buffer a Put copies through: the memory an upload costs
	// whatever its size.
	copyBufSize = 64 << 10
	// dirPerm keeps blobs private to the server's user (os.CreateTemp already makes the
	// files 0600): downloads go through Keyward's access checks, never the disk.
	dirPerm = 0o700
	// mkdirAttempts bounds Put's retries when DeletePrefix removes the destination
	// folder between Put's MkdirAll and its CreateTemp.
	mkdirAttempts = 3
)

// Store is the folder engine. It is safe for concurrent use.
type Store struct {
	root string
}

var _ blobs.Store = (*Store)(nil)

// New prepares root for use: it creates the folder, checks that a file can be written
// in it (so a read-only or mis-owned data dir stops start-up rather than the first
// upload), and removes the ".tmp-*" files of uploads a crash interrupted.
func New(root string) (*Store, error) {
	if root == "" {
		return nil, errors.New("fsblobs: new: empty root")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("fsblobs: new %s: %w", root, err)
	}
	if err := os.MkdirAll(abs, dirPerm); err != nil {
		return nil, fmt.Errorf("fsblobs: new: create root: %w", err)
	}
	if err := checkWritable(abs); err != nil {
		return nil, fmt.Errorf("fsblobs: new: root %s is not writable: %w", abs, err)
	}
	s := &Store{root: abs}
	if err := s.removeStale(); err != nil {
		return nil, fmt.Errorf("fsblobs: new: %w", err)
	}
	return s, nil
}

// Root answers the absolute folder the store keeps its files in.
func (s *Store) Root() string { return s.root }

func checkWritable(dir string) error {
	f, err := os.CreateTemp(dir, tmpPrefix+"probe-*")
	if err != nil {
		return err
	}
	_, werr := f.Write([]byte("ok"))
	cerr := f.Close()
	rerr := os.Remove(f.Name())
	return errors.Join(werr, cerr, rerr)
}

// removeStale deletes every ".tmp-*" file under the root. Only safe while no Put runs,
// hence only at New.
func (s *Store) removeStale() error {
	err := filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), tmpPrefix) {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("remove stale temporary files: %w", err)
	}
	return nil
}

// filePath answers where key's bytes live. key must have passed blobs.ValidKey, which
// guarantees a relative path without "." or ".." segments, so the result stays under
// the root.
func (s *Store) filePath(key string) string {
	return filepath.Join(s.root, filepath.FromSlash(key)) + fileSuffix
}

// Put implements blobs.Store.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, maxBytes int64) (int64, string, error) {
	if err := blobs.ValidKey(key); err != nil {
		return 0, "", fmt.Errorf("fsblobs: put: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return 0, "", fmt.Errorf("fsblobs: put %s: %w", key, err)
	}
	final := s.filePath(key)
	tmp, err := createTemp(filepath.Dir(final))
	if err != nil {
		return 0, "", fmt.Errorf("fsblobs: put %s: %w", key, err)
	}
	size, sum, err := fill(ctx, tmp, r, maxBytes)
	if err == nil {
		err = os.Rename(tmp.Name(), final)
	}
	if err != nil {
		// Every failure ends here, so no path leaves the temporary file behind; after a
		// successful rename there is nothing left to remove.
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return 0, "", fmt.Errorf("fsblobs: put %s: %w", key, err)
	}
	// The rename is durable only once the folder entry is on disk. A failure here (an I/O
	// error of the disk, in practice) is the one case where Put fails with the new bytes
	// already visible: it still fails, because the caller must not record a file that a
	// power cut could lose.
	if err := syncDir(filepath.Dir(final)); err != nil {
		return 0, "", fmt.Errorf("fsblobs: put %s: sync folder: %w", key, err)
	}
	return size, sum, nil
}

// createTemp opens a new temporary file in dir, creating dir when needed. It retries
// when a concurrent DeletePrefix removes the freshly created, still empty folder.
func createTemp(dir string) (*os.File, error) {
	var err error
	for range mkdirAttempts {
		if err = os.MkdirAll(dir, dirPerm); err != nil {
			return nil, fmt.Errorf("create folder: %w", err)
		}
		var f *os.File
		f, err = os.CreateTemp(dir, tmpPrefix+"*")
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	return nil, fmt.Errorf("create temporary file: %w", err)
}

// fill copies r into f through one bounded buffer, hashing on the way, then flushes f
// to disk and closes it.
func fill(ctx context.Context, f *os.File, r io.Reader, maxBytes int64) (int64, string, error) {
	n, sum, err := copyhash.Copy(ctx, f, r, maxBytes, make([]byte, copyBufSize))
	if err != nil {
		return 0, "", fmt.Errorf("copy: %w", err)
	}
	// Sync before the rename: otherwise a crash could leave the final name pointing at
	// a file whose data never reached the disk.
	if err := f.Sync(); err != nil {
		return 0, "", fmt.Errorf("sync: %w", err)
	}
	if err := f.Close(); err != nil {
		return 0, "", fmt.Errorf("close: %w", err)
	}
	return n, sum, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr := d.Sync()
	return errors.Join(serr, d.Close())
}

// Open implements blobs.Store. The answered *os.File keeps reading the bytes it opened
// even if a later Put replaces the key or Delete removes it.
func (s *Store) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	if err := blobs.ValidKey(key); err != nil {
		return nil, 0, fmt.Errorf("fsblobs: open: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, fmt.Errorf("fsblobs: open %s: %w", key, err)
	}
	f, err := os.Open(s.filePath(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, fmt.Errorf("fsblobs: open %s: %w", key, blobs.ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("fsblobs: open %s: %w", key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, 0, fmt.Errorf("fsblobs: open %s: %w", key, err)
	}
	return f, fi.Size(), nil
}

// Delete implements blobs.Store. The key's folder stays even when it becomes empty:
// removing it would race with a Put into it, and DeletePrefix prunes empty folders.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := blobs.ValidKey(key); err != nil {
		return fmt.Errorf("fsblobs: delete: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fsblobs: delete %s: %w", key, err)
	}
	if err := os.Remove(s.filePath(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("fsblobs: delete %s: %w", key, err)
	}
	return nil
}

// DeletePrefix implements blobs.Store. It walks only the folder the prefix points into
// ("app1/" walks <root>/app1, "app1/ab" walks <root>/app1 and keeps names starting with
// "ab"), then removes the folders the walk emptied.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	if err := blobs.ValidPrefix(prefix); err != nil {
		return 0, fmt.Errorf("fsblobs: delete prefix: %w", err)
	}
	// Folders are key prefixes ending in "/", so a folder is worth entering when its
	// "/"-terminated key prefix and the prefix agree on their common length.
	base := prefix[:strings.LastIndex(prefix, "/")+1] // "" for a prefix without "/"
	start := filepath.Join(s.root, filepath.FromSlash(base))
	n := 0
	var dirs []string // folders under the prefix, to prune once emptied
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll // nothing was ever stored under the prefix
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(s.root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if p == s.root {
				return nil
			}
			dirKey := rel + "/"
			switch {
			case strings.HasPrefix(dirKey, prefix):
				dirs = append(dirs, p)
				return nil
			case strings.HasPrefix(prefix, dirKey):
				return nil // the prefix goes deeper: keep walking towards it
			default:
				return fs.SkipDir
			}
		}
		name := d.Name()
		if strings.HasPrefix(name, tmpPrefix) || !strings.HasSuffix(name, fileSuffix) {
			return nil // an upload in progress, or not ours
		}
		if key := strings.TrimSuffix(rel, fileSuffix); strings.HasPrefix(key, prefix) {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			n++
		}
		return nil
	})
	// Prune deepest first; a folder that is not empty (an upload in progress, a key that
	// arrived meanwhile) fails to go and stays, which is what we want.
	slices.Sort(dirs) // a folder sorts before its sub-folders
	slices.Reverse(dirs)
	for _, d := range dirs {
		_ = os.Remove(d)
	}
	if err != nil {
		return n, fmt.Errorf("fsblobs: delete prefix %s: after %d: %w", prefix, n, err)
	}
	return n, nil
}
