package gridfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage/blobs"
	"github.com/keyward/keyward/storage/blobs/internal/copyhash"
)

const (
	// DefaultBucket is the bucket New uses when given none.
	DefaultBucket = "files"
	// DefaultStaleAfter is the age after which New's Sweep takes a partial file for the
	// trace of a crash. It is far beyond any real upload, so that a slow one on another
	// node of the cluster is never swept away.
	DefaultStaleAfter = 24 * time.Hour

	// File states, in metadata.state of the files documents.
	statePartial  = "partial"  // bytes being written: invisible
	stateComplete = "complete" // the key's bytes, if it has the highest version
	stateDeleting = "deleting" // being deleted: invisible, chunks may be gone

	// copyBufSize is the buffer Put reads the caller's reader through.
	copyBufSize = 64 << 10
	// cleanupTimeout bounds the clean-up after a failed Put and the housekeeping after a
	// successful one, which run on a context detached from the caller's.
	cleanupTimeout = 30 * time.Second
	// openAttempts bounds Open's retries when a concurrent Put or Delete removes the file
	// between finding it and reading its first chunk.
	openAttempts = 3
	// versionAttempts bounds nextVersion's retries under contention.
	versionAttempts = 100
)

// Store is the GridFS engine. It is safe for concurrent use.
type Store struct {
	files    *mongo.Collection // <bucket>.files, the GridFS files documents
	chunks   *mongo.Collection // <bucket>.chunks, the GridFS chunks
	versions *mongo.Collection // <bucket>.versions, version numbers taken (see nextVersion)
}

var _ blobs.Store = (*Store)(nil)

// New opens the bucket named bucket (DefaultBucket if empty) in db: it creates the
// indexes and runs Sweep with DefaultStaleAfter to clean up after crashes.
func New(ctx context.Context, db *mongo.Database, bucket string) (*Store, error) {
	if bucket == "" {
		bucket = DefaultBucket
	}
	// The driver's bucket names the collections as every GridFS tool expects; its
	// streams are not used (see chunksPerInsert and chunksPerBatch).
	b := db.GridFSBucket(options.GridFSBucket().SetName(bucket))
	s := &Store{
		files:    b.GetFilesCollection(),
		chunks:   b.GetChunksCollection(),
		versions: db.Collection(bucket + ".versions"),
	}
	where := db.Name() + "." + bucket
	if err := s.createIndexes(ctx); err != nil {
		return nil, fmt.Errorf("gridfs: new %s: create indexes: %w", where, err)
	}
	if _, err := s.Sweep(ctx, DefaultStaleAfter); err != nil {
		return nil, fmt.Errorf("gridfs: new %s: %w", where, err)
	}
	return s, nil
}

func (s *Store) createIndexes(ctx context.Context) error {
	for _, ix := range []struct {
		coll  *mongo.Collection
		model mongo.IndexModel
	}{
		// The two indexes of the GridFS specification, as the driver would create them,
		// so that its GridFS streams, if ever used on the bucket, find them in place.
		{s.files, mongo.IndexModel{Keys: bson.D{{Key: "filename", Value: int32(1)}, {Key: "uploadDate", Value: int32(1)}}}},
		{s.chunks, mongo.IndexModel{
			Keys:    bson.D{{Key: "files_id", Value: int32(1)}, {Key: "n", Value: int32(1)}},
			Options: options.Index().SetUnique(true),
		}},
		// Open's and Delete's lookup: a key's files by version.
		{s.files, mongo.IndexModel{Keys: bson.D{{Key: "filename", Value: 1}, {Key: "metadata.version", Value: -1}}}},
		// Sweep's lookup. (A partial index on the unfinished states would be smaller, but
		// FerretDB 1.24 does not implement partialFilterExpression.)
		{s.files, mongo.IndexModel{Keys: bson.D{{Key: "metadata.state", Value: 1}, {Key: "uploadDate", Value: 1}}}},
	} {
		if _, err := ix.coll.Indexes().CreateOne(ctx, ix.model); err != nil {
			return fmt.Errorf("%s: %w", ix.coll.Name(), err)
		}
	}
	return nil
}

