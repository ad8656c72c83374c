package mongo

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage"
)

// TestStaleClaimClearedOnce: a claim left by an updater that died blocks its version
// until it is stale; then racing updaters clear it once (one takeover document) and every
// update is made, none lost.
func TestStaleClaimClearedOnce(t *testing.T) {
	s := openFresh(t, testenv.MongoURI(t))
	ctx := t.Context()
	app := storage.App{ID: "app-1", AccountID: "acc-1", Name: "claims", CreatedAt: storage.Now(), UpdatedAt: storage.Now()}
	if err := s.CreateApp(ctx, app); err != nil {
		t.Fatal(err)
	}
	u := storage.AppUser{ID: "u1", AppID: app.ID, Username: "racer", Enabled: true, CreatedAt: storage.Now(), UpdatedAt: storage.Now()}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	var doc userDoc
	if err := s.users.FindOne(ctx, bson.D{{Key: "_id", Value: u.ID}}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	stale := claimDoc{ID: "users/u1#" + strconv.FormatInt(doc.Version+1, 10), Owner: app.ID, At: storage.Now().Add(-2 * claimLease)}
	if _, err := s.claims.InsertOne(ctx, stale); err != nil {
		t.Fatal(err)
	}
	const updaters = 4
	var wg sync.WaitGroup
	errs := make(chan error, updaters)
	for range updaters {
		wg.Go(func() {
			_, err := s.UpdateUser(ctx, app.ID, u.ID, func(x *storage.AppUser) error {
				x.HwidResets++
				return nil
			})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("UpdateUser past a stale claim: %v", err)
		}
	}
	got, err := s.GetUser(ctx, app.ID, u.ID)
	if err != nil || got.HwidResets != updaters {
		t.Fatalf("after %d updates past a stale claim: HwidResets %d, %v", updaters, got.HwidResets, err)
	}
	n, err := s.claims.CountDocuments(context.WithoutCancel(ctx), bson.D{{Key: "_id", Value: bson.D{{Key: "$regex", Value: "^users/u1#[0-9]+~"}}}})
	if err != nil || n != 1 {
		t.Fatalf("takeover documents of the stale claim = %d, %v; want 1", n, err)
	}
}

// TestEventAppendPastHeldHintLock: an append whose position hint's lock another node
// holds (or a dead one left, for its whole lease) still succeeds and raises the hint: it
// waits a bounded while, then raises without the lock.
func TestEventAppendPastHeldHintLock(t *testing.T) {
	s := openFresh(t, testenv.MongoURI(t))
	ctx := t.Context()
	held := claimDoc{ID: s.eventHeads.Name() + "/" + posHead + "#lock", At: storage.Now()}
	if _, err := s.claims.InsertOne(ctx, held); err != nil {
		t.Fatal(err)
	}
	ev := storage.EventRecord{ID: "evt-1", AppID: "app-1", Type: "user.login", Payload: []byte(`{}`), At: storage.Now()}
	if err := s.AppendEvents(ctx, []storage.EventRecord{ev}); err != nil {
		t.Fatalf("AppendEvents while the hint's lock is held: %v", err)
	}
	if p, err := s.LastEventPos(ctx); err != nil || p != 1 {
		t.Fatalf("LastEventPos = %d, %v; want 1", p, err)
	}
	if n, err := s.claims.CountDocuments(ctx, bson.D{{Key: "_id", Value: held.ID}}); err != nil || n != 1 {
		t.Fatalf("the held lock = %d, %v; want it left to its holder", n, err)
	}
}
