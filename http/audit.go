package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/core/apikeys"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/storage"
)

// auditRecorder stores the entries of the audit log (audit.Service): Record returns once
// the entry is stored, or with the reason it is not.
type auditRecorder interface {
	Record(ctx context.Context, e storage.AuditEntry) error
}

// maxAuditBody bounds what is read of an answer to find the id of a created record.
const maxAuditBody = 64 << 10

// auditWriteTimeout bounds the wait for an entry's write once the change is made; the
// wait does not end when the client goes away, since the change is made either way.
const auditWriteTimeout = 15 * time.Second

// heldWriter keeps the handler's answer (status, body; the headers are the real
// writer's, unsent) until the audit entry of the change is stored: nothing of a change's
// answer leaves before its entry is in the log.
type heldWriter struct {
	gin.ResponseWriter
	status int
	wrote  bool
	body   bytes.Buffer
}

func (w *heldWriter) WriteHeader(code int) {
	if code > 0 && !w.wrote {
		w.status = code
	}
}

func (w *heldWriter) WriteHeaderNow() {
	if !w.wrote {
		w.wrote = true
		if w.status == 0 {
			w.status = http.StatusOK
		}
	}
}

func (w *heldWriter) Write(p []byte) (int, error) {
	w.WriteHeaderNow()
	return w.body.Write(p)
}

func (w *heldWriter) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

func (w *heldWriter) Status() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

func (w *heldWriter) Size() int {
	if !w.wrote {
		return -1
	}
	return w.body.Len()
}

func (w *heldWriter) Written() bool { return w.wrote }

// Flush holds too: the answer goes out in release.
func (w *heldWriter) Flush() {}

// release sends the held answer through the real writer.
func (w *heldWriter) release() {
	if w.status != 0 {
		w.ResponseWriter.WriteHeader(w.status)
	}
	if w.wrote {
		w.ResponseWriter.WriteHeaderNow()
	}
	if w.body.Len() > 0 {
		_, _ = w.ResponseWriter.Write(w.body.Bytes())
	}
}

// auditChanges records every successful change (answered 2xx) through a route whose row of
// the route table audits it (auditOf: the route's Audit, by method and FullPath; its record
// type names the entry's), after requireOwner: refused requests (4xx/5xx, or stopped by
// authentication) are not recorded. The services' update
// paths hand the record they read and the one they wrote to the request's collector
// (audit.Changed); the entry holds the members that differ, secrets redacted by the
// record's own fields (audit.Diff). The answer is held until the entry is stored; when it
// cannot be, the change is answered UNAVAILABLE instead of acknowledged.
func auditChanges(rec auditRecorder, log *slog.Logger) gin.HandlerFunc {
	return auditChangesCounted(rec, log, nil)
}

// auditWritten counts the audit entries of changes by route and by how each was written:
// "with_change" (in the change's own write: storage.AuditOutbox) or "after_change" (by
// the edge after the handler: a route whose change cannot carry it yet). The second is
// what a crash between a change and its entry can separate.
func newAuditWritten(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "keyward_audit_entries_total",
		Help: "Audit entries of changes by route and by how they were written (with_change, after_change)."},
		[]string{"method", "route", "written"})
	if reg != nil {
		reg.MustRegister(c)
	}
	return c
}

// auditChangesCounted is auditChanges counting its entries in reg (nil: not exported).
func auditChangesCounted(rec auditRecorder, log *slog.Logger, reg prometheus.Registerer) gin.HandlerFunc {
	return auditChangesWritten(rec, log, newAuditWritten(reg))
}

