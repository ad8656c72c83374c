package mongo

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"

	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage"
)

// bulkDraftCtx is the edge's draft of a bulk deletion of the app's licenses: it names
// the app and says what was asked (its after, without the count the engine sets).
func bulkDraftCtx(ctx context.Context, account, appID, after string) (context.Context, *oneEntry) {
	d := &oneEntry{e: storage.AuditEntry{ID: uuid.NewString(), AccountID: account, AppID: appID, ActorType: storage.ActorSession, Method: "POST",
		Route: "/api/apps/:appId/licenses/bulk-delete", RecordType: "licenses", RecordID: appID, Status: 200, After: after, CreatedAt: storage.Now()}}
	return storage.WithAuditOutbox(storage.WithEventOutbox(ctx, noEvents{}), d), d
}

// updateStoppedAfterWrite makes an audited update of license id the way updateDoc does up
// to its write, and stops there: staged, written with its marker, never settled. It
// answers the update's draft.
func updateStoppedAfterWrite(t *testing.T, s *Store, account, id string) *oneEntry {
	t.Helper()
	ctx := t.Context()
	uctx, update := draftCtx(ctx, account, id)
	if _, err := s.stageAudit(uctx, s.licenses, id, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.licenses.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "level", Value: 4}, {Key: auditMarker, Value: update.e.ID}}}}); err != nil {
		t.Fatal(err)
	}
	return update
}

// TestBulkDeleteAuditSurvivesACrash: a bulk deletion of licenses stages its entry with
// the ids it means to delete before any deletion. A node stopped after the deletions and
// before the append leaves it staged: RecoverAudit appends it once, counting the listed
// licenses gone. One stopped before any deletion leaves it unconfirmed: kept while young,
// then dropped, and the licenses stay. Deletions that run to their end (by filter, by
// ids) append their entry before they answer, a license's unsettled confirmation (a crash
// after its update) first, and leave nothing staged.
func TestBulkDeleteAuditSurvivesACrash(t *testing.T) {
	s := openFresh(t, testenv.MongoURI(t))
	ctx := t.Context()
	const acc, app = "acc", "a1"
	if err := s.CreateApp(ctx, storage.App{ID: app, AccountID: acc, Name: "One"}); err != nil {
		t.Fatal(err)
	}
	var ls []storage.License
	for i, id := range []string{"l1", "l2", "l3", "l4", "l5"} {
		ls = append(ls, storage.License{ID: id, AppID: app, Key: "KEY-" + id, Level: 1, Banned: i >= 3, CreatedAt: storage.Now()})
	}
	if err := s.CreateLicenses(ctx, ls); err != nil {
		t.Fatal(err)
	}
	recovered := func(want int) {
		t.Helper()
		if n, err := s.RecoverAudit(ctx, 0); err != nil || n != want {
			t.Fatalf("RecoverAudit = %d, %v; want %d", n, err, want)
		}
	}
	var chainIDs []string
	chain := func(wantCount ...int) {
		t.Helper()
		list, err := s.AuditChain(ctx, acc, 0, 100)
		if err != nil || len(list) != len(chainIDs) {
			t.Fatalf("chain: %d entries, %v; want %d", len(list), err, len(chainIDs))
		}
		for i, e := range list {
			if e.ID != chainIDs[i] || e.Hash != storage.AuditHash(e) || (i > 0 && e.PrevHash != list[i-1].Hash) {
				t.Fatalf("chain entry %d: %+v, want id %s linked", i, e, chainIDs[i])
			}
			if i < len(wantCount) && wantCount[i] >= 0 {
				var after map[string]any
				if err := json.Unmarshal([]byte(e.After), &after); err != nil || after["count"] != float64(wantCount[i]) {
					t.Fatalf("chain entry %d: after %q, want count %d", i, e.After, wantCount[i])
				}
			}
		}
	}
	pending := func(want int64) {
		t.Helper()
		if n, err := s.auditPending.CountDocuments(ctx, bson.D{}); err != nil || n != want {
			t.Fatalf("staged entries: %d, %v; want %d", n, err, want)
		}
	}

	// Staged, deletions done, stopped before the append: recovered once, counted.
	sctx, crashed := bulkDraftCtx(ctx, acc, app, `{"ids":["l1","l2","gone"]}`)
	intent, err := s.stageDeleteMany(sctx, s.licenses, app, []string{"l1", "l2", "gone"})
	if err != nil || intent == nil {
		t.Fatalf("stageDeleteMany: %v, %v", intent, err)
	}
	if _, err := s.licenses.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: []string{"l1", "l2"}}}}}); err != nil {
		t.Fatal(err)
	}
	chain()
	recovered(1)
	recovered(0)
	chainIDs = append(chainIDs, crashed.e.ID)
	chain(2)
	pending(0)

	// Staged, stopped before any deletion: kept while a deletion could be in flight, then
	// dropped; nothing appended, nothing deleted.
	sctx, lost := bulkDraftCtx(ctx, acc, app, `{"filter":"banned"}`)
	if intent, err := s.stageDeleteMany(sctx, s.licenses, app, []string{"l4", "l5"}); err != nil || intent == nil {
		t.Fatalf("stageDeleteMany: %v, %v", intent, err)
	}
	recovered(0)
	pending(1)
	if _, err := s.auditPending.UpdateOne(ctx, bson.D{{Key: "_id", Value: lost.e.ID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "at", Value: storage.Now().Add(-2 * claimLease)}}}}); err != nil {
		t.Fatal(err)
	}
	recovered(0)
	pending(0)
	chain(2)
	if n, err := s.CountLicenses(ctx, app); err != nil || n != 3 {
		t.Fatalf("licenses: %d, %v; want 3", n, err)
	}

	// A deletion by filter run to its end: appended before it answers.
	fctx, byFilter := bulkDraftCtx(ctx, acc, app, `{"filter":"banned"}`)
	if n, err := s.DeleteLicensesWhere(fctx, app, storage.LicenseFilterBanned, storage.Now()); err != nil || n != 2 {
		t.Fatalf("DeleteLicensesWhere = %d, %v; want 2", n, err)
	}
	if !byFilter.stored {
		t.Fatal("the deletion by filter did not report its entry stored")
	}
	chainIDs = append(chainIDs, byFilter.e.ID)
	chain(2, 2)
	pending(0)

	// An update of l3 stopped after its write leaves its confirmation in the license: the
	// deletion by ids appends that entry first, then its own.
	update := updateStoppedAfterWrite(t, s, acc, "l3")
	ictx, byIDs := bulkDraftCtx(ctx, acc, app, `{"ids":["l3"]}`)
	if n, err := s.DeleteLicenses(ictx, app, []string{"l3"}); err != nil || n != 1 {
		t.Fatalf("DeleteLicenses = %d, %v; want 1", n, err)
	}
	if !byIDs.stored {
		t.Fatal("the deletion by ids did not report its entry stored")
	}
	chainIDs = append(chainIDs, update.e.ID, byIDs.e.ID)
	chain(2, 2, -1, 1)
	pending(0)
	recovered(0)

	// A deletion of nothing stages nothing: the edge writes its entry after.
	nctx, none := bulkDraftCtx(ctx, acc, app, `{"ids":["l3"]}`)
	if n, err := s.DeleteLicenses(nctx, app, []string{"l3"}); err != nil || n != 0 {
		t.Fatalf("DeleteLicenses again = %d, %v; want 0", n, err)
	}
	if none.stored {
		t.Fatal("a deletion of nothing reported an entry stored")
	}
	pending(0)
}