// fileDoc is the part of a GridFS files document that Store reads.
type fileDoc struct {
	ID        bson.ObjectID `bson:"_id"`
	Filename  string        `bson:"filename"`
	Length    int64         `bson:"length"`
	ChunkSize int32         `bson:"chunkSize"`
}

// Put implements blobs.Store; the package doc describes the steps.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, maxBytes int64) (int64, string, error) {
	if err := blobs.ValidKey(key); err != nil {
		return 0, "", fmt.Errorf("gridfs: put: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return 0, "", fmt.Errorf("gridfs: put %s: %w", key, err)
	}
	id := bson.NewObjectID()
	_, err := s.files.InsertOne(ctx, bson.D{
		{Key: "_id", Value: id},
		{Key: "length", Value: int64(0)}, // set with the state once known
		{Key: "chunkSize", Value: int32(chunkSize)},
		{Key: "uploadDate", Value: time.Now()}, // Sweep's clock while partial
		{Key: "filename", Value: key},
		{Key: "metadata", Value: bson.D{{Key: "state", Value: statePartial}}},
	})
	if err != nil {
		s.discard(ctx, id) // the insert may have happened although the answer was lost
		return 0, "", fmt.Errorf("gridfs: put %s: create files document: %w", key, withCtxErr(ctx, err))
	}
	size, sum, err := s.write(ctx, id, r, maxBytes)
	if err != nil {
		s.discard(ctx, id)
		return 0, "", fmt.Errorf("gridfs: put %s: %w", key, withCtxErr(ctx, err))
	}
	// The new bytes are visible: from here on nothing may fail the Put, and the
	// housekeeping runs to its end even if the caller goes away. Should it fail, the
	// older versions it leaves are hidden behind the new one and go at the key's next
	// Put or Delete.
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_ = s.keepNewest(hctx, key)
	return size, sum, nil
}

// write streams r into the chunks of partial file id, then makes it a complete file
// with a new version: the one update that makes the bytes visible.
func (s *Store) write(ctx context.Context, id bson.ObjectID, r io.Reader, maxBytes int64) (int64, string, error) {
	w := newChunkWriter(ctx, s.chunks, id)
	size, sum, err := copyhash.Copy(ctx, w, r, maxBytes, make([]byte, copyBufSize))
	if err != nil {
		return 0, "", err
	}
	if err := w.Close(); err != nil {
		return 0, "", err
	}
	version, err := s.nextVersion(ctx)
	if err != nil {
		return 0, "", err
	}
	res, err := s.files.UpdateOne(ctx,
		bson.D{{Key: "_id", Value: id}},
		bson.D{{Key: "$set", Value: bson.D{
			{Key: "length", Value: size},
			{Key: "uploadDate", Value: time.Now()},
			{Key: "metadata.state", Value: stateComplete},
			{Key: "metadata.version", Value: version},
			{Key: "metadata.sha256", Value: sum},
		}}})
	if err != nil {
		return 0, "", fmt.Errorf("mark complete: %w", err)
	}
	if res.MatchedCount != 1 {
		return 0, "", fmt.Errorf("mark complete: files document %s is gone", id.Hex())
	}
	return size, sum, nil
}

