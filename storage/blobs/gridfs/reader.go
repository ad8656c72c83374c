package gridfs

import (
	"context"
	"errors"
	"fmt"
	"io"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// chunksPerBatch is how many chunks one reply of a download carries: about 4 MiB with
// 255 KiB chunks, the memory a download costs.
//
// The driver's download stream (GridFSBucket.OpenDownloadStream) cannot be used: it
// leaves the batch size to the server, and FerretDB 1.24 does not cap replies at 16 MiB
// as MongoDB does: reading a 1 GiB file, it answered a reply over the driver's 48 MB
// message limit ("length of read message too large") after 25 MiB.
const chunksPerBatch = 16

// errMissingChunk answers a read that finds the file's chunks gone: the file was
// replaced or deleted meanwhile.
var errMissingChunk = errors.New("missing chunk")

// chunkReader streams a GridFS file's chunks in order, checking their numbers and sizes
// as the GridFS specification asks, so that a file missing chunks fails rather than
// reading short.
//
// It first reads the chunks without asking the server to sort them, and switches to a
// query sorted by chunk number, from the chunk it expects, at the first chunk out of
// place. The unsorted query normally comes in chunk order on MongoDB (it walks the
// files_id_1_n_1 index) and on FerretDB 1.24 (insertion order), and there it streams:
// FerretDB does not push sorts down to its storage, so a sorted query makes it load and
// sort the whole file in its own memory before answering (measured: its RSS grew by
// about 135 MiB for a 64 MiB file, and stayed under 90 MiB over a 1 GiB unsorted read). Every FerretDB 1.24 query scans the whole collection, as explain shows
// (filterPushdown is false for files_id, true only for _id equality, which still took
// as long as a scan), so one query per download is also the fastest way there.
type chunkReader struct {
	ctx       context.Context
	chunks    *mongo.Collection
	id        bson.ObjectID
	length    int64 // bytes in the file
	chunkSize int64
	cur       *mongo.Cursor // nil before the first query
	sorted    bool          // cur is the sorted fallback query
	next      int64         // number of the next chunk expected
	pos       int64         // bytes answered so far
	data      []byte        // unread part of the current chunk, valid until cur.Next
	closed    bool
}

// openChunks starts reading file id, of the given length and chunk size. It fetches the
// first chunk before answering, so that a file deleted since it was found answers
// errMissingChunk here, where Open can look again, rather than at the first Read.
func (s *Store) openChunks(ctx context.Context, id bson.ObjectID, length, chunkSize int64) (*chunkReader, error) {
	r := &chunkReader{ctx: ctx, chunks: s.chunks, id: id, length: length, chunkSize: chunkSize}
	if length == 0 {
		return r, nil
	}
	if chunkSize <= 0 {
		return nil, fmt.Errorf("file %s has chunk size %d", id.Hex(), chunkSize)
	}
	if err := r.fill(); err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("read file %s: %w", id.Hex(), err)
	}
	return r, nil
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, errors.New("gridfs: read after close")
	}
	if len(p) == 0 {
		return 0, nil
	}
	if len(r.data) == 0 {
		if r.pos >= r.length {
			return 0, io.EOF
		}
		if err := r.fill(); err != nil {
			return 0, fmt.Errorf("gridfs: read file %s at byte %d: %w", r.id.Hex(), r.pos, err)
		}
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	r.pos += int64(n)
	return n, nil
}

// query replaces the cursor: unsorted over the whole file, or sorted from chunk r.next.
func (r *chunkReader) query(sorted bool) error {
	if r.cur != nil {
		_ = r.cur.Close(r.ctx)
		r.cur = nil
	}
	filter := bson.D{{Key: "files_id", Value: r.id}}
	opts := options.Find().
		SetBatchSize(chunksPerBatch).
		SetProjection(bson.D{{Key: "n", Value: 1}, {Key: "data", Value: 1}})
	if sorted {
		filter = append(filter, bson.E{Key: "n", Value: bson.D{{Key: "$gte", Value: r.next}}})
		opts.SetSort(bson.D{{Key: "n", Value: 1}})
	}
	cur, err := r.chunks.Find(r.ctx, filter, opts)
	if err != nil {
		return fmt.Errorf("find chunks from %d: %w", r.next, err)
	}
	r.cur, r.sorted = cur, sorted
	return nil
}

// fill loads chunk r.next into r.data.
func (r *chunkReader) fill() error {
	if r.cur == nil {
		if err := r.query(false); err != nil {
			return err
		}
	}
	for {
		if !r.cur.Next(r.ctx) {
			if err := r.cur.Err(); err != nil {
				return fmt.Errorf("read chunk %d: %w", r.next, err)
			}
			// Every chunk before r.next came, in order, and nothing follows.
			return fmt.Errorf("chunk %d: %w", r.next, errMissingChunk)
		}
		n, data, err := decodeChunk(r.cur.Current)
		if err != nil {
			return fmt.Errorf("chunk %d: %w", r.next, err)
		}
		if n != r.next {
			if r.sorted {
				return fmt.Errorf("chunk %d (found chunk %d): %w", r.next, n, errMissingChunk)
			}
			if err := r.query(true); err != nil { // out of place: sort from here on
				return err
			}
			continue
		}
		// Chunk n holds the bytes from n*chunkSize on; only the last one may be short.
		if want := min(r.chunkSize, r.length-n*r.chunkSize); int64(len(data)) != want {
			return fmt.Errorf("chunk %d has %d bytes, want %d", n, len(data), want)
		}
		r.next++
		r.data = data
		return nil
	}
}

// decodeChunk answers a chunk's number and data. It looks them up in place rather than
// decoding into a struct, which would copy the data: raw stays valid until the cursor's
// next call to Next, and the reader has used the data up by then.
func decodeChunk(raw bson.Raw) (int64, []byte, error) {
	nv, err := raw.LookupErr("n")
	if err != nil {
		return 0, nil, err
	}
	n, ok := nv.AsInt64OK() // written as int32; other GridFS writers may differ
	if !ok {
		return 0, nil, fmt.Errorf("n is a %s", nv.Type)
	}
	dv, err := raw.LookupErr("data")
	if err != nil {
		return 0, nil, err
	}
	_, data, ok := dv.BinaryOK()
	if !ok {
		return 0, nil, fmt.Errorf("data is a %s", dv.Type)
	}
	return n, data, nil
}

func (r *chunkReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.data = nil
	if r.cur == nil {
		return nil
	}
	// Closing frees the server's cursor when the file was not read to its end; it must
	// work even when the reader's context is done, hence a context of its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), cleanupTimeout)
	defer cancel()
	if err := r.cur.Close(ctx); err != nil {
		return fmt.Errorf("gridfs: close file %s: %w", r.id.Hex(), err)
	}
	return nil
}
