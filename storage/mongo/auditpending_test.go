package mongo

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage"
)

type noEvents struct{}

func (noEvents) Take() []storage.EventRecord  { return nil }
func (noEvents) Stored([]storage.EventRecord) {}

// oneEntry is the edge's draft of one change.
type oneEntry struct {
	e      storage.AuditEntry
	stored bool
}

func (o *oneEntry) TakeAudit() (storage.AuditEntry, bool) { return o.e, !o.stored }
func (o *oneEntry) AuditStored()                          { o.stored = true }

func draftCtx(ctx context.Context, account, record string) (context.Context, *oneEntry) {
	d := &oneEntry{e: storage.AuditEntry{ID: uuid.NewString(), AccountID: account, ActorType: storage.ActorSession, Method: "PATCH",
		Route: "/api/apps/:appId/users/:userId", RecordType: "users", RecordID: record, Status: 200, CreatedAt: storage.Now()}}
	return storage.WithAuditOutbox(storage.WithEventOutbox(ctx, noEvents{}), d), d
}

// TestStagedAuditEntrySurvivesACrash: a node that stops between a change's write and the
// append of its entry leaves the entry staged and confirmed by the written document;
// RecoverAudit appends it, once, and the chain verifies. An entry no write confirms is
// dropped once older than claimLease, not before. A later audited change of the document
// appends the entry it finds first; a later change without audit keeps the confirmation.
func TestStagedAuditEntrySurvivesACrash(t *testing.T) {
	s := openFresh(t, testenv.MongoURI(t))
	ctx := t.Context()
	const acc = "acc"
	if err := s.CreateApp(ctx, storage.App{ID: "a1", AccountID: acc, Name: "One"}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateUser(ctx, storage.AppUser{ID: "u1", AppID: "a1", Username: "alice", Level: 1}); err != nil {
		t.Fatal(err)
	}
	// crashAfterWrite makes a change the way updateDoc does up to its write, and stops
	// there: staged, written with the marker, never settled.
	crashAfterWrite := func(level int) string {
		t.Helper()
		sctx, d := draftCtx(ctx, acc, "u1")
		intent, err := s.stageAudit(sctx, s.users, "u1", "")
		if err != nil || intent == nil {
			t.Fatalf("stageAudit: %v, %v", intent, err)
		}
		if _, err := s.users.UpdateOne(ctx, bson.D{{Key: "_id", Value: "u1"}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "level", Value: level}, {Key: auditMarker, Value: d.e.ID}}}}); err != nil {
			t.Fatal(err)
		}
		return d.e.ID
	}
	recovered := func(want int) {
		t.Helper()
		n, err := s.RecoverAudit(ctx, 0)
		if err != nil || n != want {
			t.Fatalf("RecoverAudit = %d, %v; want %d", n, err, want)
		}
	}
	chain := func(want ...string) {
		t.Helper()
		list, err := s.AuditChain(ctx, acc, 0, 100)
		if err != nil || len(list) != len(want) {
			t.Fatalf("chain: %d entries, %v; want %d", len(list), err, len(want))
		}
		for i, e := range list {
			if e.ID != want[i] || e.Hash != storage.AuditHash(e) || (i > 0 && e.PrevHash != list[i-1].Hash) {
				t.Fatalf("chain entry %d: %+v, want id %s linked", i, e, want[i])
			}
		}
	}

	first := crashAfterWrite(5)
	chain()
	recovered(1)
	recovered(0)
	chain(first)

	// Staged, never written: kept while a write could still be in flight, then dropped.
	sctx, lost := draftCtx(ctx, acc, "u1")
	if _, err := s.stageAudit(sctx, s.users, "u1", first); err != nil {
		t.Fatal(err)
	}
	recovered(0)
	if n, _ := s.auditPending.CountDocuments(ctx, bson.D{{Key: "_id", Value: lost.e.ID}}); n != 1 {
		t.Fatalf("a young unconfirmed entry was dropped")
	}
	if _, err := s.auditPending.UpdateOne(ctx, bson.D{{Key: "_id", Value: lost.e.ID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "at", Value: storage.Now().Add(-2 * claimLease)}}}}); err != nil {
		t.Fatal(err)
	}
	recovered(0)
	if n, _ := s.auditPending.CountDocuments(ctx, bson.D{}); n != 0 {
		t.Fatalf("%d staged entries left; the unconfirmed one should be dropped", n)
	}

	// A crash, then an audited change of the same user: it appends the one it finds first.
	second := crashAfterWrite(6)
	uctx, next := draftCtx(ctx, acc, "u1")
	if _, err := s.UpdateUser(uctx, "a1", "u1", func(u *storage.AppUser) error { u.Level = 7; return nil }); err != nil {
		t.Fatal(err)
	}
	if !next.stored {
		t.Fatal("the audited update did not report its entry stored")
	}
	recovered(0)
	chain(first, second, next.e.ID)

	// A crash, then a change without audit (a client's login, say): the confirmation stays.
	third := crashAfterWrite(8)
	if _, err := s.UpdateUser(ctx, "a1", "u1", func(u *storage.AppUser) error { u.Level = 9; return nil }); err != nil {
		t.Fatal(err)
	}
	u, err := s.GetUser(ctx, "a1", "u1")
	if err != nil || u.Level != 9 {
		t.Fatalf("user after the unaudited update: %+v, %v", u, err)
	}
	recovered(1)
	chain(first, second, next.e.ID, third)
}

