package gridfs

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

const (
	// chunkSize is the GridFS chunk size of the files Put writes: the driver's and the
	// GridFS specification's default, 255 KiB.
	chunkSize = int(mongo.DefaultGridFSChunkSize)
	// chunksPerInsert is how many chunks one insert sends: about 2 MiB, which with the
	// driver's copies of it is the memory an upload costs.
	//
	// The driver's own upload stream (GridFSBucket.OpenUploadStream) cannot be used: it
	// buffers 16 MiB per upload and sends it as one insert, and streaming 1 GiB through
	// it grew the heap by 167 MiB and the RSS by 188 MiB (TestBigBlobMemory, driver
	// 2.9.3), far over Keyward's 64 MiB budget for a 1 GiB upload.
	chunksPerInsert = 8
)

// chunkWriter is the io.Writer of an upload: it cuts the stream into chunkSize chunks
// of file id and inserts them chunksPerInsert at a time. Every chunk but the last is full,
// as GridFS readers require.
type chunkWriter struct {
	ctx    context.Context
	chunks *mongo.Collection
	id     bson.ObjectID
	buf    []byte // pending bytes, at most chunkSize*chunksPerInsert
	next   int32  // number of the next chunk
}

func newChunkWriter(ctx context.Context, chunks *mongo.Collection, id bson.ObjectID) *chunkWriter {
	return &chunkWriter{ctx: ctx, chunks: chunks, id: id, buf: make([]byte, 0, chunkSize*chunksPerInsert)}
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		n := copy(w.buf[len(w.buf):cap(w.buf)], p)
		w.buf = w.buf[:len(w.buf)+n]
		p = p[n:]
		written += n
		if len(w.buf) == cap(w.buf) {
			if err := w.flush(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// Close inserts the pending bytes, the last and possibly short chunk among them.
func (w *chunkWriter) Close() error {
	if len(w.buf) == 0 {
		return nil
	}
	return w.flush()
}

func (w *chunkWriter) flush() error {
	docs := make([]any, 0, chunksPerInsert)
	for off := 0; off < len(w.buf); off += chunkSize {
		docs = append(docs, bson.D{
			{Key: "_id", Value: bson.NewObjectID()},
			{Key: "files_id", Value: w.id},
			{Key: "n", Value: w.next},
			// InsertMany encodes the documents before it returns, so buf can be reused.
			{Key: "data", Value: bson.Binary{Data: w.buf[off:min(off+chunkSize, len(w.buf))]}},
		})
		w.next++
	}
	if _, err := w.chunks.InsertMany(w.ctx, docs); err != nil {
		return fmt.Errorf("insert chunks %d-%d: %w", int(w.next)-len(docs), w.next-1, err)
	}
	w.buf = w.buf[:0]
	return nil
}
