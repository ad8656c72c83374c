package httpapi

import (
	"context"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/storage"
)

// The audit entry of a bulk request whose records are each changed in a write of their
// own (users bulk and import, licenses add-time; issue 21). It is one entry holding every
// changed record, as before, but it is no longer written after the changes: each record's
// write stores that record's part with it (storage.AuditParts: SQLite in the write's
// transaction, MongoDB staged and confirmed by the write), and once the handler is done
// the parts are merged into the one entry (storage.AuditPartSettler). A crash between two
// records' writes leaves the parts of the records changed, which the engine's
// RecoverAudit merges at the next start: a changed record never goes without its entry.

// auditPartSettler is the audit recorder that can settle a request's parts (audit.Service).
type auditPartSettler interface {
	KeepsParts() bool
	SettleParts(ctx context.Context, group string) (bool, error)
}

// bulkAudit is a bulk request's entry as its parts share it: who, from where, on which
// route; the group names the entry.
type bulkAudit struct {
	base  storage.AuditEntry
	group string
	now   func() time.Time

	mu     sync.Mutex
	stored int // parts stored with their change
}

type bulkAuditKey struct{}

func newBulkAudit(c *gin.Context, policy Audit, now func() time.Time) *bulkAudit {
	status := http.StatusOK
	if r := routeIndex.byKey[c.Request.Method+" "+c.FullPath()]; r != nil && r.op.status != 0 {
		status = r.op.status
	}
	return &bulkAudit{base: auditEntryOf(c, status, map[string]any{}, policy), group: uuid.NewString(), now: now}
}

func (b *bulkAudit) partsStored() int {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stored
}

// auditRow answers the context of one record's change in a bulk request: the record's own
// collector (audit.Changed, Track, Created) and its part of the request's entry, taken by
// the record's write. end is called with the row's outcome: a row whose write did not store
// its part hands what it collected to the request's collector, which the edge writes after
// the handler (an action whose write carries no part); a row that failed hands nothing.
// Outside a bulk request whose parts are kept (bulkAudit), every row's changes go to the
// request's collector when the row succeeds.
func auditRow(ctx context.Context) (rctx context.Context, end func(error)) {
	rctx, changes := audit.WithChanges(ctx)
	var p *auditPart
	if b, _ := ctx.Value(bulkAuditKey{}).(*bulkAudit); b != nil {
		p = &auditPart{bulk: b, changes: changes}
		rctx = storage.WithAuditOutbox(rctx, p)
	}
	return rctx, func(err error) {
		if err != nil || p.wasStored() {
			return
		}
		for _, ch := range changes.List() {
			audit.Changed(ctx, ch.Before, ch.After)
		}
	}
}

// auditPart is one record's part of a bulk entry (storage.AuditParts).
type auditPart struct {
	bulk    *bulkAudit
	changes *audit.Changes

	mu     sync.Mutex
	stored bool
}

func (p *auditPart) TakeAudit() (storage.AuditEntry, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stored {
		return storage.AuditEntry{}, false
	}
	list := madeOf(p.changes.List())
	if len(list) == 0 {
		return storage.AuditEntry{}, false
	}
	e := p.bulk.base
	e.ID, e.CreatedAt = uuid.NewString(), storage.Truncate(p.bulk.now())
	if err := describeBulkChanges(&e, list); err != nil {
		return storage.AuditEntry{}, false // the row hands its changes to the edge, which logs why
	}
	return e, true
}

func (p *auditPart) AuditGroup() string { return p.bulk.group }

func (p *auditPart) AuditStored() {
	p.mu.Lock()
	first := !p.stored
	p.stored = true
	p.mu.Unlock()
	if first {
		p.bulk.mu.Lock()
		p.bulk.stored++
		p.bulk.mu.Unlock()
	}
}

func (p *auditPart) wasStored() bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stored
}

// madeOf answers list with each created record (audit.Created) as a bulk entry holds it:
// its id, nothing before, its name (a user's) or key (a license's) after (audit.Made).
func madeOf(list []audit.Change) []audit.Change {
	out := make([]audit.Change, len(list))
	for i, ch := range list {
		if !ch.Creation() {
			out[i] = ch
			continue
		}
		id := recordIDOf(ch.After)
		out[i] = audit.Change{Before: audit.Made{ID: id}, After: audit.Made{ID: id, Name: nameOf(ch.After)}}
	}
	return out
}

// nameOf answers the name a record is known by: its Username, Key or Name ("" without).
func nameOf(v any) string {
	r := reflect.Indirect(reflect.ValueOf(v))
	if r.Kind() != reflect.Struct {
		return ""
	}
	for _, name := range []string{"Username", "Key", "Name"} {
		if f := r.FieldByName(name); f.IsValid() && f.Kind() == reflect.String {
			return f.String()
		}
	}
	return ""
}