// nextVersion answers a version number higher than any answered before it returned.
//
// FerretDB 1.24 does not apply findAndModify's $inc atomically (8 goroutines
// incrementing one counter got duplicate values and lost updates), so the version is
// claimed by inserting it as an _id instead: a unique-key insert is atomic on every
// server, and the loser of a race retries with the next number. The claims below the new
// one are then deleted, so the collection stays a few documents long; the highest claim
// is never deleted, because each Put only deletes below its own.
func (s *Store) nextVersion(ctx context.Context) (int64, error) {
	for range versionAttempts {
		var last struct {
			ID int64 `bson:"_id"`
		}
		err := s.versions.FindOne(ctx, bson.D{},
			options.FindOne().SetSort(bson.D{{Key: "_id", Value: -1}})).Decode(&last)
		if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return 0, fmt.Errorf("read last version: %w", err)
		}
		v := last.ID + 1
		_, err = s.versions.InsertOne(ctx, bson.D{{Key: "_id", Value: v}})
		if mongo.IsDuplicateKeyError(err) {
			continue // another Put took v: read the new last one
		}
		if err != nil {
			return 0, fmt.Errorf("take version %d: %w", v, err)
		}
		_, _ = s.versions.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: v}}}})
		return v, nil
	}
	return 0, fmt.Errorf("take a version: %d attempts lost to concurrent Puts", versionAttempts)
}

// discard deletes what a failed Put wrote, on a context of its own because ctx may be
// the cancelled one. If it fails, the partial files document stays for Sweep.
func (s *Store) discard(ctx context.Context, id bson.ObjectID) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_ = s.removeFile(dctx, id)
}

// removeFile deletes file id's chunks, then its files document, so that a failure in
// between leaves a document Sweep can find rather than unreachable chunks.
func (s *Store) removeFile(ctx context.Context, id bson.ObjectID) error {
	if _, err := s.chunks.DeleteMany(ctx, bson.D{{Key: "files_id", Value: id}}); err != nil {
		return fmt.Errorf("delete chunks of %s: %w", id.Hex(), err)
	}
	if _, err := s.files.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
		return fmt.Errorf("delete files document %s: %w", id.Hex(), err)
	}
	return nil
}

// deleteFile removes a complete file: it hides it first (state "deleting", which Sweep
// finishes after a crash), then removes its chunks and files document.
func (s *Store) deleteFile(ctx context.Context, id bson.ObjectID) error {
	if _, err := s.files.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "metadata.state", Value: stateDeleting}}}}); err != nil {
		return fmt.Errorf("hide %s: %w", id.Hex(), err)
	}
	return s.removeFile(ctx, id)
}

// newestFirst orders a key's complete files: the highest version wins, and the file id
// breaks ties, so that every node agrees on the winner whatever happens.
var newestFirst = bson.D{{Key: "metadata.version", Value: -1}, {Key: "_id", Value: -1}}

// keepNewest deletes every complete file of key but the newest.
func (s *Store) keepNewest(ctx context.Context, key string) error {
	docs, err := s.findComplete(ctx, bson.D{{Key: "filename", Value: key}})
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range docs[min(1, len(docs)):] {
		errs = append(errs, s.deleteFile(ctx, d.ID))
	}
	return errors.Join(errs...)
}

// findComplete answers the complete files matching filter, newest first.
func (s *Store) findComplete(ctx context.Context, filter bson.D) ([]fileDoc, error) {
	filter = append(filter, bson.E{Key: "metadata.state", Value: stateComplete})
	cur, err := s.files.Find(ctx, filter, options.Find().
		SetSort(newestFirst).
		SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "filename", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("find files: %w", err)
	}
	var docs []fileDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("find files: %w", err)
	}
	return docs, nil
}

