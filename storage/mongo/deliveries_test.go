package mongo

import (
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage"
)

// seedDeliveryParents writes an account, an app and an integration for the deliveries of
// the tests below.
func seedDeliveryParents(t *testing.T, s *Store) {
	t.Helper()
	ctx := t.Context()
	now := storage.Now()
	if err := s.CreateAccount(ctx, storage.Account{ID: "acc", Username: "o", Email: "o@example.com", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateApp(ctx, storage.App{ID: "app", AccountID: "acc", Name: "A", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateIntegration(ctx, storage.Integration{ID: "int", AppID: "app", Name: "i", Kind: "CUSTOM", Enabled: true,
		CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
}

func countIn(t *testing.T, s *Store, coll string, id string) int64 {
	t.Helper()
	n, err := s.db.Collection(coll).CountDocuments(t.Context(), bson.D{{Key: "_id", Value: id}})
	if err != nil {
		t.Fatalf("count %s in %s: %v", id, coll, err)
	}
	return n
}

var errPeekMongo = errors.New("read only")

func peek(t *testing.T, s *Store, id string) storage.Delivery {
	t.Helper()
	var got storage.Delivery
	if _, err := s.UpdateDelivery(t.Context(), id, func(d *storage.Delivery) error {
		got = *d
		return errPeekMongo
	}); !errors.Is(err, errPeekMongo) {
		t.Fatalf("read delivery %s: %v", id, err)
	}
	return got
}

// TestMoveStoppedBetweenItsWrites: a finish that wrote the history copy and died before
// deleting the queue copy leaves both. Readers answer the history's; when the dead
// worker's lease ends the claim does not send it again and removes the queue copy.
func TestMoveStoppedBetweenItsWrites(t *testing.T) {
	s := openFresh(t, testenv.MongoURI(t))
	ctx := t.Context()
	seedDeliveryParents(t, s)
	now := storage.Now()
	d := storage.Delivery{ID: "d1", AppID: "app", IntegrationID: "int", EventID: "e1", Event: "user.login", State: storage.DeliveryPending,
		NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateDeliveries(ctx, []storage.Delivery{d}); err != nil {
		t.Fatal(err)
	}
	c, err := s.ClaimDeliveries(ctx, "dead-worker", now, time.Second, 1)
	if err != nil || len(c) != 1 {
		t.Fatalf("ClaimDeliveries = (%v, %v), want d1", c, err)
	}
	// What moveDelivery writes first: the finished copy in the history, one version on.
	var q deliveryDoc
	if err := s.deliveries.FindOne(ctx, bson.D{{Key: "_id", Value: "d1"}}).Decode(&q); err != nil {
		t.Fatal(err)
	}
	done := c[0]
	done.State, done.Attempts, done.LeaseOwner, done.LeaseUntil, done.UpdatedAt = storage.DeliveryDelivered, 1, "", time.Time{}, now
	if _, err := s.history.InsertOne(ctx, toDeliveryDoc(done, q.Version+1)); err != nil {
		t.Fatal(err)
	}

	if got := peek(t, s, "d1"); got.State != storage.DeliveryDelivered || got.Attempts != 1 {
		t.Errorf("read with both copies = %+v, want the history's (delivered, 1 attempt)", got)
	}
	if n := countIn(t, s, collDeliveries, "d1"); n != 0 {
		t.Errorf("queue copy after a read: %d, want it removed", n)
	}

	// Again, met by a claim once the dead worker's lease ended.
	if _, err := s.deliveries.InsertOne(ctx, q); err != nil {
		t.Fatal(err)
	}
	c, err = s.ClaimDeliveries(ctx, "w2", now.Add(time.Minute), time.Minute, 10)
	if err != nil || len(c) != 0 {
		t.Errorf("ClaimDeliveries after the lease = (%v, %v), want none (it was delivered)", recIDsOf(c), err)
	}
	if n := countIn(t, s, collDeliveries, "d1"); n != 0 {
		t.Errorf("queue copy after a claim: %d, want it removed", n)
	}
	if n := countIn(t, s, collHistory, "d1"); n != 1 {
		t.Errorf("history copies: %d, want 1", n)
	}
}

// TestRequeueStoppedBetweenItsWrites: a redelivery that wrote the queue copy and died
// before deleting the history copy leaves both; the queue's (newer) wins, is claimed and
// its finish replaces the history copy.
func TestRequeueStoppedBetweenItsWrites(t *testing.T) {
	s, d := openWithFailedDelivery(t)
	ctx := t.Context()
	now := d.UpdatedAt
	var h deliveryDoc
	if err := s.history.FindOne(ctx, bson.D{{Key: "_id", Value: "d1"}}).Decode(&h); err != nil {
		t.Fatalf("finished delivery not in the history: %v", err)
	}
	again := d
	again.State, again.NextAttemptAt = storage.DeliveryPending, now
	if _, err := s.deliveries.InsertOne(ctx, toDeliveryDoc(again, h.Version+1)); err != nil {
		t.Fatal(err)
	}
	if got := peek(t, s, "d1"); got.State != storage.DeliveryPending {
		t.Errorf("read with both copies = %+v, want the queue's (pending)", got)
	}
	c, err := s.ClaimDeliveries(ctx, "w", now, time.Minute, 10)
	if err != nil || len(c) != 1 {
		t.Fatalf("ClaimDeliveries = (%v, %v), want d1", recIDsOf(c), err)
	}
	// ClaimDeliveries read the claimed copy's lease: with the history copy older, the
	// queue's still wins.
	if got := peek(t, s, "d1"); got.LeaseOwner != "w" {
		t.Errorf("read of the claimed delivery = %+v, want the queue's (leased to w)", got)
	}
	if _, err := s.UpdateDelivery(ctx, "d1", func(x *storage.Delivery) error {
		x.State, x.Attempts, x.LeaseOwner, x.LeaseUntil = storage.DeliveryDelivered, 4, "", time.Time{}
		return nil
	}); err != nil {
		t.Fatalf("finish: %v", err)
	}
	if got := peek(t, s, "d1"); got.State != storage.DeliveryDelivered || got.Attempts != 4 {
		t.Errorf("after the finish = %+v, want delivered after 4 attempts", got)
	}
	if q, hn := countIn(t, s, collDeliveries, "d1"), countIn(t, s, collHistory, "d1"); q != 0 || hn != 1 {
		t.Errorf("after the finish: %d in the queue, %d in the history; want 0 and 1", q, hn)
	}
}

// TestMoveFinishedDeliveriesOfAnOlderVersion: an older version kept finished deliveries in
// the queue; MoveFinishedDeliveries moves them in bounded rounds and leaves the pending.
func TestMoveFinishedDeliveriesOfAnOlderVersion(t *testing.T) {
	s := openFresh(t, testenv.MongoURI(t))
	ctx := t.Context()
	seedDeliveryParents(t, s)
	now := storage.Now()
	var docs []any
	for i, state := range []string{storage.DeliveryDelivered, storage.DeliveryFailed, storage.DeliveryPending, storage.DeliveryDelivered, storage.DeliveryDelivered} {
		d := storage.Delivery{ID: "d" + string(rune('0'+i)), AppID: "app", IntegrationID: "int", State: state, CreatedAt: now, UpdatedAt: now,
			Sent: []byte("sent")}
		docs = append(docs, toDeliveryDoc(d, newVersion()))
	}
	if _, err := s.deliveries.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	total := 0
	for round := 0; round < 5; round++ {
		n, err := s.MoveFinishedDeliveries(ctx, 2)
		if err != nil {
			t.Fatalf("MoveFinishedDeliveries: %v", err)
		}
		if n > 2 {
			t.Fatalf("MoveFinishedDeliveries(2) moved %d", n)
		}
		total += n
		if n < 2 {
			break
		}
	}
	if total != 4 {
		t.Errorf("moved %d, want 4", total)
	}
	for _, id := range []string{"d0", "d1", "d3", "d4"} {
		if q, h := countIn(t, s, collDeliveries, id), countIn(t, s, collHistory, id); q != 0 || h != 1 {
			t.Errorf("%s: %d in the queue, %d in the history; want 0 and 1", id, q, h)
		}
		if got := peek(t, s, id); string(got.Sent) != "sent" {
			t.Errorf("%s after the move = %+v, want it as it was", id, got)
		}
	}
	if q := countIn(t, s, collDeliveries, "d2"); q != 1 {
		t.Errorf("pending d2: %d in the queue, want 1", q)
	}
}

func recIDsOf(ds []storage.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

// TestRedeliveryEntryConfirmedAcrossMoves: a redelivery's audit entry (audit.Own) rides
// its write (the queue insert that takes the delivery back from the history), and a
// crash between that write and the entry's append leaves it confirmed even after the
// delivery was claimed and finished (moved to the history again): every write keeps the
// marker, and RecoverAudit reads both collections.
func TestRedeliveryEntryConfirmedAcrossMoves(t *testing.T) {
	s, _ := openWithFailedDelivery(t)
	ctx := t.Context()
	const acc = "acc"
	chain := func(want ...string) {
		t.Helper()
		list, err := s.AuditChain(ctx, acc, 0, 100)
		if err != nil || len(list) != len(want) {
			t.Fatalf("chain: %d entries, %v; want %d", len(list), err, len(want))
		}
		for i, e := range list {
			if e.ID != want[i] {
				t.Fatalf("chain entry %d: %s, want %s", i, e.ID, want[i])
			}
		}
	}
	finish := func() {
		t.Helper()
		c, err := s.ClaimDeliveries(ctx, "w", storage.Now().Add(time.Second), time.Minute, 10)
		if err != nil || len(c) != 1 {
			t.Fatalf("ClaimDeliveries = (%v, %v), want d1", recIDsOf(c), err)
		}
		if _, err := s.UpdateDelivery(ctx, "d1", func(x *storage.Delivery) error {
			x.State, x.Attempts, x.LeaseOwner, x.LeaseUntil = storage.DeliveryDelivered, x.Attempts+1, "", time.Time{}
			return nil
		}); err != nil {
			t.Fatalf("finish: %v", err)
		}
	}
	redeliver := func(x *storage.Delivery) error {
		x.State, x.NextAttemptAt, x.LeaseOwner, x.LeaseUntil = storage.DeliveryPending, storage.Now(), "", time.Time{}
		return nil
	}

	// The redelivery's own call: the entry is stored with it and appended before it returns.
	sctx, first := draftCtx(ctx, acc, "d1")
	if _, err := s.UpdateDelivery(sctx, "d1", redeliver); err != nil {
		t.Fatal(err)
	}
	if !first.stored {
		t.Fatal("the redelivery did not report its entry stored")
	}
	chain(first.e.ID)
	finish()

	// A crash after the queue insert (marked), before the append: the delivery is then
	// claimed and finished, back in the history, still marked; RecoverAudit appends it once.
	var h deliveryDoc
	if err := s.history.FindOne(ctx, bson.D{{Key: "_id", Value: "d1"}}).Decode(&h); err != nil {
		t.Fatalf("finished delivery not in the history: %v", err)
	}
	cctx, second := draftCtx(ctx, acc, "d1")
	intent, err := s.stageAudit(cctx, s.deliveries, "d1", h.AuditPending)
	if err != nil || intent == nil {
		t.Fatalf("stageAudit: %v, %v", intent, err)
	}
	again := h.delivery()
	_ = redeliver(&again)
	doc := toDeliveryDoc(again, h.Version+1)
	doc.AuditPending = second.e.ID
	if _, err := s.deliveries.InsertOne(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if _, err := s.history.DeleteOne(ctx, bson.D{{Key: "_id", Value: "d1"}}); err != nil {
		t.Fatal(err)
	}
	finish()
	if q, hn := countIn(t, s, collDeliveries, "d1"), countIn(t, s, collHistory, "d1"); q != 0 || hn != 1 {
		t.Fatalf("after the finish: %d in the queue, %d in the history; want 0 and 1", q, hn)
	}
	n, err := s.RecoverAudit(ctx, 0)
	if err != nil || n != 1 {
		t.Fatalf("RecoverAudit = %d, %v; want 1", n, err)
	}
	chain(first.e.ID, second.e.ID)
}

// openWithFailedDelivery opens a fresh store holding the delivery parents and one delivery,
// d1, failed for good after three attempts (so in the history).
func openWithFailedDelivery(t *testing.T) (*Store, storage.Delivery) {
	t.Helper()
	s := openFresh(t, testenv.MongoURI(t))
	seedDeliveryParents(t, s)
	now := storage.Now()
	d := storage.Delivery{ID: "d1", AppID: "app", IntegrationID: "int", EventID: "e1", Event: "user.login", State: storage.DeliveryFailed,
		Attempts: 3, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateDeliveries(t.Context(), []storage.Delivery{d}); err != nil {
		t.Fatal(err)
	}
	return s, d
}
