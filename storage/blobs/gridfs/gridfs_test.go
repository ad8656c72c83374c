package gridfs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage/blobs"
	"github.com/keyward/keyward/storage/blobs/blobstest"
)

// connect answers a client of the test server, disconnected when t ends.
func connect(t *testing.T) *mongo.Client {
	t.Helper()
	uri := testenv.MongoURI(t)
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(5 * time.Second))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

// newStore answers a store on a fresh database, dropped when t ends. Before the drop it
// checks that the test left no trace of a Put in progress or a failed one: partial or
// hidden files, chunks without a complete file, keys with more than one file.
func newStore(t *testing.T, c *mongo.Client) *Store {
	t.Helper()
	db := c.Database(testenv.UniqueName("kwtest_"))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := db.Drop(ctx); err != nil {
			t.Errorf("drop database %s: %v", db.Name(), err)
		}
	})
	s, err := New(t.Context(), db, "")
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { checkNoLeftovers(t, s) })
	return s
}

func checkNoLeftovers(t *testing.T, s *Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if n, err := s.files.CountDocuments(ctx, bson.D{{Key: "metadata.state", Value: bson.D{{Key: "$ne", Value: stateComplete}}}}); err != nil || n != 0 {
		t.Errorf("files not complete left: %d (%v)", n, err)
	}
	cur, err := s.chunks.Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "files_id", Value: 1}}))
	if err != nil {
		t.Errorf("list chunks: %v", err)
		return
	}
	var chunks []struct {
		FilesID bson.ObjectID `bson:"files_id"`
	}
	if err := cur.All(ctx, &chunks); err != nil {
		t.Errorf("list chunks: %v", err)
		return
	}
	owners := map[bson.ObjectID]bool{}
	for _, c := range chunks {
		owners[c.FilesID] = true
	}
	for id := range owners {
		n, err := s.files.CountDocuments(ctx, bson.D{{Key: "_id", Value: id}, {Key: "metadata.state", Value: stateComplete}})
		if err != nil || n != 1 {
			t.Errorf("chunks of %s have no complete file (%v)", id.Hex(), err)
		}
	}
	// Every key holds one complete file once its Puts and Deletes returned. (Not with
	// distinct: FerretDB 1.24 refuses its maxTimeMS, which the driver adds under a deadline.)
	cur, err = s.files.Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "filename", Value: 1}}))
	if err != nil {
		t.Errorf("list files: %v", err)
		return
	}
	var files []fileDoc
	if err := cur.All(ctx, &files); err != nil {
		t.Errorf("list files: %v", err)
		return
	}
	perKey := map[string]int{}
	for _, f := range files {
		perKey[f.Filename]++
	}
	for key, n := range perKey {
		if n != 1 {
			t.Errorf("key %q has %d files, want 1", key, n)
		}
	}
}

func TestConformance(t *testing.T) {
	c := connect(t)
	blobstest.Run(t, func(t *testing.T) blobs.Store { return newStore(t, c) })
}

func TestBigBlobMemory(t *testing.T) {
	blobstest.SkipUnlessBig(t)
	blobstest.RunBig(t, newStore(t, connect(t)))
}

func TestGridFSLayout(t *testing.T) {
	// Blobs are plain GridFS files named by their key, readable by the driver's own
	// GridFS streams.
	c := connect(t)
	s := newStore(t, c)
	ctx := t.Context()
	data := strings.Repeat("0123456789", 60_000) // 600 kB: three 255 KiB chunks
	if _, _, err := s.Put(ctx, "app1/f1", strings.NewReader(data), 0); err != nil {
		t.Fatalf("Put: %v", err)
	}
	bucket := s.files.Database().GridFSBucket(options.GridFSBucket().SetName(DefaultBucket))
	ds, err := bucket.OpenDownloadStreamByName(ctx, "app1/f1")
	if err != nil {
		t.Fatalf("OpenDownloadStreamByName: %v", err)
	}
	defer func() { _ = ds.Close() }()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(ds); err != nil || buf.String() != data {
		t.Fatalf("GridFS read %d bytes (%v), want the %d put", buf.Len(), err, len(data))
	}
	if n, _ := s.chunks.CountDocuments(ctx, bson.D{}); n != 3 {
		t.Errorf("%d chunks, want 3 of 255 KiB", n)
	}
	var meta struct {
		Metadata struct {
			State   string `bson:"state"`
			Version int64  `bson:"version"`
			SHA256  string `bson:"sha256"`
		} `bson:"metadata"`
	}
	if err := s.files.FindOne(ctx, bson.D{{Key: "filename", Value: "app1/f1"}}).Decode(&meta); err != nil {
		t.Fatalf("files document: %v", err)
	}
	if m := meta.Metadata; m.State != stateComplete || m.Version < 1 || len(m.SHA256) != 64 {
		t.Errorf("metadata = %+v, want a complete file with a version and its hash", m)
	}
}

