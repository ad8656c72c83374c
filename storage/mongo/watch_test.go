package mongo

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/internal/testenv"
)

// watcher calls its see before each command its store sends (nil: none), from the
// goroutine sending it: a test checks the database as the command finds it, or changes
// it in the instant before (through the peer database, on another client, unwatched).
type watcher struct {
	mu  sync.Mutex
	see func(e *event.CommandStartedEvent)
}

// set makes see the function called before each command from now on (nil: none).
func (w *watcher) set(see func(e *event.CommandStartedEvent)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.see = see
}

func (w *watcher) started(_ context.Context, e *event.CommandStartedEvent) {
	w.mu.Lock()
	see := w.see
	w.mu.Unlock()
	if see != nil {
		see(e)
	}
}

// commandOn reports whether e is the command name on collection coll.
func commandOn(e *event.CommandStartedEvent, name string, coll *mongo.Collection) bool {
	if e.CommandName != name {
		return false
	}
	c, _ := e.Command.Lookup(name).StringValueOK()
	return c == coll.Name()
}

// openWatched opens a store as openFresh does, on a client of its own (a pool of at
// least one connection) whose commands w sees, and answers it with peer, the store's
// database on the shared client.
func openWatched(t *testing.T) (s *Store, peer *mongo.Database, w *watcher) {
	t.Helper()
	uri := testenv.MongoURI(t)
	w = &watcher{}
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetMinPoolSize(1).
		SetMonitor(&event.CommandMonitor{Started: w.started}))
	if err != nil {
		t.Fatalf("connect the watched client: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = client.Disconnect(ctx)
	})
	s = openOn(t, uri, client)
	t.Cleanup(func() { w.set(nil) }) // before the database is dropped
	return s, sharedClient(t, uri).Database(s.db.Name()), w
}
