package httpapi_test

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

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

// TestBulkAuditCost logs what a users bulk request of KEYWARD_TEST_BULK_COST users (ban,
// then unban, each a write of its own with its part of the entry) and a licenses add-time
// on as many keys take on each engine pair: a figure, not a check (it asserts only that
// every record was changed). Skipped unless the variable is set.
func TestBulkAuditCost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("KEYWARD_TEST_BULK_COST"))
	if n < 1 {
		t.Skip("set KEYWARD_TEST_BULK_COST to the number of records")
	}
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		setPlan(t, s, o.Username, "business")
		a := api{t, s, o.Token}
		appID, _ := a.createApp("Bulk cost")
		base := "/api/apps/" + appID
		var ids []string
		for len(ids) < n {
			rows := make([]map[string]any, 0, 200)
			for i := len(ids); i < n && len(rows) < 200; i++ {
				rows = append(rows, map[string]any{"username": fmt.Sprintf("u%05d", i), "password": "pw-123456"})
			}
			r := a.do("POST", base+"/users/import", map[string]any{"users": rows})
			expectOK(t, r, http.StatusOK)
			for _, row := range r.Data()["results"].([]any) {
				ids = append(ids, row.(map[string]any)["id"].(string))
			}
		}
		for len(ids) > n {
			ids = ids[:n]
		}
		for made := 0; made < n; made += 100 {
			expectOK(t, a.do("POST", base+"/licenses", map[string]any{"count": min(100, n-made), "duration": 3600}), http.StatusCreated)
		}
		for _, req := range []struct {
			path string
			body map[string]any
		}{
			{base + "/users/bulk", map[string]any{"action": "ban", "ids": ids}},
			{base + "/users/bulk", map[string]any{"action": "unban", "ids": ids}},
			{base + "/licenses/add-time", map[string]any{"seconds": 60}},
		} {
			start := time.Now()
			r := a.do("POST", req.path, req.body)
			took := time.Since(start)
			expectOK(t, r, http.StatusOK)
			if r.Data()["succeeded"] != float64(n) {
				t.Fatalf("%s: %s", req.path, r.Raw)
			}
			t.Logf("%s %v on %d records: %v (%.2f ms per record)", req.path, req.body["action"], n, took, float64(took.Microseconds())/1000/float64(n))
		}
	})
}