func TestSweep(t *testing.T) {
	c := connect(t)
	s := newStore(t, c)
	ctx := t.Context()
	if _, _, err := s.Put(ctx, "app1/kept", strings.NewReader("kept"), 0); err != nil {
		t.Fatalf("Put: %v", err)
	}
	insert := func(coll *mongo.Collection, doc any) {
		t.Helper()
		if _, err := coll.InsertOne(ctx, doc); err != nil {
			t.Fatalf("insert into %s: %v", coll.Name(), err)
		}
	}
	// file inserts what a crash leaves: a files document in state and a chunk.
	file := func(key, state string, started time.Time) bson.ObjectID {
		id := bson.NewObjectID()
		insert(s.files, bson.D{{Key: "_id", Value: id}, {Key: "filename", Value: key}, {Key: "length", Value: int64(0)},
			{Key: "chunkSize", Value: int32(chunkSize)}, {Key: "uploadDate", Value: started},
			{Key: "metadata", Value: bson.D{{Key: "state", Value: state}}}})
		insert(s.chunks, bson.D{{Key: "files_id", Value: id}, {Key: "n", Value: int32(0)}, {Key: "data", Value: bson.Binary{Data: []byte("x")}}})
		return id
	}
	old := time.Now().Add(-48 * time.Hour)
	crashed := file("app1/crashed", statePartial, old)        // a Put that died mid-way
	hidden := file("app1/hidden", stateDeleting, time.Now())  // a Delete that died mid-way
	running := file("app1/running", statePartial, time.Now()) // an upload in progress elsewhere

	n, err := s.Sweep(ctx, DefaultStaleAfter)
	if err != nil || n != 2 {
		t.Fatalf("Sweep = %d, %v; want 2 files removed", n, err)
	}
	for _, id := range []bson.ObjectID{crashed, hidden} {
		if c, _ := s.chunks.CountDocuments(ctx, bson.D{{Key: "files_id", Value: id}}); c != 0 {
			t.Errorf("chunks of %s survived the sweep", id.Hex())
		}
		if c, _ := s.files.CountDocuments(ctx, bson.D{{Key: "_id", Value: id}}); c != 0 {
			t.Errorf("files document %s survived the sweep", id.Hex())
		}
	}
	if c, _ := s.chunks.CountDocuments(ctx, bson.D{{Key: "files_id", Value: running}}); c != 1 {
		t.Errorf("the sweep touched a running upload")
	}
	rc, _, err := s.Open(ctx, "app1/kept")
	if err != nil {
		t.Fatalf("the sweep took a complete file: %v", err)
	}
	_ = rc.Close()
	// Clean the running upload as its Put would, so that the leftover check passes.
	s.discard(ctx, running)
}

func TestOpenDetectsMissingChunks(t *testing.T) {
	// A file whose chunks went (a replace or delete racing a download) fails instead of
	// reading short.
	c := connect(t)
	s := newStore(t, c)
	ctx := t.Context()
	size := int64(6*chunkSize + 10)
	for _, missing := range []int32{0, 3, 6} { // the first, a middle one, the last
		if _, _, err := s.Put(ctx, "app1/f", blobstest.Data(1, size), 0); err != nil {
			t.Fatalf("Put: %v", err)
		}
		if _, err := s.chunks.DeleteOne(ctx, bson.D{{Key: "n", Value: missing}}); err != nil {
			t.Fatal(err)
		}
		rc, n, err := s.Open(ctx, "app1/f")
		if err == nil {
			var got int64
			got, err = io.Copy(io.Discard, rc)
			_ = rc.Close()
			if err == nil {
				t.Fatalf("chunk %d missing: Open answered %d bytes and read %d without error", missing, n, got)
			}
		}
		if !errors.Is(err, errMissingChunk) {
			t.Fatalf("chunk %d missing: %v, want errMissingChunk", missing, err)
		}
		if err := s.Delete(ctx, "app1/f"); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenChunksOutOfOrder(t *testing.T) {
	// Chunks that the server does not answer in chunk order (another GridFS writer, a
	// server whose natural order differs) are still read right, by the sorted fallback.
	c := connect(t)
	s := newStore(t, c)
	ctx := t.Context()
	size := int64(5*chunkSize + 77)
	want := blobstest.DataSHA256(2, size)
	if _, _, err := s.Put(ctx, "app1/f", blobstest.Data(2, size), 0); err != nil {
		t.Fatalf("Put: %v", err)
	}
	cur, err := s.chunks.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "n", Value: -1}}))
	if err != nil {
		t.Fatal(err)
	}
	var chunks []bson.D
	if err := cur.All(ctx, &chunks); err != nil {
		t.Fatal(err)
	}
	if _, err := s.chunks.DeleteMany(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	// Reinsert them last first: the natural order is then 5 4 3 2 1 0 on FerretDB.
	for _, ch := range chunks {
		if _, err := s.chunks.InsertOne(ctx, ch); err != nil {
			t.Fatal(err)
		}
	}
	rc, n, err := s.Open(ctx, "app1/f")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() { _ = rc.Close() }()
	h := sha256.New()
	got, err := io.Copy(h, rc)
	if err != nil || got != size || n != size || hex.EncodeToString(h.Sum(nil)) != want {
		t.Fatalf("read %d of %d bytes (%v), sha256 %x; want %d bytes, %s", got, n, err, h.Sum(nil), size, want)
	}
}

func TestNewIsIdempotent(t *testing.T) {
	c := connect(t)
	s := newStore(t, c)
	ctx := t.Context()
	if _, _, err := s.Put(ctx, "app1/f", strings.NewReader("v1"), 0); err != nil {
		t.Fatal(err)
	}
	// A second New on the same bucket (a restart, another node) keeps the data and the
	// version order: its Put replaces the first store's.
	s2, err := New(ctx, s.files.Database(), "")
	if err != nil {
		t.Fatalf("second New: %v", err)
	}
	if _, _, err := s2.Put(ctx, "app1/f", strings.NewReader("v2"), 0); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*Store{s, s2} {
		rc, _, err := st.Open(ctx, "app1/f")
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		_, err = buf.ReadFrom(rc)
		_ = rc.Close()
		if err != nil || buf.String() != "v2" {
			t.Fatalf("Open = %q, %v; want v2", buf.String(), err)
		}
	}
}
