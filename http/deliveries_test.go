package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/keyward/keyward/core/webhooks"

	ts "github.com/keyward/keyward/internal/testserver"
)

// TestDeliveryDetailAndRedeliver (issue 22): a delivery shows the event's payload, its state
// and attempts; redeliver sends it again to the receiver; another integration's or a
// stranger's delivery is not found.
func TestDeliveryDetailAndRedeliver(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		rc := newReceiver(t, http.StatusOK)
		s := startWithReceiver(t, e, rc)
		o := newOwner(t, s)
		a := api{t, s, o.Token}
		appID, _ := a.createApp("Redeliver")
		base := "/api/apps/" + appID + "/integrations"
		r := a.do("POST", base, map[string]any{"name": "Ops", "type": "CUSTOM", "webhookUrl": rc.URL + "/hook", "events": []string{"rule.create"}})
		expectOK(t, r, http.StatusCreated)
		hookID := r.Data()["id"].(string)
		expectOK(t, a.do("POST", "/api/apps/"+appID+"/rules", map[string]any{"type": "ip", "action": "blacklist", "value": "203.0.113.9"}), http.StatusCreated)
		rc.wait(t, 1)
		var deliveryID string
		for deadline := time.Now().Add(30 * time.Second); deliveryID == ""; time.Sleep(20 * time.Millisecond) {
			if list := a.do("GET", base+"/"+hookID+"/deliveries", nil).Data()["attempts"].([]any); len(list) > 0 {
				deliveryID = list[0].(map[string]any)["deliveryId"].(string)
			} else if time.Now().After(deadline) {
				t.Fatal("no attempt listed")
			}
		}
		path := base + "/" + hookID + "/deliveries/" + deliveryID
		r = a.do("GET", path, nil)
		expectOK(t, r, http.StatusOK)
		d := r.Data()
		payload, _ := d["payload"].(map[string]any)
		if d["event"] != "rule.create" || d["state"] != "delivered" || d["attempts"] != float64(1) || payload["event"] != "rule.create" || payload["id"] != d["eventId"] {
			t.Fatalf("delivery: %s", r.Raw)
		}
		assertSentAsReceived(t, d, rc.wait(t, 1)[0])
		r = a.do("POST", path+"/redeliver", nil)
		expectOK(t, r, http.StatusOK)
		if r.Data()["state"] != "pending" {
			t.Fatalf("redeliver: %s", r.Raw)
		}
		if h := rc.wait(t, 2)[1]; string(h.Body) != string(rc.wait(t, 1)[0].Body) {
			t.Fatalf("the redelivery sent another body: %s", h.Body)
		}
		// The detail follows the redelivery: it shows what the second attempt sent.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			d = a.do("GET", path, nil).Data()
			if d["state"] == "delivered" && d["attempts"] == float64(2) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the redelivery is not recorded: %v", d)
			}
		}
		assertSentAsReceived(t, d, rc.wait(t, 2)[1])
		entry := auditEntries(t, s, o.Token, "/api/audit?recordType=integrations&limit=1", 1)[0]
		if entry["recordId"] != deliveryID || entry["after"].(map[string]any)["state"] != "pending" {
			t.Fatalf("redeliver audit entry: %v", entry)
		}
		// The entry rode the redelivery's write (the queue insert on MongoDB, the move in
		// one transaction on SQLite); a second redelivery of the same delivery (whose
		// copy carries the first one's marker) does too.
		expectOK(t, a.do("POST", path+"/redeliver", nil), http.StatusOK)
		rc.wait(t, 3)
		const route = "POST /api/apps/:appId/integrations/:integrationId/deliveries/:deliveryId/redeliver"
		if got := auditWrittenCounts(t, s); got[route+" with_change"] != 2 || got[route+" after_change"] != 0 {
			t.Fatalf("redeliver entries: %d with the change, %d after; want 2 and 0", got[route+" with_change"], got[route+" after_change"])
		}
		expect(t, a.do("GET", base+"/"+hookID+"/deliveries/nope", nil), http.StatusNotFound, "NOT_FOUND")
		stranger := api{t, s, newOwner(t, s).Token}
		expect(t, stranger.do("POST", path+"/redeliver", nil), http.StatusNotFound, "NOT_FOUND")
	})
}

// assertSentAsReceived checks a delivery view's sent request against what the receiver
// got: the same body bytes, and every header the receiver saw that Keyward sets (the
// signature and the event id among them) with the same value.
func assertSentAsReceived(t *testing.T, d map[string]any, got hit) {
	t.Helper()
	sent, ok := d["sent"].(map[string]any)
	if !ok {
		t.Fatalf("delivery has no sent request: %v", d)
	}
	if sent["bodyEncoding"] != "utf-8" || sent["body"] != string(got.Body) || sent["method"] != "POST" {
		t.Errorf("sent %v, receiver got body %q", sent, got.Body)
	}
	headers := http.Header{}
	for _, h := range sent["headers"].([]any) {
		h := h.(map[string]any)
		headers.Add(h["name"].(string), h["value"].(string))
	}
	for _, name := range []string{webhooks.HeaderSignature, webhooks.HeaderDelivery, webhooks.HeaderEvent, webhooks.HeaderTimestamp, "Content-Type", "Content-Length", "User-Agent"} {
		if want := got.Header.Get(name); want == "" || headers.Get(name) != want {
			t.Errorf("sent header %s = %q, receiver got %q", name, headers.Get(name), want)
		}
	}
	if headers.Get(webhooks.HeaderDelivery) != d["eventId"] {
		t.Errorf("event id header %q, delivery's event %v", headers.Get(webhooks.HeaderDelivery), d["eventId"])
	}
}