// auditChangesWritten is auditChanges counting its entries in written (newAuditWritten),
// which the dashboard sockets' entries share.
func auditChangesWritten(rec auditRecorder, log *slog.Logger, written *prometheus.CounterVec) gin.HandlerFunc {
	now := time.Now // the entries' clock: the recorder's when it has one (audit.Service)
	if clock, ok := rec.(interface{ Now() time.Time }); ok {
		now = clock.Now
	}
	settler, _ := rec.(auditPartSettler)
	if settler != nil && !settler.KeepsParts() {
		settler = nil
	}
	return func(c *gin.Context) {
		policy := auditOf(c.Request.Method, c.FullPath())
		if !policy.Audited() {
			c.Next()
			return
		}
		ctx, changes := audit.WithChanges(c.Request.Context())
		var draft *auditDraft
		var bulk *bulkAudit
		// A bulk entry holds every record's change: written with the one write that
		// changes them all (OneWrite), else made of the parts each record's write stores
		// (auditRow), settled below.
		switch {
		case !policy.Bulk || policy.OneWrite:
			draft = newAuditDraft(c, policy, changes, now)
			ctx = storage.WithAuditOutbox(ctx, draft)
		case settler != nil:
			bulk = newBulkAudit(c, policy, now)
			ctx = context.WithValue(ctx, bulkAuditKey{}, bulk)
		}
		c.Request = c.Request.WithContext(ctx)
		held := &heldWriter{ResponseWriter: c.Writer}
		c.Writer = held
		// A panic goes up to the recovery middleware with the real writer back, so that
		// its answer is sent (the held one is dropped).
		defer func() { c.Writer = held.ResponseWriter }()
		c.Next()
		c.Writer = held.ResponseWriter
		status := held.Status()
		if bulk.partsStored() > 0 {
			// Every record changed has its part stored with it: the entry they make is
			// appended now, whatever the answer (a store lost midway answers 503 after
			// some records were changed); if this fails, RecoverAudit appends it.
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditWriteTimeout)
			_, err := settler.SettleParts(wctx, bulk.group)
			cancel()
			if err != nil {
				log.Warn("bulk audit entry left in parts, for the recovery to append", "err", err, "route", c.Request.Method+" "+c.FullPath(),
					"requestId", requestIDOf(c))
			}
			if len(changes.List()) == 0 {
				written.WithLabelValues(c.Request.Method, c.FullPath(), "with_change").Inc()
				held.release()
				return
			}
			// Some rows' writes carried no part: their changes are written after, below.
		}
		if draft.wasStored() {
			// The entry went with the change, in its transaction: the change is made
			// and so is its entry, whatever the answer says.
			if status != draft.status {
				log.Warn("audit entry stored with its change says another status than the answer", "route", c.Request.Method+" "+c.FullPath(),
					"entry", draft.status, "answer", status, "requestId", requestIDOf(c))
			}
			written.WithLabelValues(c.Request.Method, c.FullPath(), "with_change").Inc()
			held.release()
			return
		}
		if status < 200 || status >= 300 {
			held.release()
			return
		}
		var answer struct {
			Data any `json:"data"`
		}
		if held.body.Len() <= maxAuditBody {
			_ = json.Unmarshal(held.body.Bytes(), &answer)
		}
		data, _ := answer.Data.(map[string]any)
		e := auditEntryOf(c, status, data, policy)
		describe := describeChanges
		if policy.Bulk {
			describe = describeBulkChanges
		}
		if err := describe(&e, changes.List()); err != nil {
			log.Error("audit entry without its changes", "err", err, "route", e.Method+" "+e.Route)
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditWriteTimeout)
		err := rec.Record(wctx, e)
		cancel()
		if err != nil {
			log.Error("change not acknowledged: its audit entry is not stored", "err", err, "route", e.Method+" "+e.Route,
				"record", e.RecordType+"/"+e.RecordID, "requestId", requestIDOf(c))
			fail(c, core.E(core.CodeUnavailable, "the change may have been made, but its audit entry could not be stored; try again"))
			return
		}
		written.WithLabelValues(c.Request.Method, c.FullPath(), "after_change").Inc()
		held.release()
	}
}

// auditDraft is a request's audit entry offered to the change's store call
// (storage.AuditOutbox): SQLite appends it in the change's own transaction, MongoDB
// stages it before the change's write and confirms it by that write, so an acknowledged
// change has its entry and a change not made has none. Otherwise (a change made without
// events.Change, a creation that hands over no record) auditChanges appends it after the
// handler, before the answer. A bulk route of many writes has a bulkAudit instead, whose
// rows store their parts of the entry (audit_bulk.go).
type auditDraft struct {
	base     storage.AuditEntry // who, from where, on which route and record
	status   int                // the route's success status (its OpenAPI operation)
	creation bool               // the record is being created: audit.Created names it
	bulk     bool               // one entry of many records (describeBulkChanges), named by the app
	changes  *audit.Changes
	now      func() time.Time

	mu     sync.Mutex
	stored bool
}

