package httpapi_test

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"

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
