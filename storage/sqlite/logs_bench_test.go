package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/storagetest"
)

// BenchmarkLogsAtScale times the log queries on a million entries; it runs only with
// KEYWARD_BIG_LOG_BENCH=1 (see storagetest.BenchLogsAtScale).
func BenchmarkLogsAtScale(b *testing.B) {
	storagetest.BenchLogsAtScale(b, func(b *testing.B) storage.Store {
		return openTemp(b, filepath.Join(b.TempDir(), "keyward.db"))
	})
}