func newAuditDraft(c *gin.Context, policy Audit, changes *audit.Changes, now func() time.Time) *auditDraft {
	status := http.StatusOK
	if r := routeIndex.byKey[c.Request.Method+" "+c.FullPath()]; r != nil && r.op.status != 0 {
		status = r.op.status
	}
	e := auditEntryOf(c, status, map[string]any{}, policy)
	// The record is named in the path, or is the app of a change to the app itself or to
	// the app's records as a whole (OfApp: a logs purge); else it is being created, and
	// the creation's store call names it (audit.Created) when it takes the draft.
	creation := false
	if !recordInPath(c) && !policy.Bulk && !policy.OfApp && !accountCommand(policy) &&
		(policy.Record != "apps" || e.AppID == "" || policy.Action == AuditCreate) {
		e.RecordID, creation = "", true
	}
	return &auditDraft{base: e, status: status, creation: creation, bulk: policy.Bulk, changes: changes, now: now}
}

// accountCommand reports whether the route changes the signed-in account itself (its
// password, API key, two-factor settings, plan): the record is that account.
func accountCommand(policy Audit) bool {
	return policy.Record == "account" && policy.Action != AuditCreate
}

// recordInPath reports whether the path names a record besides the app.
func recordInPath(c *gin.Context) bool {
	for _, p := range c.Params {
		if p.Key != "appId" {
			return true
		}
	}
	return false
}

// TakeAudit builds the entry from the records the change's updater handed over so far.
func (d *auditDraft) TakeAudit() (storage.AuditEntry, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stored {
		return storage.AuditEntry{}, false
	}
	e := d.base
	list := d.changes.List()
	if e.RecordID == "" {
		if !d.creation || !namesCreated(&e, list) {
			return storage.AuditEntry{}, false
		}
	}
	e.ID, e.CreatedAt = uuid.NewString(), storage.Truncate(d.now())
	describe := describeChanges
	if d.bulk {
		describe = describeBulkChanges
	}
	if err := describe(&e, list); err != nil {
		return storage.AuditEntry{}, false // the edge writes it after, and logs why
	}
	return e, true
}

// namesCreated names in e the record a creation stores (audit.Created), as the answer
// would: the one record created, else (several: a batch of keys or tokens) the app. It
// reports false when the creation has handed over no record yet.
func namesCreated(e *storage.AuditEntry, list []audit.Change) bool {
	var ids []string
	for _, ch := range list {
		if ch.Creation() {
			ids = append(ids, recordIDOf(ch.After))
		}
	}
	switch {
	case len(ids) == 1 && ids[0] != "":
		e.RecordID = ids[0]
	case len(ids) > 1 && e.AppID != "":
		e.RecordID = e.AppID
	default:
		return false
	}
	if e.RecordType == "apps" && e.AppID == "" {
		e.AppID = e.RecordID // a created app
	}
	return true
}

func (d *auditDraft) AuditStored() {
	d.mu.Lock()
	d.stored = true
	d.mu.Unlock()
}

func (d *auditDraft) wasStored() bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stored
}

// describeChanges puts into e the members that changed: of the record e names when the
// request changed several, else of the first. Without a handed-over record (a creation,
// a deletion, an action on no record) e has no before and after.
func describeChanges(e *storage.AuditEntry, list []audit.Change) error {
	if len(list) == 0 {
		return nil
	}
	pick, named := list[0], false
	for _, ch := range list {
		if recordIDOf(ch.After) == e.RecordID {
			pick, named = ch, true
			break
		}
	}
	if !named && pick.Creation() && len(list) > 1 {
		return nil // a batch created (keys, tokens): the entry names the app, the answer the records
	}
	before, after, err := audit.Diff(pick.Before, pick.After)
	if err != nil {
		return err
	}
	e.Before, e.After = before, after
	return nil
}