// Open implements blobs.Store. The reader fetches chunks as it goes, bound to ctx.
func (s *Store) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	if err := blobs.ValidKey(key); err != nil {
		return nil, 0, fmt.Errorf("gridfs: open: %w", err)
	}
	var err error
	for range openAttempts {
		var d fileDoc
		err = s.files.FindOne(ctx,
			bson.D{{Key: "filename", Value: key}, {Key: "metadata.state", Value: stateComplete}},
			options.FindOne().SetSort(newestFirst).SetProjection(bson.D{
				{Key: "_id", Value: 1}, {Key: "length", Value: 1}, {Key: "chunkSize", Value: 1},
			}),
		).Decode(&d)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return nil, 0, fmt.Errorf("gridfs: open %s: %w", key, blobs.ErrNotFound)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("gridfs: open %s: find: %w", key, err)
		}
		var r *chunkReader
		r, err = s.openChunks(ctx, d.ID, d.Length, int64(d.ChunkSize))
		if errors.Is(err, errMissingChunk) {
			continue // replaced or deleted since the find: look again
		}
		if err != nil {
			return nil, 0, fmt.Errorf("gridfs: open %s: %w", key, err)
		}
		return r, d.Length, nil
	}
	// Still missing chunks after the retries: not a race, a damaged file.
	return nil, 0, fmt.Errorf("gridfs: open %s: %d attempts: %w", key, openAttempts, err)
}

// Delete implements blobs.Store. Partial files are left to the Puts writing them: a Put
// that finishes after Delete stores its key again, as if it had started after.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := blobs.ValidKey(key); err != nil {
		return fmt.Errorf("gridfs: delete: %w", err)
	}
	docs, err := s.findComplete(ctx, bson.D{{Key: "filename", Value: key}})
	if err != nil {
		return fmt.Errorf("gridfs: delete %s: %w", key, err)
	}
	for _, d := range docs {
		if err := s.deleteFile(ctx, d.ID); err != nil {
			return fmt.Errorf("gridfs: delete %s: %w", key, err)
		}
	}
	return nil
}

// DeletePrefix implements blobs.Store, counting keys (a key with an older version not yet
// removed counts once).
func (s *Store) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	if err := blobs.ValidPrefix(prefix); err != nil {
		return 0, fmt.Errorf("gridfs: delete prefix: %w", err)
	}
	// An anchored regular expression of the escaped prefix: MongoDB serves it from the
	// filename index, and FerretDB supports $regex.
	docs, err := s.findComplete(ctx, bson.D{{Key: "filename", Value: bson.D{
		{Key: "$regex", Value: "^" + regexp.QuoteMeta(prefix)},
	}}})
	if err != nil {
		return 0, fmt.Errorf("gridfs: delete prefix %s: %w", prefix, err)
	}
	keys := map[string]bool{}
	for _, d := range docs {
		if err := s.deleteFile(ctx, d.ID); err != nil {
			return len(keys), fmt.Errorf("gridfs: delete prefix %s: after %d keys: %w", prefix, len(keys), err)
		}
		keys[d.Filename] = true
	}
	return len(keys), nil
}

// Sweep removes what crashes left behind, answering how many files it removed: partial
// files started more than olderThan ago (an upload that never finished) and files a
// Delete hid but did not finish removing. New runs it with DefaultStaleAfter; a
// long-running server may run it periodically.
func (s *Store) Sweep(ctx context.Context, olderThan time.Duration) (int, error) {
	cur, err := s.files.Find(ctx, bson.D{{Key: "$or", Value: bson.A{
		bson.D{{Key: "metadata.state", Value: stateDeleting}},
		bson.D{
			{Key: "metadata.state", Value: statePartial},
			{Key: "uploadDate", Value: bson.D{{Key: "$lt", Value: time.Now().Add(-olderThan)}}},
		},
	}}}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "filename", Value: 1}}))
	if err != nil {
		return 0, fmt.Errorf("sweep: find: %w", err)
	}
	var docs []fileDoc
	if err := cur.All(ctx, &docs); err != nil {
		return 0, fmt.Errorf("sweep: find: %w", err)
	}
	for i, d := range docs {
		if err := s.removeFile(ctx, d.ID); err != nil {
			return i, fmt.Errorf("sweep: file of %s: %w", d.Filename, err)
		}
	}
	return len(docs), nil
}

// withCtxErr makes sure an error caused by ctx's end says so to errors.Is, whatever the
// driver wrapped it in.
func withCtxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}
