package sqlite

import (
	"path/filepath"
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
