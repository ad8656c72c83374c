package mongo

import (
	"testing"
	"time"

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