// recordIDOf answers the ID field of a record ("" without one).
func recordIDOf(v any) string {
	r := reflect.Indirect(reflect.ValueOf(v))
	if r.Kind() != reflect.Struct {
		return ""
	}
	if f := r.FieldByName("ID"); f.IsValid() && f.Kind() == reflect.String {
		return f.String()
	}
	return ""
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// auditEntryOf describes the request: who, from where, on what.
func auditEntryOf(c *gin.Context, status int, data map[string]any, policy Audit) storage.AuditEntry {
	p := principal(c)
	e := storage.AuditEntry{AccountID: p.Account.ID, AppID: c.Param("appId"), IP: c.ClientIP(), Method: c.Request.Method,
		Route: c.FullPath(), Path: c.Request.URL.Path, Status: status, RecordType: policy.Record}
	switch k, _ := c.Get(ctxAPIKey); {
	case k != nil:
		key := k.(*apikeys.Key)
		e.ActorType, e.ActorID, e.ActorName = storage.ActorAPIKey, key.ID, key.Name
	case p.ViaAPIKey:
		e.ActorType, e.ActorName = storage.ActorAccountKey, p.Account.Username
	default:
		e.ActorType, e.ActorID, e.ActorName = storage.ActorSession, p.TokenID, p.Account.Username
	}
	// The record is the deepest named in the path, else the created one, else the app.
	for i := len(c.Params) - 1; i >= 0 && e.RecordID == ""; i-- {
		if c.Params[i].Key != "appId" {
			e.RecordID = c.Params[i].Value
		}
	}
	if e.RecordID == "" {
		if id, ok := data["id"].(string); ok {
			e.RecordID = id
		} else if accountCommand(policy) {
			e.RecordID = p.Account.ID
		} else {
			e.RecordID = e.AppID
		}
	}
	if e.RecordType == "apps" && e.AppID == "" {
		e.AppID = e.RecordID // a created app
	}
	return e
}

// socketMethod is the method of audit entries made by a dashboard socket's actions: the
// socket, not a REST call, is their source.
const socketMethod = "WS"

// socketAuditor records the changes an owner makes over the dashboard socket opened by
// c (kick, ban, command, push_json, chat), as the REST twins of these actions are: who is
// the socket's session (p), from the IP that opened it; the record is the user acted on,
// and after holds the action and its reason or command name. It runs after the action,
// off the socket's actor, and waits for the entry's write; written counts it
// (keyward_audit_entries_total, method WS, after_change).
//
// A kick, a chat line, a push and a command are written after the action, the honest
// choice: they are deliveries to live sockets over the cluster bus, not stored changes,
// so there is no write for an entry to ride, and a socket has no answer to hold back
// until its entry is stored. A crash between the two loses the entry of a delivery
// already made. A ban writes (the user's banned flag, through the apps service with its
// user.ban event): its entry rides that write (WithEntry puts it in the job's context,
// as the edge's draft is for a REST route; with_change), as the REST ban's does.
func socketAuditor(rec auditRecorder, log *slog.Logger, written *prometheus.CounterVec, c *gin.Context, p accounts.Principal) socketAudit {
	now := time.Now // the entries' clock: the recorder's when it has one (audit.Service)
	if clock, ok := rec.(interface{ Now() time.Time }); ok {
		now = clock.Now
	}
	return socketAudit{rec: rec, log: log, written: written, now: now, base: storage.AuditEntry{AccountID: p.Account.ID, AppID: c.Param("appId"), IP: c.ClientIP(), Method: socketMethod,
		Route: c.FullPath(), Path: c.Request.URL.Path, Status: http.StatusSwitchingProtocols, RecordType: "realtime",
		ActorType: storage.ActorSession, ActorID: p.TokenID, ActorName: p.Account.Username}}
}

// socketAudit is a dashboard socket's dashboard.ChangeAuditor (given through
// actors/sockets): base is what its entries share.
type socketAudit struct {
	rec     auditRecorder
	log     *slog.Logger
	written *prometheus.CounterVec // nil: not counted
	now     func() time.Time
	base    storage.AuditEntry
}

// entry is the entry of a socket action: the user acted on, the action and its details.
func (a socketAudit) entry(action, userID string, details map[string]any) storage.AuditEntry {
	e := a.base
	e.RecordID = userID
	after := map[string]any{"action": action}
	for k, v := range details {
		if s, isStr := v.(string); !isStr || s != "" {
			after[k] = v
		}
	}
	e.After = jsonOf(after)
	return e
}

// Audit writes the entry of an action made (after it).
func (a socketAudit) Audit(action, userID string, details map[string]any) {
	e := a.entry(action, userID, details)
	ctx, cancel := context.WithTimeout(context.Background(), auditWriteTimeout)
	defer cancel()
	if err := a.rec.Record(ctx, e); err != nil {
		a.log.Error("dashboard socket action not in the audit log", "err", err, "action", action, "app", e.AppID, "user", userID)
		return
	}
	if a.written != nil {
		a.written.WithLabelValues(socketMethod, e.Route, "after_change").Inc()
	}
}

// WithEntry answers ctx carrying the action's entry for the store write that makes its
// change to take (storage.AuditOutbox: on SQLite in its transaction, on MongoDB staged
// and confirmed by it).
func (a socketAudit) WithEntry(ctx context.Context, action, userID string, details map[string]any) context.Context {
	return storage.WithAuditOutbox(ctx, &socketDraft{entry: a.entry(action, userID, details), now: a.now})
}

// Audited counts the entry the action's write took, or writes it now when none did.
func (a socketAudit) Audited(ctx context.Context, action, userID string, details map[string]any) {
	if d, ok := storage.AuditOutboxFrom(ctx).(*socketDraft); ok && d.wasStored() {
		if a.written != nil {
			a.written.WithLabelValues(socketMethod, a.base.Route, "with_change").Inc()
		}
		return
	}
	a.Audit(action, userID, details)
}

// socketDraft is a socket action's entry offered to the write of its change.
type socketDraft struct {
	entry storage.AuditEntry
	now   func() time.Time

	mu     sync.Mutex
	stored bool
}

func (d *socketDraft) TakeAudit() (storage.AuditEntry, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stored {
		return storage.AuditEntry{}, false
	}
	e := d.entry
	e.ID, e.CreatedAt = uuid.NewString(), storage.Truncate(d.now())
	return e, true
}

func (d *socketDraft) AuditStored() {
	d.mu.Lock()
	d.stored = true
	d.mu.Unlock()
}

func (d *socketDraft) wasStored() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stored
}

