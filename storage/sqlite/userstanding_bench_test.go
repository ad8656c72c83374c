package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/storagetest"
)

// BenchmarkUserStanding times a socket admission's user read, whole and standing alone.
func BenchmarkUserStanding(b *testing.B) {
	storagetest.BenchUserStanding(b, func(b *testing.B) storage.Store {
		return openTemp(b, filepath.Join(b.TempDir(), "keyward.db"))
	})
}
