// Package copyhash is the copy loop both blob engines share: stream a reader into a
// writer through one caller-sized buffer, hashing with SHA-256 on the way, stopping when
// the context ends or the size passes a cap. Sharing it keeps the engines' ErrTooLarge
// and cancellation behaviour identical.
package copyhash

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"

	"github.com/keyward/keyward/storage/blobs"
)

// Copy copies r into w through buf and answers the byte count and the SHA-256 (hex) of
// what it copied. maxBytes > 0 caps the size: Copy reads at most one byte past it and then
// fails with an error wrapping blobs.ErrTooLarge. Before every read it checks ctx and fails
// with ctx's error once ctx is done; a read already blocked in r is not interrupted (the
// HTTP server unblocks request bodies when a client goes away).
//
// On error the writer has received a prefix of the data: the caller discards it.
func Copy(ctx context.Context, w io.Writer, r io.Reader, maxBytes int64, buf []byte) (int64, string, error) {
	h := sha256.New()
	limit := int64(math.MaxInt64)
	if maxBytes > 0 && maxBytes < math.MaxInt64 {
		limit = maxBytes + 1 // one byte more than allowed tells "too large" from "exactly max"
	}
	// The wrappers hide any ReaderFrom/WriterTo of w and r (an *os.File's ReadFrom, say),
	// so io.CopyBuffer really goes through buf, the only memory the copy needs.
	n, err := io.CopyBuffer(io.MultiWriter(w, h), io.LimitReader(ctxReader{ctx, r}, limit), buf)
	if err != nil {
		return n, "", err
	}
	if maxBytes > 0 && n > maxBytes {
		return n, "", fmt.Errorf("more than %d bytes: %w", maxBytes, blobs.ErrTooLarge)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