// TestPartialUpdateKeepsAndSettlesConfirmations: the partial updates that carry an entry
// (updateAudited: an API key's edit, a passkey's rename) treat a confirmation left by a
// crash as updateDoc does: an unaudited $set (a key's use) keeps it for RecoverAudit, and
// an audited one appends it before its own, so the chain has both, once.
func TestPartialUpdateKeepsAndSettlesConfirmations(t *testing.T) {
	s := openFresh(t, testenv.MongoURI(t))
	ctx := t.Context()
	const acc = "acc"
	if err := s.CreateAccount(ctx, storage.Account{ID: acc, Username: "owner", Email: "owner@example.com", Plan: "free", Role: "user"}); err != nil {
		t.Fatal(err)
	}
	key := storage.APIKey{ID: "k1", AccountID: acc, Name: "shop", Hash: "h1", CreatedAt: storage.Now(), UpdatedAt: storage.Now()}
	if err := s.CreateAPIKey(ctx, key); err != nil {
		t.Fatal(err)
	}
	crashAfterWrite := func() string {
		t.Helper()
		sctx, d := draftCtx(ctx, acc, "k1")
		if intent, err := s.stageAudit(sctx, s.apiKeys, "k1", ""); err != nil || intent == nil {
			t.Fatalf("stageAudit: %v, %v", intent, err)
		}
		if _, err := s.apiKeys.UpdateOne(ctx, bson.D{{Key: "_id", Value: "k1"}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "name", Value: "crashed"}, {Key: auditMarker, Value: d.e.ID}}}}); err != nil {
			t.Fatal(err)
		}
		return d.e.ID
	}
	chainIDs := func() []string {
		t.Helper()
		list, err := s.AuditChain(ctx, acc, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range list {
			ids = append(ids, e.ID)
		}
		return ids
	}

	first := crashAfterWrite()
	if err := s.TouchAPIKey(ctx, "k1", storage.Now(), "203.0.113.9"); err != nil { // unaudited
		t.Fatal(err)
	}
	if n, err := s.RecoverAudit(ctx, 0); err != nil || n != 1 {
		t.Fatalf("RecoverAudit after an unaudited use = %d, %v; want 1 (the confirmation kept)", n, err)
	}

	second := crashAfterWrite()
	uctx, edit := draftCtx(ctx, acc, "k1")
	k := key
	k.Name = "edited"
	if out, err := s.UpdateAPIKey(uctx, k); err != nil || out.Name != "edited" || !edit.stored {
		t.Fatalf("audited edit: %+v, %v, stored %v", out, err, edit.stored)
	}
	if n, err := s.RecoverAudit(ctx, 0); err != nil || n != 0 {
		t.Fatalf("RecoverAudit after the audited edit = %d, %v; want 0", n, err)
	}
	if got, want := chainIDs(), []string{first, second, edit.e.ID}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("chain %v, want %v", got, want)
	}
}
