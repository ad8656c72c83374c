package storagetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/keyward/keyward/storage"
)

// auditWithChangeTests: a change's audit entry is written with the change
// (storage.AuditOutbox), on every engine: in the change's transaction (SQLite) or staged
// before its write and confirmed by it (MongoDB).
var auditWithChangeTests = []subtest{
	{"AuditWithTheChange", testAuditWithTheChange},
	{"AuditWithTheChangeConcurrent", testAuditWithTheChangeConcurrent},
	{"AuditWithTheChangeOwnerRecords", testAuditWithTheChangeOwnerRecords},
	{"AuditWithTheChangePartialUpdatesConcurrent", testAuditWithTheChangePartialUpdatesConcurrent},
}

// noEvents is the change's event outbox with no events: it marks the change's own store
// call (the one that takes the audit draft).
type noEvents struct{}

func (noEvents) Take() []storage.EventRecord  { return nil }
func (noEvents) Stored([]storage.EventRecord) {}

// draftOutbox hands one entry to the change's store call, as the HTTP edge's draft does.
type draftOutbox struct {
	mu     sync.Mutex
	entry  storage.AuditEntry
	taken  int
	stored bool
}

func (d *draftOutbox) TakeAudit() (storage.AuditEntry, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stored {
		return storage.AuditEntry{}, false
	}
	d.taken++
	e := d.entry
	e.ID = uuid.NewString() // a retried write takes a new one, as the edge's draft does
	return e, true
}

func (d *draftOutbox) AuditStored() {
	d.mu.Lock()
	d.stored = true
	d.mu.Unlock()
}

func (d *draftOutbox) wasStored() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stored
}

// withDraft answers ctx carrying the outboxes of a change whose entry names record.
func withDraft(ctx context.Context, account, app, recordType, record string) (context.Context, *draftOutbox) {
	d := &draftOutbox{entry: auditEntry(account, app, "tok", recordType, ms(0))}
	d.entry.RecordID = record
	return storage.WithAuditOutbox(storage.WithEventOutbox(ctx, noEvents{}), d), d
}

// recoverAudit runs the engine's recovery of staged entries, if it has one: nothing must
// be left to recover after acknowledged changes.
func recoverAudit(t *testing.T, s storage.Store) {
	t.Helper()
	if r, ok := s.(storage.AuditRecoverer); ok {
		if n, err := r.RecoverAudit(t.Context(), 0); err != nil || n != 0 {
			t.Fatalf("RecoverAudit after settled changes = %d, %v; want 0 (each entry appended once, by its change)", n, err)
		}
	}
}

// testAuditWithTheChange: an update, a creation of one record and of a batch each store
// their entry with the change (reported stored, in the chain once); an updater that fails
// and a creation refused as a duplicate store none.
func testAuditWithTheChange(t *testing.T, s storage.Store) {
	ctx := t.Context()
	acc := storage.Account{ID: uniq("acc")}
	app := mustCreateApp(t, s, minimalApp(acc.ID, uniq("app")))
	u := storage.AppUser{ID: uniq("u"), AppID: app.ID, Username: uniq("alice"), Level: 1, CreatedAt: ms(0), UpdatedAt: ms(0)}

	cctx, created := withDraft(ctx, acc.ID, app.ID, "users", u.ID)
	if err := s.CreateUser(cctx, u); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	uctx, updated := withDraft(ctx, acc.ID, app.ID, "users", u.ID)
	if _, err := s.UpdateUser(uctx, app.ID, u.ID, func(u *storage.AppUser) error { u.Level = 7; return nil }); err != nil {
		t.Fatalf("UpdateUser: %v", err)
	}
	fctx, failed := withDraft(ctx, acc.ID, app.ID, "users", u.ID)
	refused := errors.New("refused by the updater")
	if _, err := s.UpdateUser(fctx, app.ID, u.ID, func(*storage.AppUser) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("UpdateUser with a failing updater: %v", err)
	}
	dctx, duplicate := withDraft(ctx, acc.ID, app.ID, "users", u.ID)
	if err := s.CreateUser(dctx, u); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("CreateUser again: %v, want ErrConflict", err)
	}
	ls := []storage.License{{ID: uniq("l"), AppID: app.ID, Key: uniq("K"), CreatedAt: ms(0)}, {ID: uniq("l"), AppID: app.ID, Key: uniq("K"), CreatedAt: ms(0)}}
	bctx, batch := withDraft(ctx, acc.ID, app.ID, "licenses", app.ID)
	if err := s.CreateLicenses(bctx, ls); err != nil {
		t.Fatalf("CreateLicenses: %v", err)
	}
	a := minimalApp(acc.ID, uniq("made"))
	actx, madeApp := withDraft(ctx, acc.ID, a.ID, "apps", a.ID)
	if err := s.CreateApp(actx, a); err != nil {
		t.Fatalf("CreateApp: %v", err)
	}
	for name, d := range map[string]*draftOutbox{"creation": created, "update": updated, "batch": batch, "app": madeApp} {
		if !d.wasStored() {
			t.Errorf("%s: the entry was not reported stored with the change", name)
		}
	}
	if failed.wasStored() || duplicate.wasStored() {
		t.Errorf("a refused change reported its entry stored (updater %v, duplicate %v)", failed.wasStored(), duplicate.wasStored())
	}
	recoverAudit(t, s)
	chain := checkChain(t, s, acc.ID, 1, 4)
	want := []string{"users/" + u.ID, "users/" + u.ID, "licenses/" + app.ID, "apps/" + a.ID}
	for i, e := range chain {
		if got := e.RecordType + "/" + e.RecordID; got != want[i] {
			t.Errorf("entry %d names %s, want %s", i+1, got, want[i])
		}
	}
}

// testAuditWithTheChangeConcurrent: changes of one account made at once (as on two
// nodes: nothing in the engine serializes them on MongoDB) make one chain, each entry
// once.
func testAuditWithTheChangeConcurrent(t *testing.T, s storage.Store) {
	ctx := t.Context()
	acc := storage.Account{ID: uniq("acc")}
	app := mustCreateApp(t, s, minimalApp(acc.ID, uniq("app")))
	const users, each = 4, 5
	ids := make([]string, users)
	for i := range ids {
		ids[i] = uniq("u")
		if err := s.CreateUser(ctx, storage.AppUser{ID: ids[i], AppID: app.ID, Username: uniq("user"), Level: 1, CreatedAt: ms(0), UpdatedAt: ms(0)}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, users*each)
	for w := range users * 2 { // two writers per user: updates of one record race too
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range (each + 1) / 2 {
				id := ids[w%users]
				cctx, d := withDraft(ctx, acc.ID, app.ID, "users", id)
				if _, err := s.UpdateUser(cctx, app.ID, id, func(u *storage.AppUser) error { u.Level++; return nil }); err != nil {
					errs <- err
					return
				}
				if !d.wasStored() {
					errs <- fmt.Errorf("update of %s: entry not reported stored", id)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	recoverAudit(t, s)
	n := int64(users * 2 * ((each + 1) / 2))
	chain := checkChain(t, s, acc.ID, 1, n)
	seen := map[string]bool{}
	for _, e := range chain {
		if seen[e.ID] {
			t.Fatalf("entry %s twice in the chain", e.ID)
		}
		seen[e.ID] = true
	}
}
