package mongo

import (
	"testing"

	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage/storagetest"
)

// BenchmarkLogPurge: a purge of 20,000 entries through its intent, against the delete
// alone.
func BenchmarkLogPurge(b *testing.B) {
	storagetest.BenchLogPurge(b, openFresh(b, testenv.MongoURI(b)), 20_000)
}
