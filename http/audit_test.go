package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/core/accounts"
	ts "github.com/keyward/keyward/internal/testserver"
)

// auditEntries lists the audit log with the query, waiting (bounded) until it holds want
// entries: writes are batched off the request path.
func auditEntries(t *testing.T, s *ts.Server, token, path string, want int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := s.Do(t, ts.Req{Method: "GET", Path: path, Token: token})
		expectOK(t, r, http.StatusOK)
		var out []map[string]any
		for _, v := range r.Data()["entries"].([]any) {
			out = append(out, v.(map[string]any))
		}
		if len(out) >= want || time.Now().After(deadline) {
			if len(out) != want {
				t.Fatalf("%s: %d entries, want %d: %s", path, len(out), want, r.Raw)
			}
			return out
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestAuditLog(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		setPlan(t, s, o.Username, "pro")
		a := api{t, s, o.Token}
		appID, _ := a.createApp("Audited")
		r := a.do("POST", "/api/apps/"+appID+"/users", map[string]any{"username": "alice", "password": "pw-123456", "level": 1})
		expectOK(t, r, http.StatusCreated)
		userID := r.Data()["id"].(string)
		k := a.do("POST", "/api/auth/api-keys", map[string]any{"name": "support bot", "scopes": []string{"users:read", "users:update"}})
		expectOK(t, k, http.StatusCreated)
		key, keyID := k.Data()["key"].(string), k.Data()["id"].(string)

		// The key updates the user, a password among the members.
		expectOK(t, withKey(t, s, key, "PATCH", "/api/apps/"+appID+"/users/"+userID, map[string]any{"level": 5, "password": "new-pw-98765"}), http.StatusOK)
		// Refused requests are not recorded.
		expectScopeDenied(t, withKey(t, s, key, "DELETE", "/api/apps/"+appID+"/users/"+userID, nil), "users:delete")
		expect(t, a.do("PATCH", "/api/apps/"+appID+"/users/"+userID, map[string]any{"level": -1}), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, a.do("DELETE", "/api/apps/"+appID+"/users/nope", nil), http.StatusNotFound, "NOT_FOUND")

		// app created, user created, key created, user updated.
		all := auditEntries(t, s, o.Token, "/api/audit", 4)
		upd := all[0]
		if upd["recordType"] != "users" || upd["recordId"] != userID || upd["appId"] != appID || upd["method"] != "PATCH" ||
			upd["route"] != "/api/apps/:appId/users/:userId" || upd["ip"] != "198.51.100.20" {
			t.Fatalf("update entry: %v", upd)
		}
		actor := upd["actor"].(map[string]any)
		if actor["type"] != "api_key" || actor["id"] != keyID || actor["name"] != "support bot" {
			t.Fatalf("actor: %v", actor)
		}
		before, after := upd["before"].(map[string]any), upd["after"].(map[string]any)
		if before["level"] != float64(1) || after["level"] != float64(5) || after["password"] != "[redacted]" {
			t.Fatalf("before %v after %v", before, after)
		}
		if created := all[1]; created["recordType"] != "api_keys" || created["recordId"] != keyID || created["actor"].(map[string]any)["type"] != "session" {
			t.Fatalf("key creation entry: %v", created)
		}
		if created := all[3]; created["recordType"] != "apps" || created["recordId"] != appID {
			t.Fatalf("app creation entry: %v", created)
		}
		// No secret anywhere: the full key, the new password.
		raw := s.Do(t, ts.Req{Method: "GET", Path: "/api/audit", Token: o.Token}).Raw
		for _, secret := range []string{key, "new-pw-98765", "pw-123456"} {
			if strings.Contains(string(raw), secret) {
				t.Fatalf("the audit log holds a secret %q: %s", secret, raw)
			}
		}

		t.Run("filters and paging", func(t *testing.T) {
			auditEntries(t, s, o.Token, "/api/audit?recordType=users", 2)
			auditEntries(t, s, o.Token, "/api/audit?actorId="+keyID, 1)
			auditEntries(t, s, o.Token, "/api/audit?appId="+appID, 3) // the app, the user, its update
			page := auditEntries(t, s, o.Token, "/api/audit?limit=2&offset=1", 2)
			if page[0]["id"] != all[1]["id"] {
				t.Fatalf("page: %v", page)
			}
			future := url.QueryEscape(s.Clock().Now().Add(time.Hour).UTC().Format(time.RFC3339))
			auditEntries(t, s, o.Token, "/api/audit?from="+future, 0)
			auditEntries(t, s, o.Token, "/api/audit?to="+future, 4)
			expect(t, s.Do(t, ts.Req{Method: "GET", Path: "/api/audit?from=yesterday", Token: o.Token}), http.StatusBadRequest, "VALIDATION_ERROR")
		})
		t.Run("owners see their own, administrators any", func(t *testing.T) {
			other := newOwner(t, s)
			auditEntries(t, s, other.Token, "/api/audit", 0)
			expect(t, s.Do(t, ts.Req{Method: "GET", Path: "/api/admin/audit", Token: other.Token}), http.StatusForbidden, "FORBIDDEN")
			role := "admin"
			if _, err := s.Node.Accounts().ChangeAccountByUsername(t.Context(), other.Username, accounts.Change{Role: &role}); err != nil {
				t.Fatal(err)
			}
			auditEntries(t, s, other.Token, "/api/admin/audit?accountId="+o.ID, 4)
		})
		t.Run("a key needs audit:read", func(t *testing.T) {
			expectScopeDenied(t, withKey(t, s, key, "GET", "/api/audit", nil), "audit:read")
		})
	})
}

