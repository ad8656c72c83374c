package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/core/apikeys"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/storage"
)

// auditRecorder takes the entries of the audit log (audit.Service; writes off the path).
type auditRecorder interface {
	Record(e storage.AuditEntry)
}

// maxAuditBody bounds what is read of a body or an answer to find changed members.
const maxAuditBody = 64 << 10

// redacted replaces the value of a secret member.
const redacted = "[redacted]"

// secretMember reports a member whose value must never be recorded.
func secretMember(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"password", "secret", "token", "apikey", "hash"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	switch n {
	case "key", "code", "twofactorcode", "maskedkey":
		return true
	}
	return false
}

// redact answers v with every secret member, at any depth, replaced.
func redact(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if secretMember(k) {
				out[k] = redacted
				continue
			}
			out[k] = redact(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = redact(val)
		}
		return out
	default:
		return v
	}
}

// teeWriter keeps the start of the answer, to read the id of a created record and the
// stored values of an update.
type teeWriter struct {
	gin.ResponseWriter
	buf bytes.Buffer
}

func (w *teeWriter) Write(p []byte) (int, error) {
	if room := maxAuditBody - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(room, len(p))])
	}
	return w.ResponseWriter.Write(p)
}

func (w *teeWriter) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

// errReader answers err after the bytes read before it, so a handler sees a body error
// (too large, timed out) as it would have.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// auditChanges records every successful change (answered 2xx) through a route whose row
// of the route table audits it (auditOf: its Audit policy, by method and FullPath), after
// requireOwner: refused requests (4xx/5xx, or stopped by authentication) are not recorded.
// For an AuditUpdate the changed members are recorded before (read through the route's
// GET twin, in process) and after (the answer's values, else the body's). Secrets are
// redacted.
func auditChanges(rec auditRecorder, router http.Handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		policy := auditOf(c.Request.Method, c.FullPath())
		if !policy.Audited() {
			c.Next()
			return
		}
		var body map[string]any
		if strings.HasPrefix(c.ContentType(), "application/json") && c.Request.Body != nil && c.Request.ContentLength <= maxAuditBody {
			raw, err := io.ReadAll(io.LimitReader(c.Request.Body, maxAuditBody+1))
			var rest io.Reader = c.Request.Body
			if err != nil {
				rest = errReader{err}
			}
			c.Request.Body = io.NopCloser(io.MultiReader(bytes.NewReader(raw), rest))
			_ = json.Unmarshal(raw, &body)
		}
		update := policy.Action == AuditUpdate
		var before map[string]any
		if update && len(body) > 0 {
			if _, hasGet := scopeOf(http.MethodGet, c.FullPath()); hasGet {
				before = readCurrent(c, router)
			}
		}
		tee := &teeWriter{ResponseWriter: c.Writer}
		c.Writer = tee
		c.Next()
		c.Writer = tee.ResponseWriter
		status := tee.Status()
		if status < 200 || status >= 300 {
			return
		}
		var answer struct {
			Data any `json:"data"`
		}
		_ = json.Unmarshal(tee.buf.Bytes(), &answer)
		data, _ := answer.Data.(map[string]any)
		e := auditEntryOf(c, status, data, policy)
		if update && len(body) > 0 {
			b, a := map[string]any{}, map[string]any{}
			for k, v := range body {
				if cur, found := before[k]; found {
					b[k] = cur
				}
				if stored, found := data[k]; found {
					a[k] = stored
				} else {
					a[k] = v
				}
			}
			e.Before, e.After = jsonOf(redact(b)), jsonOf(redact(a))
		}
		rec.Record(e)
	}
}

// readCurrent reads the record through the route's GET twin with the caller's credentials,
// answering the data object (nil when it cannot be read, e.g. a key without the read scope).
func readCurrent(c *gin.Context, router http.Handler) map[string]any {
	req, err := http.NewRequestWithContext(c.Request.Context(), http.MethodGet, c.Request.URL.Path, nil)
	if err != nil {
		return nil
	}
	for _, h := range []string{"Authorization", "X-API-Key", "X-Forwarded-For"} {
		if v := c.GetHeader(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	req.RemoteAddr = c.Request.RemoteAddr
	w := httptest.NewRecorder()
	router.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		return nil
	}
	var answer struct {
		Data map[string]any `json:"data"`
	}
	if json.Unmarshal(w.Body.Bytes(), &answer) != nil {
		return nil
	}
	return answer.Data
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
// and after holds the action and its reason or command name.
func socketAuditor(rec auditRecorder, c *gin.Context, p accounts.Principal) func(action, userID string, details map[string]any) {
	base := storage.AuditEntry{AccountID: p.Account.ID, AppID: c.Param("appId"), IP: c.ClientIP(), Method: socketMethod,
		Route: c.FullPath(), Path: c.Request.URL.Path, Status: http.StatusSwitchingProtocols, RecordType: "realtime",
		ActorType: storage.ActorSession, ActorID: p.TokenID, ActorName: p.Account.Username}
	return func(action, userID string, details map[string]any) {
		e := base
		e.RecordID = userID
		after := map[string]any{"action": action}
		for k, v := range details {
			if s, isStr := v.(string); !isStr || s != "" {
				after[k] = v
			}
		}
		e.After = jsonOf(redact(after))
		rec.Record(e)
	}
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
