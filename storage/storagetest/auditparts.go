package storagetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/storage"
)

// auditPartsTests: the one audit entry of a bulk request whose records are each changed in
// a write of their own (storage.AuditParts) is stored in parts with the changes and
// appended once, merged (storage.AuditPartSettler); the parts a stopped node left are
// appended by RecoverAudit, so no changed record is without its entry.
var auditPartsTests = []subtest{
	{"AuditPartsSettled", testAuditPartsSettled},
	{"AuditPartsRecovered", testAuditPartsRecovered},
	{"AuditPartThenChange", testAuditPartThenChange},
}

// partOutbox is one record's part of a bulk entry, as the HTTP edge's auditRow hands it.
type partOutbox struct {
	draftOutbox
	group string
}

func (p *partOutbox) AuditGroup() string { return p.group }

// withPart answers one record's part of the bulk request group's entry: the record's
// before and after, keyed by its id.
func withPart(account, app, group, record string) *partOutbox {
	p := &partOutbox{group: group}
	p.entry = auditEntry(account, app, "tok", "users", ms(0))
	p.entry.RecordID = app
	p.entry.Before, p.entry.After = `{"`+record+`":{"level":1}}`, `{"`+record+`":{"level":2}}`
	return p
}

// bulkUsers makes n users of app and answers their ids.
func bulkUsers(t *testing.T, s storage.Store, app string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uniq("u")
		if err := s.CreateUser(t.Context(), storage.AppUser{ID: ids[i], AppID: app, Username: uniq("user"), Level: 1, CreatedAt: ms(0), UpdatedAt: ms(0)}); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// changeInParts changes each user of ids (an update, the last a deletion) with its part
// of group's entry, as a bulk request does.
func changeInParts(t *testing.T, s storage.Store, acc, app, group string, ids []string) {
	t.Helper()
	for i, id := range ids {
		p := withPart(acc, app, group, id)
		ctx := storage.WithAuditOutbox(storage.WithEventOutbox(t.Context(), noEvents{}), p)
		var err error
		if i == len(ids)-1 && i > 0 {
			err = s.DeleteUser(ctx, app, id)
		} else {
			_, err = s.UpdateUser(ctx, app, id, func(u *storage.AppUser) error { u.Level = 2; return nil })
		}
		if err != nil {
			t.Fatalf("change %s: %v", id, err)
		}
		if !p.wasStored() {
			t.Fatalf("change %s: its part was not reported stored with it", id)
		}
	}
}

// entryRecords answers the record ids an entry's before and after hold.
func entryRecords(t *testing.T, e storage.AuditEntry) (before, after map[string]json.RawMessage) {
	t.Helper()
	if err := json.Unmarshal([]byte(e.Before), &before); err != nil {
		t.Fatalf("entry's before %q: %v", e.Before, err)
	}
	if err := json.Unmarshal([]byte(e.After), &after); err != nil {
		t.Fatalf("entry's after %q: %v", e.After, err)
	}
	return before, after
}

// testAuditPartsSettled: parts stored with their changes are not in the chain until the
// request settles them; then they are one entry holding every record, appended once; a
// part whose change was refused is not stored.
func testAuditPartsSettled(t *testing.T, s storage.Store) {
	settler, ok := s.(storage.AuditPartSettler)
	if !ok {
		t.Fatal("the engine keeps no parts of bulk entries (storage.AuditPartSettler)")
	}
	ctx := t.Context()
	acc := storage.Account{ID: uniq("acc")}
	app := mustCreateApp(t, s, minimalApp(acc.ID, uniq("app")))
	ids := bulkUsers(t, s, app.ID, 3)
	group := uuid.NewString()
	refused := withPart(acc.ID, app.ID, group, ids[0])
	rctx := storage.WithAuditOutbox(storage.WithEventOutbox(ctx, noEvents{}), refused)
	if _, err := s.UpdateUser(rctx, app.ID, ids[0], func(*storage.AppUser) error { return storage.ErrConflict }); err == nil {
		t.Fatal("a refusing updater changed the user")
	}
	if refused.wasStored() {
		t.Fatal("the part of a refused change was reported stored")
	}
	changeInParts(t, s, acc.ID, app.ID, group, ids)
	if chain, err := s.AuditChain(ctx, acc.ID, 0, 10); err != nil || len(chain) != 0 {
		t.Fatalf("parts in the chain before their request settled them: %d, %v", len(chain), err)
	}
	if settled, err := settler.SettleAuditParts(ctx, group); err != nil || !settled {
		t.Fatalf("SettleAuditParts = %v, %v; want true", settled, err)
	}
	if settled, err := settler.SettleAuditParts(ctx, group); err != nil || settled {
		t.Fatalf("SettleAuditParts again = %v, %v; want false (appended once)", settled, err)
	}
	recoverAudit(t, s)
	e := checkChain(t, s, acc.ID, 1, 1)[0]
	before, after := entryRecords(t, e)
	if len(before) != 3 || len(after) != 3 || e.RecordID != app.ID || e.Route != "/api/apps/:appId/users/:userId" {
		t.Fatalf("the bulk entry: %+v", e)
	}
	for _, id := range ids {
		if string(after[id]) != `{"level":2}` {
			t.Errorf("the entry's after of %s: %s", id, after[id])
		}
	}
}

// testAuditPartsRecovered: a node stopped in the middle of a bulk request (two records
// changed with their parts, the request never settled) leaves no changed record without
// its entry: RecoverAudit appends the one entry of the parts, once, sparing the parts
// younger than minAge (their request may go on).
func testAuditPartsRecovered(t *testing.T, s storage.Store) {
	r, ok := s.(storage.AuditRecoverer)
	if !ok {
		t.Fatal("the engine recovers no parts of bulk entries (storage.AuditRecoverer)")
	}
	ctx := t.Context()
	acc := storage.Account{ID: uniq("acc")}
	app := mustCreateApp(t, s, minimalApp(acc.ID, uniq("app")))
	ids := bulkUsers(t, s, app.ID, 3)
	changeInParts(t, s, acc.ID, app.ID, uuid.NewString(), ids[:2])
	if n, err := r.RecoverAudit(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("RecoverAudit of parts younger than minAge = %d, %v; want 0", n, err)
	}
	if n, err := r.RecoverAudit(ctx, 0); err != nil || n != 1 {
		t.Fatalf("RecoverAudit = %d, %v; want 1 (the stopped request's entry)", n, err)
	}
	recoverAudit(t, s)
	e := checkChain(t, s, acc.ID, 1, 1)[0]
	if _, after := entryRecords(t, e); len(after) != 2 || after[ids[0]] == nil || after[ids[1]] == nil {
		t.Fatalf("the recovered entry: %+v", e)
	}
}

// testAuditPartThenChange: a record changed by a bulk request may be changed again, with
// its own entry, before the request settles its parts (a long add-time): the change does
// not wait for the request, and the part stays confirmed (MongoDB: the change replaces the
// document's mark of the part, and vouches for the part first).
func testAuditPartThenChange(t *testing.T, s storage.Store) {
	settler := s.(storage.AuditPartSettler)
	ctx := t.Context()
	acc := storage.Account{ID: uniq("acc")}
	app := mustCreateApp(t, s, minimalApp(acc.ID, uniq("app")))
	ids := bulkUsers(t, s, app.ID, 1)
	group := uuid.NewString()
	changeInParts(t, s, acc.ID, app.ID, group, ids)
	cctx, d := withDraft(ctx, acc.ID, app.ID, "users", ids[0])
	if _, err := s.UpdateUser(cctx, app.ID, ids[0], func(u *storage.AppUser) error { u.Level = 3; return nil }); err != nil || !d.wasStored() {
		t.Fatalf("a change of a record whose bulk part is not settled yet: %v (entry stored %v)", err, d.wasStored())
	}
	if settled, err := settler.SettleAuditParts(ctx, group); err != nil || !settled {
		t.Fatalf("SettleAuditParts after a later change of its record = %v, %v; want true", settled, err)
	}
	recoverAudit(t, s)
	chain := checkChain(t, s, acc.ID, 1, 2)
	if _, after := entryRecords(t, chain[1]); chain[0].RecordID != ids[0] || after[ids[0]] == nil {
		t.Fatalf("the change's entry then the bulk entry: %+v", chain)
	}
}
