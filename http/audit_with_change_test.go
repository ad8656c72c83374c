package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/keyward/keyward/internal/softauthn"
	ts "github.com/keyward/keyward/internal/testserver"
)

// auditWrittenCounts reads keyward_audit_entries_total from /metrics: "METHOD route how"
// (how: with_change, after_change) to count.
func auditWrittenCounts(t *testing.T, s *ts.Server) map[string]int {
	t.Helper()
	resp, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	line := regexp.MustCompile(`(?m)^keyward_audit_entries_total\{method="([A-Z]+)",route="([^"]+)",written="([a-z_]+)"\} (\d+)$`)
	out := map[string]int{}
	for _, m := range line.FindAllStringSubmatch(string(text), -1) {
		n, _ := strconv.Atoi(m[4])
		out[m[1]+" "+m[2]+" "+m[3]] = n
	}
	return out
}

// TestAuditWrittenWithTheChange: on both engine pairs, the audit entries of updates and
// of creations (one record, a batch, an app) are written by the change's own store call
// (in its SQLite transaction; on MongoDB staged before its write and confirmed by it),
// never by the edge after the handler, which a crash could separate from the change. A
// creation's entry names the record its store call made and holds its members.
func TestAuditWrittenWithTheChange(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		setPlan(t, s, o.Username, "pro")
		a := api{t, s, o.Token}
		appID, _ := a.createApp("With the change")
		base := "/api/apps/" + appID
		r := a.do("POST", base+"/users", map[string]any{"username": "alice", "password": "pw-123456", "level": 2})
		expectOK(t, r, http.StatusCreated)
		userID := r.Data()["id"].(string)
		expectOK(t, a.do("PATCH", base+"/users/"+userID, map[string]any{"level": 3}), http.StatusOK)
		expectOK(t, a.do("PATCH", base, map[string]any{"description": "changed"}), http.StatusOK)
		v := a.do("POST", base+"/variables", map[string]any{"key": "motd", "value": "hello"})
		expectOK(t, v, http.StatusCreated)
		expectOK(t, a.do("PATCH", base+"/variables/"+v.Data()["id"].(string), map[string]any{"value": "bye"}), http.StatusOK)
		ls := a.do("POST", base+"/licenses", map[string]any{"count": 3})
		expectOK(t, ls, http.StatusCreated)
		expectOK(t, a.do("POST", base+"/tokens", map[string]any{"count": 2}), http.StatusCreated)
		other := a.do("POST", base+"/users", map[string]any{"username": "bob", "password": "pw-123456"})
		expectOK(t, other, http.StatusCreated)
		expectOK(t, a.do("DELETE", base+"/users/"+other.Data()["id"].(string), nil), http.StatusOK)
		expectOK(t, a.do("DELETE", base+"/licenses/"+ls.Data()["licenses"].([]any)[0].(map[string]any)["id"].(string), nil), http.StatusOK)
		expectOK(t, a.do("DELETE", base+"/variables/"+v.Data()["id"].(string), nil), http.StatusOK)
		expect(t, a.do("DELETE", base+"/variables/"+v.Data()["id"].(string), nil), http.StatusNotFound, "NOT_FOUND")
		// A bulk route whose records go in one write: its one entry goes with it.
		expectOK(t, a.do("POST", base+"/licenses/import", map[string]any{"licenses": []map[string]any{{"key": "IMPORTED-0001"}, {"key": "IMPORTED-0002"}}}), http.StatusOK)

		got := auditWrittenCounts(t, s)
		for route, n := range map[string]int{"POST /api/apps": 1, "POST /api/apps/:appId/users": 2, "PATCH /api/apps/:appId/users/:userId": 1,
			"PATCH /api/apps/:appId": 1, "POST /api/apps/:appId/variables": 1, "PATCH /api/apps/:appId/variables/:varId": 1,
			"POST /api/apps/:appId/licenses": 1, "POST /api/apps/:appId/tokens": 1, "DELETE /api/apps/:appId/users/:userId": 1,
			"DELETE /api/apps/:appId/licenses/:licenseId": 1, "DELETE /api/apps/:appId/variables/:varId": 1,
			"POST /api/apps/:appId/licenses/import": 1} {
			if got[route+" with_change"] != n || got[route+" after_change"] != 0 {
				t.Errorf("%s: %d entries with the change, %d after it; want %d and 0", route, got[route+" with_change"], got[route+" after_change"], n)
			}
		}

		all := auditEntries(t, s, o.Token, "/api/audit?recordType=users", 4)
		made := all[3]
		if made["recordId"] != userID || made["method"] != "POST" || made["before"] != nil {
			t.Fatalf("user creation entry: %v", made)
		}
		if after, _ := made["after"].(map[string]any); after["username"] != "alice" || after["level"] != float64(2) ||
			(after["passwordHash"] != nil && after["passwordHash"] != "[redacted]") {
			t.Fatalf("user creation entry's after: %v", made["after"])
		}
		licenses := auditEntries(t, s, o.Token, "/api/audit?recordType=licenses", 3)
		imported := licenses[0]
		if after, _ := imported["after"].(map[string]any); imported["recordId"] != appID || len(after) != 2 {
			t.Fatalf("import entry: %v", imported)
		} else {
			for _, v := range after {
				if name := v.(map[string]any)["name"]; name != "IMPORTED-0001" && name != "IMPORTED-0002" {
					t.Fatalf("import entry's after: %v", after)
				}
			}
		}
		batch := licenses[2]
		if batch["recordId"] != appID {
			t.Fatalf("a batch of keys names the app: %v", batch)
		}
		app := auditEntries(t, s, o.Token, "/api/audit?recordType=apps", 2)[1]
		if app["recordId"] != appID || app["appId"] != appID {
			t.Fatalf("app creation entry: %v", app)
		}
	})
}

