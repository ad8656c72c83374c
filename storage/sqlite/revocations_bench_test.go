package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/storagetest"
)

// BenchmarkRevocationCheck times the revocation read of every dashboard request.
func BenchmarkRevocationCheck(b *testing.B) {
	storagetest.BenchRevocationCheck(b, func(b *testing.B) storage.Store {
		return openTemp(b, filepath.Join(b.TempDir(), "keyward.db"))
	})
}
