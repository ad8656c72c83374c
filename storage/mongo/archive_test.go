package mongo

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/blobs/gridfs"
	"github.com/keyward/keyward/storage/storagetest"
)

func TestArchive(t *testing.T) {
	uri := testenv.MongoURI(t)
	storagetest.RunArchive(t, storagetest.ArchiveHarness{
		Open: func(t *testing.T, sealer storage.Sealer) storage.Store {
			name := testenv.UniqueName("kwtest_")
			s, err := Open(t.Context(), Config{URI: uri, Database: name, Sealer: sealer})
			if err != nil {
				t.Fatal(err)
			}
			// The file bytes' bucket lives in the same database.
			if _, err := gridfs.New(t.Context(), s.Database(), "files"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_ = s.db.Drop(ctx)
				_ = s.Close()
			})
			return s
		},
		Tables: func(t *testing.T, st storage.Store) []string {
			names, err := st.(*Store).db.ListCollectionNames(t.Context(), bson.D{})
			if err != nil {
				t.Fatal(err)
			}
			return names
		},
	})
}