// entryOf answers the one entry of route among entries (it fails without exactly one).
func entryOf(t *testing.T, entries []map[string]any, method, route string) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, e := range entries {
		if e["method"] == method && e["route"] == route {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s %s: %d entries, want 1: %v", method, route, len(found), entries)
	}
	return found[0]
}

// TestAuditWithTheChangeOfOwnerRecords: on both engine pairs, the changes that publish
// no event of their own (API keys, passkeys, socket hooks, stores and their product
// mappings, the account's settings, a sign-out, an email change's request, a token's
// edit) and file uploads write their audit entry with the
// change (keyward_audit_entries_total says with_change, never after_change); a hook's
// change stores its app.hooks_change event before it is answered, and a client's HWID
// reset request its user.reset_requested.
func TestAuditWithTheChangeOfOwnerRecords(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		env := ts.Env(t, e)
		env["KEYWARD_PUBLIC_URL"] = passkeyOrigin
		s := ts.StartEnv(t, env)
		o := newOwner(t, s)
		setPlan(t, s, o.Username, "business")
		a := api{t, s, o.Token}
		appID, secret := a.createApp("Owner records")
		base := "/api/apps/" + appID

		f := uploadFile(a, appID, "tool", "1.0.0", []byte("payload"))
		expectOK(t, a.do("PATCH", base+"/files/"+f["id"].(string), map[string]any{"name": "tool2"}), http.StatusOK)
		expectOK(t, a.do("DELETE", base+"/files/"+f["id"].(string), nil), http.StatusOK)

		head := headPos(t, s)
		r := a.do("POST", base+"/ws/hooks", map[string]any{"name": "h", "event": "level_up", "actions": []any{map[string]any{"type": "respond", "message": "hi"}}})
		expectOK(t, r, http.StatusCreated)
		hook := r.Data()["id"].(string)
		expectOK(t, a.do("PATCH", base+"/ws/hooks/"+hook, map[string]any{"name": "h2"}), http.StatusOK)
		expectOK(t, a.do("DELETE", base+"/ws/hooks/"+hook, nil), http.StatusOK)
		// Read at once: each change's event was stored before its answer.
		if got := ofType(eventsAfter(t, s, appID, head), "app.hooks_change"); len(got) != 3 {
			t.Fatalf("app.hooks_change events stored with three hook changes: %d, want 3", len(got))
		}

		r = a.do("POST", base+"/stores", map[string]any{"provider": "stripe", "name": "S", "secret": "whsec_kept_secret"})
		expectOK(t, r, http.StatusCreated)
		store := r.Data()["id"].(string)
		expectOK(t, a.do("PATCH", base+"/stores/"+store, map[string]any{"name": "S2"}), http.StatusOK)
		r = a.do("POST", base+"/stores/"+store+"/products", map[string]any{"productId": "prod_1"})
		expectOK(t, r, http.StatusOK)
		expectOK(t, a.do("DELETE", base+"/stores/"+store+"/products/"+r.Data()["id"].(string), nil), http.StatusOK)
		expectOK(t, a.do("DELETE", base+"/stores/"+store, nil), http.StatusOK)

		r = a.do("POST", "/api/auth/api-keys", map[string]any{"name": "k", "scopes": []string{"users:read"}})
		expectOK(t, r, http.StatusCreated)
		key := r.Data()["id"].(string)
		expectOK(t, a.do("PATCH", "/api/auth/api-keys/"+key, map[string]any{"name": "k2"}), http.StatusOK)
		expectOK(t, a.do("DELETE", "/api/auth/api-keys/"+key, nil), http.StatusOK)

		expectOK(t, a.do("POST", "/api/auth/api-key/regenerate", nil), http.StatusOK)
		expectOK(t, a.do("POST", "/api/auth/2fa/setup", nil), http.StatusOK)
		expectOK(t, a.do("POST", "/api/auth/plan", map[string]any{"plan": "free"}), http.StatusOK)
		r = addPasskey(t, s, s, softauthn.New(passkeyOrigin), o.Token, "laptop")
		expectOK(t, r, http.StatusCreated)
		pk := r.Data()["id"].(string)
		expectOK(t, a.do("PATCH", "/api/auth/passkeys/"+pk, map[string]any{"name": "lap2"}), http.StatusOK)
		expectOK(t, a.do("DELETE", "/api/auth/passkeys/"+pk, nil), http.StatusOK)

		tk := a.do("POST", base+"/tokens", map[string]any{"count": 1})
		expectOK(t, tk, http.StatusCreated)
		expectOK(t, a.do("PATCH", base+"/tokens/"+tk.Data()["tokens"].([]any)[0].(map[string]any)["id"].(string), map[string]any{"note": "kept"}), http.StatusOK)
		expectOK(t, a.do("POST", "/api/auth/change-email", map[string]any{"email": "moved@example.com"}), http.StatusOK)
		in := a.do("POST", base+"/integrations", map[string]any{"name": "Ops", "type": "CUSTOM", "webhookUrl": "https://93.184.215.14/hook", "events": []string{"user.login"}})
		expectOK(t, in, http.StatusCreated)
		expectOK(t, a.do("POST", base+"/integrations/"+in.Data()["id"].(string)+"/secret/regenerate", nil), http.StatusOK)

		// What the entries written in the write say: the created record, secrets redacted.
		made := entryOf(t, auditEntries(t, s, o.Token, "/api/audit?recordType=api_keys", 3), "POST", "/api/auth/api-keys")
		if after, _ := made["after"].(map[string]any); made["recordId"] != key || after["name"] != "k" || after["key"] != "[redacted]" {
			t.Fatalf("API key creation entry: %v", made)
		}
		conn := entryOf(t, auditEntries(t, s, o.Token, "/api/audit?recordType=stores", 5), "POST", "/api/apps/:appId/stores")
		if after, _ := conn["after"].(map[string]any); conn["recordId"] != store || after["secret"] != "[redacted]" || strings.Contains(jsonText(t, conn), "whsec_kept_secret") {
			t.Fatalf("store connection creation entry: %v", conn)
		}
		account := auditEntries(t, s, o.Token, "/api/audit?recordType=account", 7)
		if setup := entryOf(t, account, "POST", "/api/auth/2fa/setup"); setup["recordId"] != o.ID {
			t.Fatalf("an account command's entry names the account: %v", setup)
		}
		if added := entryOf(t, account, "POST", "/api/auth/passkeys/register/finish"); added["recordId"] != pk {
			t.Fatalf("passkey entry: %v", added)
		}
		if hookMade := entryOf(t, auditEntries(t, s, o.Token, "/api/audit?recordType=hooks", 3), "POST", "/api/apps/:appId/ws/hooks"); hookMade["recordId"] != hook {
			t.Fatalf("hook creation entry: %v", hookMade)
		}
		expectOK(t, a.do("POST", "/api/auth/logout", nil), http.StatusOK)

		got := auditWrittenCounts(t, s)
		for _, route := range []string{
			"PATCH /api/apps/:appId/tokens/:tokenId", "POST /api/auth/change-email", "POST /api/auth/logout",
			"POST /api/apps/:appId/integrations/:integrationId/secret/regenerate",
			"POST /api/apps/:appId/files", "PATCH /api/apps/:appId/files/:fileId", "DELETE /api/apps/:appId/files/:fileId",
			"POST /api/apps/:appId/ws/hooks", "PATCH /api/apps/:appId/ws/hooks/:hookId", "DELETE /api/apps/:appId/ws/hooks/:hookId",
			"POST /api/apps/:appId/stores", "PATCH /api/apps/:appId/stores/:storeId", "DELETE /api/apps/:appId/stores/:storeId",
			"POST /api/apps/:appId/stores/:storeId/products", "DELETE /api/apps/:appId/stores/:storeId/products/:productId",
			"POST /api/auth/api-keys", "PATCH /api/auth/api-keys/:keyId", "DELETE /api/auth/api-keys/:keyId",
			"POST /api/auth/api-key/regenerate", "POST /api/auth/2fa/setup", "POST /api/auth/plan",
			"POST /api/auth/passkeys/register/finish", "PATCH /api/auth/passkeys/:passkeyId", "DELETE /api/auth/passkeys/:passkeyId",
		} {
			if got[route+" with_change"] != 1 || got[route+" after_change"] != 0 {
				t.Errorf("%s: %d entries with the change, %d after it; want 1 and 0", route, got[route+" with_change"], got[route+" after_change"])
			}
		}

		// A client's HWID reset request: its event is stored before the answer.
		c := newSDK(t, s, secret)
		c.mustInit()
		expectOK(t, c.withNonce("register", map[string]any{"username": "erin", "password": "pw-erin-1", "email": "erin@example.com", "hwid": "pc"}), http.StatusOK)
		head = headPos(t, s)
		expectOK(t, c.post("request-reset", map[string]any{"licenseKey": "", "hwid": ""}, ""), http.StatusOK)
		if got := ofType(eventsAfter(t, s, appID, head), "user.reset_requested"); len(got) != 1 || got[0].Username != "erin" {
			t.Fatalf("user.reset_requested stored with the request: %v", got)
		}
		s.WaitMail(t, "erin@example.com", "Confirm your device reset")
	})
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