// TestAuditNothingLostOnStop: changes made just before a graceful stop are in the log
// after a restart.
func TestAuditNothingLostOnStop(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		env := ts.Env(t, e)
		s := ts.StartEnv(t, env)
		o := newOwner(t, s)
		setPlan(t, s, o.Username, "pro")
		a := api{t, s, o.Token}
		appID, _ := a.createApp("Stop")
		const n = 40
		for i := range n {
			expectOK(t, a.do("POST", "/api/apps/"+appID+"/licenses", map[string]any{"count": 1, "note": "n" + string(rune('a'+i%26))}), http.StatusCreated)
		}
		s.Stop()
		s2 := ts.StartEnv(t, env)
		auditEntries(t, s2, login(t, s2, o.Username, o.Password, "").Data()["token"].(string), "/api/audit?limit=200", n+1)
	})
}

// TestAuditRecordsTheWriteNotTheRequest (issue 26 item 4): an entry holds what the update
// wrote, read from the records, never what the request said. Member names are exact, as
// the client API's are: a folded spelling of "password" ("pa\u017f\u017fword": ſ folds to s
// in encoding/json) or of "level" is an unknown member, so it changes nothing and is not in
// the entry; members no user has (role, note) are not changes; a password changed by its
// own name is in the entry only as redacted.
func TestAuditRecordsTheWriteNotTheRequest(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		a := api{t, s, o.Token}
		appID, secret := a.createApp("Folded")
		r := a.do("POST", "/api/apps/"+appID+"/users", map[string]any{"username": "fold", "password": "pw-123456", "level": 1})
		expectOK(t, r, http.StatusCreated)
		userPath := "/api/apps/" + appID + "/users/" + r.Data()["id"].(string)
		patch := func(raw string) map[string]any {
			t.Helper()
			expectOK(t, s.Do(t, ts.Req{Method: "PATCH", Path: userPath, Token: o.Token, Body: []byte(raw)}), http.StatusOK)
			return auditEntries(t, s, o.Token, "/api/audit?recordType=users&limit=1", 1)[0]
		}
		members := func(entry map[string]any, side string) string {
			t.Helper()
			raw, err := json.Marshal(entry[side])
			if err != nil {
				t.Fatal(err)
			}
			return string(raw)
		}
		clientLogin := func(password string) ts.Response {
			t.Helper()
			c := newSDK(t, s, secret)
			c.mustInit()
			return c.withNonce("login", map[string]any{"username": "fold", "password": password})
		}

		// Escaped and as UTF-8: both spell "pa\u017f\u017fword".
		got := patch(`{"pa\u017f\u017fword":"folded-pw-1","level":2}`)
		if b, a := members(got, "before"), members(got, "after"); b != `{"level":1}` || a != `{"level":2}` {
			t.Fatalf("folded password: before %s after %s, want only level", b, a)
		}
		got = patch(`{"paſſword":"folded-pw-2","LEVEL":9,"Level":9}`)
		if b, a := members(got, "before"), members(got, "after"); b != `{}` || a != `{}` {
			t.Fatalf("folded names: before %s after %s, want no change", b, a)
		}
		got = patch(`{"role":"admin","note":"vip"}`)
		if b, a := members(got, "before"), members(got, "after"); b != `{}` || a != `{}` {
			t.Fatalf("unknown members: before %s after %s, want no change", b, a)
		}
		expectOK(t, clientLogin("pw-123456"), http.StatusOK)
		for _, pw := range []string{"folded-pw-1", "folded-pw-2"} {
			if r := clientLogin(pw); r.Status == http.StatusOK {
				t.Fatalf("the password was changed through a folded member name (%s)", pw)
			}
		}
		if lvl := a.do("GET", userPath, nil).Data()["level"]; lvl != float64(2) {
			t.Fatalf("level %v, want 2: a folded name changed it", lvl)
		}

		got = patch(`{"password":"plain-pw-3"}`)
		if b, a := members(got, "before"), members(got, "after"); b != `{"password":"[redacted]"}` || a != `{"password":"[redacted]"}` {
			t.Fatalf("password change: before %s after %s", b, a)
		}
		expectOK(t, clientLogin("plain-pw-3"), http.StatusOK)
		raw := s.Do(t, ts.Req{Method: "GET", Path: "/api/audit?limit=100", Token: o.Token}).Raw
		for _, secret := range []string{"folded-pw-1", "folded-pw-2", "plain-pw-3", "pw-123456", "vip"} {
			if strings.Contains(string(raw), secret) {
				t.Fatalf("the audit log holds %q: %s", secret, raw)
			}
		}
	})
}
