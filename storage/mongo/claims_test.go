package mongo

import (
	"context"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"

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

// TestOwnerlessTakeoverRemoved: a document lock (owner "", which no owner's deletion
// sweeps) left by a writer that died is cleared by the next writer once stale, and
// neither it nor its takeover document stays behind.
func TestOwnerlessTakeoverRemoved(t *testing.T) {
	touchPastStaleLock(t, 2*claimLease, func(claimDoc) []any { return nil })
}

// TestDeadClearersTakeoverCleared: a clearer that died between its takeover document and
// its delete of the stale claim left both; once the takeover is itself older than a
// lease, the next writer removes it, clears the stale claim and writes.
func TestDeadClearersTakeoverCleared(t *testing.T) {
	touchPastStaleLock(t, 3*claimLease, func(stale claimDoc) []any {
		return []any{claimDoc{ID: takeoverID(stale.ID, stale.At), At: storage.Now().Add(-2 * claimLease)}}
	})
}

// touchPastStaleLock makes an API key whose lock a writer that died left age ago, with
// the claim documents left beside it (left, given the stale lock), then touches the key:
// the touch must land, and no claim of the key's lock may stay behind.
func touchPastStaleLock(t *testing.T, age time.Duration, left func(stale claimDoc) []any) {
	t.Helper()
	s := openFresh(t, testenv.MongoURI(t))
	ctx := t.Context()
	if err := s.CreateAccount(ctx, storage.Account{ID: "acc-1", Username: "owner", Email: "owner@example.com"}); err != nil {
		t.Fatal(err)
	}
	k := storage.APIKey{ID: "k1", AccountID: "acc-1", Name: "ci", Hash: "hash-k1", Scopes: []string{"read"}, CreatedAt: storage.Now()}
	if err := s.CreateAPIKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	stale := claimDoc{ID: lockClaimID(s.apiKeys, k.ID), At: storage.Now().Add(-age)}
	if _, err := s.claims.InsertMany(ctx, append([]any{stale}, left(stale)...)); err != nil {
		t.Fatal(err)
	}
	if err := s.TouchAPIKey(ctx, k.ID, storage.Now(), "192.0.2.1"); err != nil {
		t.Fatalf("TouchAPIKey past a stale lock: %v", err)
	}
	if got, err := s.GetAPIKey(ctx, k.AccountID, k.ID); err != nil || got.LastUsedIP != "192.0.2.1" {
		t.Fatalf("after the touch: %+v, %v", got, err)
	}
	ids, err := findIDs(ctx, s.claims, bson.D{{Key: "_id", Value: bson.D{{Key: "$regex", Value: "^" + regexp.QuoteMeta(stale.ID)}}}})
	if err != nil || len(ids) != 0 {
		t.Fatalf("claims left of the key's lock: %v, %v; want none (lock and takeovers gone)", ids, err)
	}
}

// TestEventAppendHoldsHintLock: an append raises the position hint holding the hint's
// lock (FerretDB runs the $max as a read and a write, so two unlocked raises could leave
// the lower), and releases it after.
func TestEventAppendHoldsHintLock(t *testing.T) {
	s, peer, w := openWatched(t)
	ctx := t.Context()
	lock := lockClaimID(s.eventHeads, posHead)
	var raises, unlocked atomic.Int32
	var readErr atomic.Pointer[error]
	w.set(func(e *event.CommandStartedEvent) {
		if !commandOn(e, "update", s.eventHeads) {
			return
		}
		raises.Add(1)
		n, err := peer.Collection(s.claims.Name()).CountDocuments(ctx, bson.D{{Key: "_id", Value: lock}})
		if err != nil {
			readErr.Store(&err)
		}
		if n != 1 {
			unlocked.Add(1)
		}
	})
	for i := range 3 {
		ev := storage.EventRecord{ID: "evt-" + strconv.Itoa(i), AppID: "app-1", Type: "user.login", Payload: []byte(`{}`), At: storage.Now()}
		if err := s.AppendEvents(ctx, []storage.EventRecord{ev}); err != nil {
			t.Fatalf("AppendEvents: %v", err)
		}
	}
	w.set(nil)
	if err := readErr.Load(); err != nil {
		t.Fatalf("read the hint's lock: %v", *err)
	}
	if r, u := raises.Load(), unlocked.Load(); r < 3 || u != 0 {
		t.Fatalf("%d raises of the hints, %d of them without the hint's lock; want 3 or more, all locked", r, u)
	}
	if p, err := s.LastEventPos(ctx); err != nil || p != 3 {
		t.Fatalf("LastEventPos = %d, %v; want 3", p, err)
	}
	if n, err := s.claims.CountDocuments(ctx, bson.D{{Key: "_id", Value: lock}}); err != nil || n != 0 {
		t.Fatalf("the hint's lock after the appends = %d, %v; want released", n, err)
	}
}