// appWithLicenses creates app, of account acc, with licenses ids (banned or not).
func appWithLicenses(t *testing.T, s *Store, acc, app string, banned bool, ids ...string) {
	t.Helper()
	if err := s.CreateApp(t.Context(), storage.App{ID: app, AccountID: acc, Name: "One"}); err != nil {
		t.Fatal(err)
	}
	ls := make([]storage.License, len(ids))
	for i, id := range ids {
		ls[i] = storage.License{ID: id, AppID: app, Key: "KEY-" + id, Level: 1, Banned: banned, CreatedAt: storage.Now()}
	}
	if err := s.CreateLicenses(t.Context(), ls); err != nil {
		t.Fatal(err)
	}
}

// TestRecoverBulkDeleteCountsOnce: RecoverAudit judges a staged bulk deletion and counts
// its gone documents with one count per chunk of the listed ids (not one to confirm it and
// another to count), and appends it once with that count.
func TestRecoverBulkDeleteCountsOnce(t *testing.T) {
	s, _, w := openWatched(t)
	ctx := t.Context()
	const acc, app = "acc", "a1"
	appWithLicenses(t, s, acc, app, false, "l1", "l2", "l3")
	sctx, crashed := bulkDraftCtx(ctx, acc, app, `{"ids":["l1","l2","l3"]}`)
	if intent, err := s.stageDeleteMany(sctx, s.licenses, app, []string{"l1", "l2", "l3"}); err != nil || intent == nil {
		t.Fatalf("stageDeleteMany: %v, %v", intent, err)
	}
	if _, err := s.licenses.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: []string{"l1", "l2"}}}}}); err != nil {
		t.Fatal(err)
	}
	var counts atomic.Int32 // CountDocuments is an aggregate
	w.set(func(e *event.CommandStartedEvent) {
		if commandOn(e, "aggregate", s.licenses) {
			counts.Add(1)
		}
	})
	n, err := s.RecoverAudit(ctx, 0)
	w.set(nil)
	if err != nil || n != 1 {
		t.Fatalf("RecoverAudit = %d, %v; want 1", n, err)
	}
	if c := counts.Load(); c != 1 {
		t.Errorf("RecoverAudit counted the licenses %d times; want once", c)
	}
	list, err := s.AuditChain(ctx, acc, 0, 10)
	if err != nil || len(list) != 1 || list[0].ID != crashed.e.ID {
		t.Fatalf("chain: %v, %v; want the deletion's entry once", list, err)
	}
	var after map[string]any
	if err := json.Unmarshal([]byte(list[0].After), &after); err != nil || after["count"] != float64(2) {
		t.Fatalf("the entry's after %q; want count 2", list[0].After)
	}
}

