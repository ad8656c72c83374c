package httpapi_test

import (
	"net/http"
	"testing"

	ts "github.com/keyward/keyward/internal/testserver"
)

// TestLicensesBulkDeleteAuditedWithTheChange: on both engine pairs, a bulk deletion of
// licenses, by ids and by filter, stores its audit entry with the deletions (issue 21:
// SQLite in their transaction; MongoDB staged before them, confirmed by them and appended
// before the answer), so each is counted with_change, never after_change, and is listed
// at the answer (not polled); it names the app and says what was asked and how many went.
func TestLicensesBulkDeleteAuditedWithTheChange(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		a := api{t, s, o.Token}
		appID, _ := a.createApp("Bulk deleted")
		base := "/api/apps/" + appID + "/licenses"
		r := a.do("POST", base, map[string]any{"count": 4})
		expectOK(t, r, http.StatusCreated)
		var ids []string
		for _, l := range r.Data()["licenses"].([]any) {
			ids = append(ids, l.(map[string]any)["id"].(string))
		}
		expectOK(t, a.do("PATCH", base+"/"+ids[3], map[string]any{"banned": true}), http.StatusOK)

		const route = "/api/apps/:appId/licenses/bulk-delete"
		// bulkEntries answers the bulk deletions' entries listed now, newest first.
		bulkEntries := func(want int) []map[string]any {
			t.Helper()
			l := s.Do(t, ts.Req{Method: "GET", Path: "/api/audit?recordType=licenses", Token: o.Token})
			expectOK(t, l, http.StatusOK)
			var out []map[string]any
			for _, v := range l.Data()["entries"].([]any) {
				if en := v.(map[string]any); en["route"] == route {
					out = append(out, en)
				}
			}
			if len(out) != want {
				t.Fatalf("bulk deletion entries listed at the answer: %d, want %d: %s", len(out), want, l.Raw)
			}
			for _, en := range out {
				if en["method"] != "POST" || en["appId"] != appID || en["recordId"] != appID || en["status"] != float64(200) {
					t.Fatalf("bulk deletion entry: %v", en)
				}
			}
			return out
		}

		r = a.do("POST", base+"/bulk-delete", map[string]any{"ids": []string{ids[0], ids[1], "unknown-id"}})
		expectOK(t, r, http.StatusOK)
		if r.Data()["deleted"] != float64(2) {
			t.Fatalf("bulk ids: %s", r.Raw)
		}
		after, _ := bulkEntries(1)[0]["after"].(map[string]any)
		asked, _ := after["ids"].([]any)
		if after["count"] != float64(2) || len(asked) != 3 || asked[0] != ids[0] || after["filter"] != nil {
			t.Fatalf("bulk deletion by ids: after %v", after)
		}

		r = a.do("POST", base+"/bulk-delete", map[string]any{"filter": "banned"})
		expectOK(t, r, http.StatusOK)
		if r.Data()["deleted"] != float64(1) {
			t.Fatalf("bulk banned: %s", r.Raw)
		}
		list := bulkEntries(2)
		byFilter := list[0]
		if f, _ := list[1]["after"].(map[string]any); f["filter"] == "banned" {
			byFilter = list[1] // listed oldest first
		}
		after, _ = byFilter["after"].(map[string]any)
		if after["filter"] != "banned" || after["count"] != float64(1) || after["ids"] != nil {
			t.Fatalf("bulk deletion by filter: after %v", after)
		}

		if got := auditWrittenCounts(t, s); got["POST "+route+" with_change"] != 2 || got["POST "+route+" after_change"] != 0 {
			t.Fatalf("bulk deletion entries: %d with the change, %d after it; want 2 and 0",
				got["POST "+route+" with_change"], got["POST "+route+" after_change"])
		}
		if n := a.do("GET", base+"?limit=1", nil).Data()["total"]; n != float64(1) {
			t.Fatalf("licenses left: %v, want 1", n)
		}
	})
}
