package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/keyward/keyward/storage/storagetest"
)

// BenchmarkLogPurge: a purge of 20,000 entries through its intent, against the delete
// alone.
func BenchmarkLogPurge(b *testing.B) {
	storagetest.BenchLogPurge(b, openTemp(b, filepath.Join(b.TempDir(), "keyward.db")), 20_000)
}
