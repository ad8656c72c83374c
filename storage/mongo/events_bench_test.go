package mongo

import (
	"fmt"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage"
)

// BenchmarkAppendEvents times one-event appends (a node's group-commit rounds under light
// load) to a log already holding 2,000 events of 20 apps.
func BenchmarkAppendEvents(b *testing.B) {
	s := openFresh(b, testenv.MongoURI(b))
	ctx := b.Context()
	for i := range 20 {
		batch := make([]storage.EventRecord, 100)
		for j := range batch {
			batch[j] = storage.EventRecord{ID: fmt.Sprintf("pre-%d-%d", i, j), AppID: fmt.Sprintf("app-%d", j%20), Type: "user.login", Payload: []byte(`{}`), At: time.Now()}
		}
		if err := s.AppendEvents(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		if err := s.AppendEvents(ctx, []storage.EventRecord{{ID: fmt.Sprintf("b-%d", i), AppID: "app-1", Type: "user.login", Payload: []byte(`{}`), At: time.Now()}}); err != nil {
			b.Fatal(err)
		}
	}
}
