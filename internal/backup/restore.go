package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/blobs"
)

// ErrWrongKey answers a restore whose sealed secrets the configured secrets key does not
// open.
var ErrWrongKey = errors.New("the configured secrets key does not open this backup's sealed secrets: configure the key of the node that made it (KEYWARD_SECRETS_KEY, or that node's data dir secrets.key)")

// ErrNotEmpty answers a restore or import into a target that holds records.
var ErrNotEmpty = errors.New("the target is not empty")

// Verify reads the whole archive at path and checks it without writing anything: the
// format, every entry's size and checksum, the count of every kind and, when sealer is not
// nil, that each sealed secret opens with it. The embedded database of a TypeSQLite
// archive is checked by Restore, which opens it.
func Verify(path string, sealer storage.Sealer) (Manifest, error) {
	counts := map[string]int{}
	m, err := readArchive(path, func(name string, r io.Reader) error {
		kind, ok := recordKind(name)
		if !ok {
			return nil
		}
		return forEachLine(r, func(line []byte) error {
			counts[kind]++
			if sealer == nil {
				return nil
			}
			return checkSealed(kind, line, sealer)
		})
	})
	if err != nil {
		return Manifest{}, err
	}
	if sealer != nil && m.KeyCheck != "" {
		if plain, err := sealer.Open(m.KeyCheck, keyCheckContext); err != nil || plain != keyCheckPlain {
			return Manifest{}, fmt.Errorf("%w (the manifest's key check does not open)", ErrWrongKey)
		}
	}
	if m.Type == TypeArchive {
		for _, k := range kinds {
			if counts[k.name] != m.Counts[k.name] {
				return Manifest{}, fmt.Errorf("%s: %s holds %d records, the manifest says %d", path, k.name, counts[k.name], m.Counts[k.name])
			}
		}
	}
	return m, nil
}

func recordKind(entry string) (string, bool) {
	name, ok := strings.CutPrefix(entry, recordsDir)
	if !ok {
		return "", false
	}
	return strings.TrimSuffix(name, ".jsonl"), true
}

// checkSealed opens the sealed secrets of one record, if its kind has any.
func checkSealed(kind string, line []byte, s storage.Sealer) error {
	var err error
	var what string
	switch kind {
	case storage.KindAccounts:
		var a storage.Account
		if err = json.Unmarshal(line, &a); err == nil {
			what, err = "account "+a.ID, storage.OpenAccount(s, &a)
		}
	case storage.KindApps:
		var a storage.App
		if err = json.Unmarshal(line, &a); err == nil {
			what, err = "app "+a.ID, storage.OpenApp(s, &a)
		}
	case storage.KindIntegrations:
		var i storage.Integration
		if err = json.Unmarshal(line, &i); err == nil {
			what, err = "integration "+i.ID, storage.OpenIntegration(s, &i)
		}
	case storage.KindStoreConnections:
		var c storage.StoreConnection
		if err = json.Unmarshal(line, &c); err == nil {
			what, err = "store connection "+c.ID, storage.OpenStoreConnection(s, &c)
		}
	default:
		return nil
	}
	if err != nil && what != "" {
		return fmt.Errorf("%w (%s: %v)", ErrWrongKey, what, err)
	}
	return err
}

// Empty answers ErrNotEmpty, naming a kind that has records, when st holds any record.
func Empty(ctx context.Context, st storage.ArchiveStore) error {
	errFound := errors.New("found")
	for _, k := range kinds {
		err := st.ArchiveRecords(ctx, k.name, func(any) error { return errFound })
		if errors.Is(err, errFound) {
			return fmt.Errorf("%w: it holds %s", ErrNotEmpty, k.name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Report says what an import wrote.
type Report struct {
	Counts map[string]int
	// Skipped counts the records left out because their parent is not in the archive
	// (created while a MongoDB node's backup was read).
	Skipped map[string]int
	Blobs   int
}

// importBatch is how many records go to a store in one call.
const importBatch = 1000

// Import writes the records and files of the archive at path into dst, which must be
// empty and opened without a Sealer (sealed values are written as they are). Call Verify
// first: Import writes as it reads.
func Import(ctx context.Context, path string, dst storage.Store, b blobs.Store) (Report, error) {
	as, ok := dst.(storage.ArchiveStore)
	if !ok {
		return Report{}, fmt.Errorf("import: store %T cannot restore archives", dst)
	}
	if err := Empty(ctx, as); err != nil {
		return Report{}, fmt.Errorf("import: %w", err)
	}
	rep := Report{Counts: map[string]int{}, Skipped: map[string]int{}}
	_, err := readArchive(path, func(name string, r io.Reader) error {
		if key, ok := strings.CutPrefix(name, blobsDir); ok {
			if _, _, err := b.Put(ctx, key, r, 0); err != nil {
				return fmt.Errorf("import file %s: %w", key, err)
			}
			rep.Blobs++
			return nil
		}
		name, ok := recordKind(name)
		if !ok {
			return fmt.Errorf("import: a %s entry (take the database of an embedded backup with Restore)", name)
		}
		k, _ := kindByName(name)
		var lines [][]byte
		flush := func() error {
			skipped, err := k.put(ctx, dst, lines)
			if err != nil {
				return fmt.Errorf("import %s: %w", name, err)
			}
			rep.Counts[name] += len(lines) - skipped
			rep.Skipped[name] += skipped
			lines = lines[:0]
			return nil
		}
		if err := forEachLine(r, func(line []byte) error {
			lines = append(lines, append([]byte(nil), line...))
			if len(lines) == importBatch {
				return flush()
			}
			return nil
		}); err != nil {
			return err
		}
		return flush()
	})
	if err != nil {
		return rep, err
	}
	return rep, nil
}