// auditHandlers serve the audit log: an owner's own, and any account's for administrators.
type auditHandlers struct{ svc *audit.Service }

func (h *auditHandlers) list(c *gin.Context, accountID string) {
	page, err := pageOf(c)
	if err != nil {
		fail(c, err)
		return
	}
	q := storage.AuditQuery{AccountID: accountID, AppID: c.Query("appId"), ActorID: c.Query("actorId"), RecordType: c.Query("recordType"), Page: page}
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"from", &q.Since}, {"to", &q.Until}} {
		if v := c.Query(f.name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				fail(c, core.Invalid(f.name, "%s must be an RFC 3339 time", f.name))
				return
			}
			*f.dst = t
		}
	}
	list, total, err := h.svc.List(c.Request.Context(), q)
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusOK, gin.H{"entries": mapSlice(list, viewOfAudit), "total": total, "limit": page.Limit, "offset": page.Offset})
}

func (h *auditHandlers) own(c *gin.Context) { h.list(c, principal(c).Account.ID) }

func (h *auditHandlers) any(c *gin.Context) { h.list(c, c.Query("accountId")) }

type auditView struct {
	ID         string          `json:"id"`
	AccountID  string          `json:"accountId"`
	AppID      string          `json:"appId"`
	Actor      gin.H           `json:"actor"`
	IP         string          `json:"ip"`
	Method     string          `json:"method"`
	Route      string          `json:"route"`
	Path       string          `json:"path"`
	RecordType string          `json:"recordType"`
	RecordID   string          `json:"recordId"`
	Status     int             `json:"status"`
	Before     json.RawMessage `json:"before"`
	After      json.RawMessage `json:"after"`
	CreatedAt  *string         `json:"createdAt"`
}

func viewOfAudit(e storage.AuditEntry) auditView {
	raw := func(s string) json.RawMessage {
		if s == "" {
			return json.RawMessage("null")
		}
		return json.RawMessage(s)
	}
	return auditView{ID: e.ID, AccountID: e.AccountID, AppID: e.AppID,
		Actor: gin.H{"type": e.ActorType, "id": e.ActorID, "name": e.ActorName}, IP: e.IP, Method: e.Method, Route: e.Route,
		Path: e.Path, RecordType: e.RecordType, RecordID: e.RecordID, Status: e.Status, Before: raw(e.Before), After: raw(e.After),
		CreatedAt: stamp(e.CreatedAt)}
}