// TestBulkDeleteOfNothingLeftAbandonsItsEntry: a deletion by filter whose licenses all
// stopped matching between its read and their deletion (unbanned meanwhile) deletes
// none: its staged entry is removed (the change was not made), nothing is appended and
// the entry is not reported stored (the edge writes it). It reads the matching licenses
// once, before it stages.
func TestBulkDeleteOfNothingLeftAbandonsItsEntry(t *testing.T) {
	s, peer, w := openWatched(t)
	ctx := t.Context()
	const acc, app = "acc", "a1"
	appWithLicenses(t, s, acc, app, true, "l1", "l2")
	var mu sync.Mutex
	staged, reads := 0, 0
	var unbanErr error
	w.set(func(e *event.CommandStartedEvent) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case staged == 0 && commandOn(e, "find", s.licenses):
			reads++
		case staged == 0 && commandOn(e, "insert", s.auditPending):
			staged++
			// Both unbanned (as UpdateLicense writes them) while the entry is staged.
			_, unbanErr = peer.Collection(s.licenses.Name()).UpdateMany(ctx, bson.D{{Key: "appId", Value: app}},
				bson.D{{Key: "$set", Value: bson.D{{Key: "banned", Value: false}}}, {Key: "$inc", Value: bson.D{{Key: "version", Value: 1}}}})
		}
	})
	fctx, d := bulkDraftCtx(ctx, acc, app, `{"filter":"banned"}`)
	n, err := s.DeleteLicensesWhere(fctx, app, storage.LicenseFilterBanned, storage.Now())
	w.set(nil)
	if err != nil || n != 0 {
		t.Fatalf("DeleteLicensesWhere = %d, %v; want 0", n, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if staged != 1 || unbanErr != nil {
		t.Fatalf("staged %d entries, unban: %v; want 1 staged", staged, unbanErr)
	}
	if reads != 1 {
		t.Errorf("the licenses were read %d times before the entry was staged; want once", reads)
	}
	if left, err := s.auditPending.CountDocuments(ctx, bson.D{}); err != nil || left != 0 {
		t.Fatalf("staged entries after a deletion of nothing: %d, %v; want 0", left, err)
	}
	if d.stored {
		t.Fatal("a deletion of nothing reported its entry stored")
	}
	if list, err := s.AuditChain(ctx, acc, 0, 10); err != nil || len(list) != 0 {
		t.Fatalf("chain: %v, %v; want empty", list, err)
	}
	if c, err := s.CountLicenses(ctx, app); err != nil || c != 2 {
		t.Fatalf("licenses: %d, %v; want both kept", c, err)
	}
}

// TestDeleteWhereSettlesMarkersFirst: a deletion by filter settles the unsettled
// confirmation a license carries (an update stopped after its write) before it removes
// the license, so the update's entry is in the chain before the deletion's.
func TestDeleteWhereSettlesMarkersFirst(t *testing.T) {
	s := openFresh(t, testenv.MongoURI(t))
	ctx := t.Context()
	const acc, app = "acc", "a1"
	appWithLicenses(t, s, acc, app, true, "l1")
	update := updateStoppedAfterWrite(t, s, acc, "l1")
	fctx, del := bulkDraftCtx(ctx, acc, app, `{"filter":"banned"}`)
	if n, err := s.DeleteLicensesWhere(fctx, app, storage.LicenseFilterBanned, storage.Now()); err != nil || n != 1 {
		t.Fatalf("DeleteLicensesWhere = %d, %v; want 1", n, err)
	}
	list, err := s.AuditChain(ctx, acc, 0, 10)
	if err != nil || len(list) != 2 || list[0].ID != update.e.ID || list[1].ID != del.e.ID {
		t.Fatalf("chain: %v, %v; want the update's entry, then the deletion's", list, err)
	}
	if left, err := s.auditPending.CountDocuments(ctx, bson.D{}); err != nil || left != 0 {
		t.Fatalf("staged entries: %d, %v; want 0", left, err)
	}
}
