package mongo

import (
	"testing"

	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/storagetest"
)

// BenchmarkRevocationCheck times the revocation read of every dashboard request.
func BenchmarkRevocationCheck(b *testing.B) {
	storagetest.BenchRevocationCheck(b, func(b *testing.B) storage.Store {
		return openFresh(b, testenv.MongoURI(b))
	})
}
