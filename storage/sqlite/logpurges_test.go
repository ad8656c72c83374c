package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/keyward/keyward/storage/storagetest"
)

// TestLogPurgeCrossesChunks: a purge of more entries than a chunk (7 here, 10,000 in
// production) deletes them all, chunk by chunk, to its cutoff.
func TestLogPurgeCrossesChunks(t *testing.T) {
	s := openTemp(t, filepath.Join(t.TempDir(), "kw.db"))
	s.purgeChunk = 7
	storagetest.LogPurgeChunks(t, s, s.purgeChunk)
}
