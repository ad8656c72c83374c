package httpapi_test

import (
	"net/http"
	"testing"

	ts "github.com/keyward/keyward/internal/testserver"
)

// TestBulkAuditWrittenWithTheChange (issue 21): the bulk routes that change each record in
// a write of their own (users bulk, users import, licenses add-time) store each record's
// part of their one entry with its write, on both engine pairs, and the entry is made of
// the parts: counted with_change, never after_change, and holding every changed record.
func TestBulkAuditWrittenWithTheChange(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		setPlan(t, s, o.Username, "pro")
		a := api{t, s, o.Token}
		appID, _ := a.createApp("Bulk with the change")
		base := "/api/apps/" + appID
		var ids []string
		for _, name := range []string{"ann", "bob", "cid"} {
			r := a.do("POST", base+"/users", map[string]any{"username": name, "password": "pw-123456"})
			expectOK(t, r, http.StatusCreated)
			ids = append(ids, r.Data()["id"].(string))
		}
		expectOK(t, a.do("POST", base+"/licenses", map[string]any{"count": 2, "duration": 3600}), http.StatusCreated)

		for _, body := range []map[string]any{
			{"action": "ban", "banReason": "chargeback", "ids": []string{ids[0], ids[1], "no-such-user"}},
			{"action": "extend", "duration": 86400, "ids": ids[:1]},
			{"action": "reset-hwid", "ids": ids[:2]},
			{"action": "delete", "ids": ids[2:]},
		} {
			expectOK(t, a.do("POST", base+"/users/bulk", body), http.StatusOK)
		}
		expectOK(t, a.do("POST", base+"/users/import", map[string]any{"users": []map[string]any{
			{"username": "imported", "password": "pw-123456"}, {"username": "x", "password": "pw-123456"}}}), http.StatusOK)
		r := a.do("POST", base+"/licenses/add-time", map[string]any{"seconds": 60})
		expectOK(t, r, http.StatusOK)
		if r.Data()["succeeded"] != float64(2) {
			t.Fatalf("add-time: %s", r.Raw)
		}

		got := auditWrittenCounts(t, s)
		for route, n := range map[string]int{"POST /api/apps/:appId/users/bulk": 4, "POST /api/apps/:appId/users/import": 1,
			"POST /api/apps/:appId/licenses/add-time": 1} {
			if got[route+" with_change"] != n || got[route+" after_change"] != 0 {
				t.Errorf("%s: %d entries with the change, %d after it; want %d and 0", route, got[route+" with_change"], got[route+" after_change"], n)
			}
		}

		// Newest first: import, delete, reset-hwid, extend, ban (then the creations).
		users := auditEntries(t, s, o.Token, "/api/audit?recordType=users&limit=5", 5)
		imported, deleted, reset, ban := users[0], users[1], users[2], users[4]
		if after := imported["after"].(map[string]any); len(after) != 1 || imported["recordId"] != appID {
			t.Fatalf("import entry: %v", imported)
		} else {
			for _, v := range after {
				if v.(map[string]any)["name"] != "imported" {
					t.Fatalf("import entry's after: %v", after)
				}
			}
		}
		if deleted["after"].(map[string]any)[ids[2]].(map[string]any)["deleted"] != true {
			t.Fatalf("bulk delete entry: %v", deleted)
		}
		if after := reset["after"].(map[string]any); len(after) != 2 || after[ids[0]].(map[string]any)["hwidResets"] != float64(1) {
			t.Fatalf("bulk reset-hwid entry: %v", reset)
		}
		before, after := ban["before"].(map[string]any), ban["after"].(map[string]any)
		if len(before) != 2 || before[ids[0]].(map[string]any)["banned"] != false || after[ids[1]].(map[string]any)["banned"] != true ||
			ban["route"] != "/api/apps/:appId/users/bulk" || ban["recordId"] != appID {
			t.Fatalf("bulk ban entry: %v", ban)
		}
		addTime := auditEntries(t, s, o.Token, "/api/audit?recordType=licenses&limit=1", 1)[0]
		if after := addTime["after"].(map[string]any); len(after) != 2 || addTime["route"] != "/api/apps/:appId/licenses/add-time" {
			t.Fatalf("add-time entry: %v", addTime)
		} else {
			for _, v := range after {
				if v.(map[string]any)["duration"] != float64(3660) {
					t.Fatalf("add-time entry's after: %v", after)
				}
			}
		}
	})
}
