package httpapi_test

import (
	"net/http"
	"testing"

	ts "github.com/keyward/keyward/internal/testserver"
)

// TestLogsPurgeAuditedBeforeTheAnswer: the purge of an app's logs has no one write to
// carry its entry (see logs.Service.Purge), so on both engine pairs it is written after
// the deletion but before the answer: listed at once, counted after_change, once.
func TestLogsPurgeAuditedBeforeTheAnswer(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		a := api{t, s, o.Token}
		appID, _ := a.createApp("Purged")
		r := a.do("DELETE", "/api/apps/"+appID+"/logs?days=1", nil)
		expectOK(t, r, http.StatusOK)
		if _, ok := r.Data()["deleted"].(float64); !ok {
			t.Fatalf("purge: %s", r.Raw)
		}
		// Not polled: the answer left after the entry was stored.
		l := s.Do(t, ts.Req{Method: "GET", Path: "/api/audit?recordType=logs", Token: o.Token})
		expectOK(t, l, http.StatusOK)
		list := l.Data()["entries"].([]any)
		if len(list) != 1 {
			t.Fatalf("purge entries listed at the answer: %s", l.Raw)
		}
		if en := list[0].(map[string]any); en["method"] != "DELETE" || en["route"] != "/api/apps/:appId/logs" || en["appId"] != appID {
			t.Fatalf("purge entry: %v", en)
		}
		const route = "DELETE /api/apps/:appId/logs"
		if got := auditWrittenCounts(t, s); got[route+" after_change"] != 1 || got[route+" with_change"] != 0 {
			t.Fatalf("purge entries: %d after the change, %d with it; want 1 and 0", got[route+" after_change"], got[route+" with_change"])
		}
	})
}
