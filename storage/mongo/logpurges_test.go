package mongo

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"

	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/storagetest"
)

// TestLogPurgeCrossesChunks: a purge of more entries than a chunk (7 here, 10,000 in
// production) deletes them all, chunk by chunk, to its cutoff, entries of one instant
// across a chunk's edge included.
func TestLogPurgeCrossesChunks(t *testing.T) {
	s := openFresh(t, testenv.MongoURI(t))
	s.purgeChunk = 7
	storagetest.LogPurgeChunks(t, s, s.purgeChunk)
}

// TestLogPurgeEntrySettledBeforeItsIntentGoes: a node that stops between the intent's
// insert (which confirms the staged entry) and the entry's append leaves both; the run
// that resumes the purge appends the entry before it removes the intent (whose absence
// would make RecoverAudit drop the entry as a change never made), once.
func TestLogPurgeEntrySettledBeforeItsIntentGoes(t *testing.T) {
	s := openFresh(t, testenv.MongoURI(t))
	ctx := t.Context()
	const acc = "acc"
	if err := s.CreateApp(ctx, storage.App{ID: "a1", AccountID: acc, Name: "One"}); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertLogs(ctx, []storage.LogEntry{{ID: "l1", AppID: "a1", Event: "user.login", CreatedAt: storage.Now().Add(-48 * time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	p := storage.LogPurge{ID: "p1", AppID: "a1", Days: 1, Before: storage.Now().Add(-24 * time.Hour), AccountID: acc, CreatedAt: storage.Now(), TouchedAt: storage.Now()}
	// insertOwned up to its insert, then stop: staged, confirmed, never settled.
	sctx, d := draftCtx(ctx, acc, "a1")
	intent, err := s.stageAudit(sctx, s.logPurges(), p.ID, "")
	if err != nil || intent == nil {
		t.Fatalf("stageAudit: %v, %v", intent, err)
	}
	doc, err := withMarker(logPurgeDoc{ID: p.ID, AppID: p.AppID, Days: p.Days, Before: p.Before, AccountID: acc, CreatedAt: p.CreatedAt, TouchedAt: p.TouchedAt}, d.e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.logPurges().InsertOne(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if n, err := s.RunLogPurge(ctx, p); err != nil || n != 1 {
		t.Fatalf("RunLogPurge = %d, %v; want 1", n, err)
	}
	if n, err := s.RecoverAudit(ctx, 0); err != nil || n != 0 {
		t.Fatalf("RecoverAudit after the purge = %d, %v; want 0 (appended by the purge)", n, err)
	}
	list, err := s.AuditChain(ctx, acc, 0, 10)
	if err != nil || len(list) != 1 || list[0].ID != d.e.ID {
		t.Fatalf("chain: %v, %v; want the purge's entry once", list, err)
	}
	if left, err := s.LogPurges(ctx); err != nil || len(left) != 0 {
		t.Fatalf("LogPurges after the run: %v, %v", left, err)
	}
}

// TestLogPurgeTouchesItsIntentEachChunk: a purge in chunks moves its intent's touchedAt
// after each chunk (so a long one is not taken for a stopped node's and resumed by
// another): before each chunk's delete but the first, the stored intent is touched
// later than it was begun.
func TestLogPurgeTouchesItsIntentEachChunk(t *testing.T) {
	s, peer, w := openWatched(t)
	s.purgeChunk = 2
	ctx := t.Context()
	if err := s.CreateApp(ctx, storage.App{ID: "a1", AccountID: "acc", Name: "One"}); err != nil {
		t.Fatal(err)
	}
	old := storage.Now().Add(-time.Hour)
	var logs []storage.LogEntry
	for i := range 7 { // four deletes: three chunks of 2, then the rest
		logs = append(logs, storage.LogEntry{ID: "l" + strconv.Itoa(i), AppID: "a1", Event: "user.login", CreatedAt: old.Add(time.Duration(i) * time.Millisecond)})
	}
	if err := s.InsertLogs(ctx, logs); err != nil {
		t.Fatal(err)
	}
	p := storage.LogPurge{ID: "p1", AppID: "a1", Days: 1, Before: storage.Now(), AccountID: "acc", CreatedAt: old, TouchedAt: old}
	if err := s.BeginLogPurge(ctx, p); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []time.Time // the intent's touchedAt before each delete of entries
	var readErr error
	w.set(func(e *event.CommandStartedEvent) {
		if !commandOn(e, "delete", s.logs) {
			return
		}
		var d logPurgeDoc
		err := peer.Collection(collLogPurges).FindOne(ctx, bson.D{{Key: "_id", Value: p.ID}}).Decode(&d)
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, d.TouchedAt)
		readErr = errors.Join(readErr, err)
	})
	n, err := s.RunLogPurge(ctx, p)
	w.set(nil)
	if err != nil || n != len(logs) {
		t.Fatalf("RunLogPurge = %d, %v; want %d", n, err, len(logs))
	}
	mu.Lock()
	defer mu.Unlock()
	if readErr != nil || len(seen) != 4 {
		t.Fatalf("the intent read before each of the purge's deletes: %v, %v; want 4 reads", seen, readErr)
	}
	if !seen[0].Equal(storage.Truncate(old)) {
		t.Errorf("touchedAt before the first chunk = %v; want %v, as begun", seen[0], storage.Truncate(old))
	}
	for i, at := range seen[1:] {
		if !at.After(storage.Truncate(old)) {
			t.Errorf("touchedAt before chunk %d = %v; want it touched after chunk %d", i+2, at, i+1)
		}
	}
}
