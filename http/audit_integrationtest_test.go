package httpapi_test

import (
	"net/http"
	"testing"

	ts "github.com/keyward/keyward/internal/testserver"
)

// TestIntegrationTestAuditedWithTheChange: an integration's test delivery stores one
// record, its attempt, and its audit entry rides that insert (audit.Own) on both engine
// pairs: counted with_change, none after; the entry names the integration.
func TestIntegrationTestAuditedWithTheChange(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		rc := newReceiver(t, http.StatusOK)
		s := startWithReceiver(t, e, rc)
		a := api{t, s, newOwner(t, s).Token}
		appID, _ := a.createApp("Tested")
		base := "/api/apps/" + appID + "/integrations"
		r := a.do("POST", base, map[string]any{"name": "Ops", "type": "CUSTOM", "webhookUrl": rc.URL + "/hooks", "events": []string{"rule.create"}})
		expectOK(t, r, http.StatusCreated)
		hookID := r.Data()["id"].(string)
		r = a.do("POST", base+"/"+hookID+"/test", nil)
		expectOK(t, r, http.StatusOK)
		if r.Data()["delivered"] != true {
			t.Fatalf("test: %s", r.Raw)
		}
		const route = "POST /api/apps/:appId/integrations/:integrationId/test"
		if got := auditWrittenCounts(t, s); got[route+" with_change"] != 1 || got[route+" after_change"] != 0 {
			t.Fatalf("test entries: %d with the change, %d after; want 1 and 0", got[route+" with_change"], got[route+" after_change"])
		}
		var found bool
		for _, en := range auditEntries(t, s, a.token, "/api/audit?recordType=integrations", 2) {
			if en["route"] == "/api/apps/:appId/integrations/:integrationId/test" && en["recordId"] == hookID && en["appId"] == appID {
				found = true
			}
		}
		if !found {
			t.Fatalf("no entry of the test names integration %s", hookID)
		}
		// The attempt is listed as before (the marker does not change its view).
		r = a.do("GET", base+"/"+hookID+"/deliveries?limit=10", nil)
		expectOK(t, r, http.StatusOK)
		if at := r.Data()["attempts"].([]any); len(at) != 1 || at[0].(map[string]any)["event"] != "integration.test" {
			t.Fatalf("attempts: %s", r.Raw)
		}
	})
}
