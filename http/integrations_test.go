package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/core/webhooks"
	ts "github.com/keyward/keyward/internal/testserver"
	"github.com/keyward/keyward/internal/testtls"
)

// hit is one request a test receiver got.
type hit struct {
	Path   string
	Header http.Header
	Body   []byte
}

// receiver is an HTTPS webhook receiver on loopback with a certificate of a test CA. Each
// request is answered with the next status of its script (the last one repeats).
type receiver struct {
	URL  string
	CA   string // PEM file of the CA, for KEYWARD_WEBHOOKS_CA_FILE
	mu   sync.Mutex
	hits []hit
	n    atomic.Int32
	plan []int
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	t.Helper()
	ca := testtls.NewCA(t)
	rc := &receiver{CA: ca.PEMFile(t), plan: statuses}
	srv := ca.NewHTTPSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.hits = append(rc.hits, hit{Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body})
		rc.mu.Unlock()
		i := int(rc.n.Add(1)) - 1
		status := http.StatusOK
		if len(rc.plan) > 0 {
			status = rc.plan[min(i, len(rc.plan)-1)]
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	rc.URL = srv.URL
	return rc
}

// wait answers the hits once there are at least n of them.
func (rc *receiver) wait(t *testing.T, n int) []hit {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rc.mu.Lock()
		got := append([]hit(nil), rc.hits...)
		rc.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("receiver got %d requests, want %d", len(got), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.hits)
}

// startWithReceiver runs a node that trusts the receiver's CA and may reach loopback.
func startWithReceiver(t *testing.T, e ts.Engines, rc *receiver) *ts.Server {
	env := ts.Env(t, e)
	env["KEYWARD_WEBHOOKS_ALLOW_PRIVATE"] = "true"
	env["KEYWARD_WEBHOOKS_CA_FILE"] = rc.CA
	return ts.StartEnv(t, env)
}

func TestIntegrationsRefuseBadInput(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e) // the default policy: public HTTPS destinations only
		a := api{t, s, newOwner(t, s).Token}
		id, _ := a.createApp("Hooks")
		base := "/api/apps/" + id + "/integrations"
		good := func() map[string]any {
			return map[string]any{"name": "Ops", "type": "CUSTOM", "webhookUrl": "https://93.184.215.14/hook", "events": []string{"user.login"}}
		}
		cases := map[string]func(b map[string]any){
			"plain http":        func(b map[string]any) { b["webhookUrl"] = "http://93.184.215.14/hook" },
			"loopback":          func(b map[string]any) { b["webhookUrl"] = "https://127.0.0.1/hook" },
			"private":           func(b map[string]any) { b["webhookUrl"] = "https://10.1.2.3/hook" },
			"metadata":          func(b map[string]any) { b["webhookUrl"] = "https://169.254.169.254/latest" },
			"ipv6 loopback":     func(b map[string]any) { b["webhookUrl"] = "https://[::1]/hook" },
			"userinfo":          func(b map[string]any) { b["webhookUrl"] = "https://u:p@93.184.215.14/hook" },
			"no url":            func(b map[string]any) { delete(b, "webhookUrl") },
			"unknown type":      func(b map[string]any) { b["type"] = "IRC" },
			"unknown event":     func(b map[string]any) { b["events"] = []string{"user.explode"} },
			"no events":         func(b map[string]any) { b["events"] = []string{} },
			"no name":           func(b map[string]any) { b["name"] = "  " },
			"telegram no chat":  func(b map[string]any) { b["type"] = "TELEGRAM" },
			"events not a list": func(b map[string]any) { b["events"] = "user.login" },
		}
		for name, mutate := range cases {
			b := good()
			mutate(b)
			t.Run(name, func(t *testing.T) {
				expect(t, a.do("POST", base, b), http.StatusBadRequest, "VALIDATION_ERROR")
			})
		}
		r := a.do("GET", base, nil)
		expectOK(t, r, http.StatusOK)
		if n := len(r.Body["data"].([]any)); n != 0 {
			t.Fatalf("refused creates left %d integrations", n)
		}
		expect(t, a.do("POST", "/api/apps/nope/integrations", good()), http.StatusNotFound, "NOT_FOUND")
		expect(t, a.do("PATCH", base+"/nope", map[string]any{"name": "x"}), http.StatusNotFound, "NOT_FOUND")

		// Another owner sees nothing of this app's integrations.
		other := api{t, s, newOwner(t, s).Token}
		expect(t, other.do("GET", base, nil), http.StatusNotFound, "NOT_FOUND")

		// The event list is SPEC 6.1, then the licensing events, then the store sales' order events.
		r = a.do("GET", "/api/integrations/events", nil)
		expectOK(t, r, http.StatusOK)
		evs := r.Body["data"].([]any)
		if len(evs) != 42 || evs[0] != "user.login" || evs[34] != "app.secret_reset" || evs[35] != "license.file" ||
			evs[38] != "order.paid" || evs[41] != "order.canceled" {
			t.Fatalf("events: %v", evs)
		}
	})
}

func TestCustomIntegrationDeliversSignedEvents(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		rc := newReceiver(t, http.StatusOK)
		s := startWithReceiver(t, e, rc)
		a := api{t, s, newOwner(t, s).Token}
		appID, _ := a.createApp("Signed")
		base := "/api/apps/" + appID + "/integrations"
		r := a.do("POST", base, map[string]any{"name": "Ops", "type": "CUSTOM", "webhookUrl": rc.URL + "/hooks/keyward?k=v",
			"events": []string{"rule.create", "rule.create", "variable.create"}})
		expectOK(t, r, http.StatusCreated)
		d := r.Data()
		secret, _ := d["secret"].(string)
		if !strings.HasPrefix(secret, "whsec_") || d["webhookUrl"] == rc.URL+"/hooks/keyward?k=v" || d["hasSecret"] != true {
			t.Fatalf("create: %s", r.Raw)
		}
		if evs := d["events"].([]any); len(evs) != 2 {
			t.Fatalf("repeated event kept: %v", evs)
		}
		hookID := d["id"].(string)

		// The list masks the URL and hides the secret.
		r = a.do("GET", base, nil)
		expectOK(t, r, http.StatusOK)
		listed := r.Body["data"].([]any)[0].(map[string]any)
		if strings.Contains(listed["webhookUrl"].(string), "hooks") || listed["secret"] != nil {
			t.Fatalf("list leaks: %s", r.Raw)
		}

		// An event the integration subscribes to reaches the receiver, signed.
		expectOK(t, a.do("POST", "/api/apps/"+appID+"/rules", map[string]any{"type": "ip", "action": "blacklist", "value": "203.0.113.9"}), http.StatusCreated)
		h := rc.wait(t, 1)[0]
		if h.Path != "/hooks/keyward?k=v" || h.Header.Get(webhooks.HeaderEvent) != "rule.create" {
			t.Fatalf("delivery: %s %v", h.Path, h.Header)
		}
		stamp, _ := strconv.ParseInt(h.Header.Get(webhooks.HeaderTimestamp), 10, 64)
		if !webhooks.Verify(secret, h.Header.Get(webhooks.HeaderSignature), stamp, h.Body, time.Now(), time.Hour) {
			t.Fatalf("signature does not verify: %v", h.Header)
		}
		var body struct {
			ID, Event, AppID string
			Timestamp        string
			Data             map[string]any
		}
		if err := json.Unmarshal(h.Body, &body); err != nil || body.Event != "rule.create" || body.AppID != appID ||
			body.ID != h.Header.Get(webhooks.HeaderDelivery) || body.Data["value"] != "203.0.113.9" || body.Timestamp == "" {
			t.Fatalf("body %s (%v)", h.Body, err)
		}

		// Unsubscribed events are not sent.
		expectOK(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"description": "changed"}), http.StatusOK)

		// The attempt is listed.
		var attempts []any
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			r = a.do("GET", base+"/"+hookID+"/deliveries?limit=10", nil)
			expectOK(t, r, http.StatusOK)
			if attempts = r.Data()["attempts"].([]any); len(attempts) > 0 || time.Now().After(deadline) {
				break
			}
		}
		at := attempts[0].(map[string]any)
		if len(attempts) != 1 || at["success"] != true || at["statusCode"] != float64(200) || at["event"] != "rule.create" || at["attempt"] != float64(1) {
			t.Fatalf("attempts: %s", r.Raw)
		}

		// Regenerating the secret signs with the new one at once.
		r = a.do("POST", base+"/"+hookID+"/secret/regenerate", nil)
		expectOK(t, r, http.StatusOK)
		newSecret := r.Data()["secret"].(string)
		r = a.do("POST", base+"/"+hookID+"/test", nil)
		expectOK(t, r, http.StatusOK)
		if r.Data()["delivered"] != true || !strings.Contains(r.Data()["message"].(string), "delivered") {
			t.Fatalf("test: %s", r.Raw)
		}
		hits := rc.wait(t, 2)
		h = hits[len(hits)-1]
		stamp, _ = strconv.ParseInt(h.Header.Get(webhooks.HeaderTimestamp), 10, 64)
		sig := h.Header.Get(webhooks.HeaderSignature)
		if h.Header.Get(webhooks.HeaderEvent) != "integration.test" ||
			!webhooks.Verify(newSecret, sig, stamp, h.Body, time.Now(), time.Hour) ||
			webhooks.Verify(secret, sig, stamp, h.Body, time.Now(), time.Hour) {
			t.Fatalf("test delivery not signed with the new secret only: %v", h.Header)
		}
		if rc.count() != 2 {
			t.Fatalf("an unsubscribed event was delivered: %d requests", rc.count())
		}

		// Disabled integrations get nothing; deleting removes it.
		expectOK(t, a.do("PATCH", base+"/"+hookID, map[string]any{"enabled": false}), http.StatusOK)
		expectOK(t, a.do("POST", "/api/apps/"+appID+"/rules", map[string]any{"type": "ip", "action": "blacklist", "value": "203.0.113.10"}), http.StatusCreated)
		waitLog(t, a, appID, "integration.update")
		expectOK(t, a.do("DELETE", base+"/"+hookID, nil), http.StatusOK)
		expect(t, a.do("GET", base+"/"+hookID+"/deliveries", nil), http.StatusNotFound, "NOT_FOUND")
		time.Sleep(300 * time.Millisecond)
		if rc.count() != 2 {
			t.Fatalf("a disabled integration was delivered to: %d requests", rc.count())
		}
	})
}

func TestChatIntegrationsAndSecretRules(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		rc := newReceiver(t, http.StatusNoContent)
		s := startWithReceiver(t, e, rc)
		a := api{t, s, newOwner(t, s).Token}
		appID, _ := a.createApp("Chat")
		base := "/api/apps/" + appID + "/integrations"
		for i, tc := range []struct{ kind, path, want string }{
			{"DISCORD", "/api/webhooks/1/abc", `"embeds"`},
			{"SLACK", "/services/T/B/x", `"blocks"`},
			{"TELEGRAM", "/bot123:abc/sendMessage?chat_id=42", `"chat_id":"42"`},
		} {
			r := a.do("POST", base, map[string]any{"name": tc.kind, "type": strings.ToLower(tc.kind), "webhookUrl": rc.URL + tc.path, "events": []string{"user.login"}})
			expectOK(t, r, http.StatusCreated)
			if r.Data()["secret"] != nil || r.Data()["type"] != tc.kind {
				t.Fatalf("%s create: %s", tc.kind, r.Raw)
			}
			id := r.Data()["id"].(string)
			expect(t, a.do("POST", base+"/"+id+"/secret/regenerate", nil), http.StatusBadRequest, "VALIDATION_ERROR")
			r = a.do("POST", base+"/"+id+"/test", nil)
			expectOK(t, r, http.StatusOK)
			h := rc.wait(t, i+1)[i]
			if h.Path != tc.path || !strings.Contains(string(h.Body), tc.want) || h.Header.Get(webhooks.HeaderSignature) != "" {
				t.Fatalf("%s test delivery: %s %s", tc.kind, h.Path, h.Body)
			}
		}
	})
}

func TestDeliveriesRetryThenDisable(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		// Two server errors, then success: the queue retries with backoff.
		rc := newReceiver(t, http.StatusInternalServerError, http.StatusBadGateway, http.StatusOK)
		s := startWithReceiver(t, e, rc)
		a := api{t, s, newOwner(t, s).Token}
		appID, _ := a.createApp("Retry")
		base := "/api/apps/" + appID + "/integrations"
		r := a.do("POST", base, map[string]any{"name": "Ops", "type": "CUSTOM", "webhookUrl": rc.URL + "/h", "events": []string{"variable.create"}})
		expectOK(t, r, http.StatusCreated)
		hookID := r.Data()["id"].(string)
		expectOK(t, a.do("POST", "/api/apps/"+appID+"/variables", map[string]any{"key": "k", "value": "v"}), http.StatusCreated)
		rc.wait(t, 1)
		time.Sleep(1500 * time.Millisecond) // more than a poll: nothing is due before the backoff
		if rc.count() != 1 {
			t.Fatalf("retried before the backoff: %d", rc.count())
		}
		s.Clock().Advance(webhooks.BaseDelay + time.Second)
		rc.wait(t, 2)
		s.Clock().Advance(2*webhooks.BaseDelay + time.Second)
		hits := rc.wait(t, 3)
		if hits[0].Header.Get(webhooks.HeaderDelivery) != hits[2].Header.Get(webhooks.HeaderDelivery) {
			t.Fatal("a retry carries another delivery id")
		}
		var attempts []any
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			r = a.do("GET", base+"/"+hookID+"/deliveries", nil)
			expectOK(t, r, http.StatusOK)
			if attempts = r.Data()["attempts"].([]any); len(attempts) >= 3 || time.Now().After(deadline) {
				break
			}
		}
		if len(attempts) != 3 || r.Data()["total"] != float64(3) {
			t.Fatalf("attempts: %s", r.Raw)
		}
		newest, oldest := attempts[0].(map[string]any), attempts[2].(map[string]any)
		if newest["success"] != true || newest["attempt"] != float64(3) || oldest["statusCode"] != float64(500) || oldest["error"] == nil {
			t.Fatalf("attempts: %s", r.Raw)
		}
	})
}

func TestFailingIntegrationIsDisabled(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		rc := newReceiver(t, http.StatusGone) // permanent: every delivery ends failed at once
		s := startWithReceiver(t, e, rc)
		a := api{t, s, newOwner(t, s).Token}
		appID, _ := a.createApp("Gone")
		base := "/api/apps/" + appID + "/integrations"
		r := a.do("POST", base, map[string]any{"name": "Dead", "type": "SLACK", "webhookUrl": rc.URL + "/services/x", "events": []string{"variable.create"}})
		expectOK(t, r, http.StatusCreated)
		hookID := r.Data()["id"].(string)
		items := make([]map[string]any, webhooks.DisableAfter+5)
		for i := range items {
			items[i] = map[string]any{"key": "k" + strconv.Itoa(i), "value": "v"}
		}
		expectOK(t, a.do("POST", "/api/apps/"+appID+"/variables/bulk", map[string]any{"variables": items}), http.StatusCreated)
		entry := waitLog(t, a, appID, "integration.disabled")
		if entry["level"] != "WARNING" || !strings.Contains(entry["message"].(string), "Dead") {
			t.Fatalf("log entry: %v", entry)
		}
		r = a.do("GET", base+"/"+hookID, nil)
		expectOK(t, r, http.StatusOK)
		if r.Data()["enabled"] != false || !strings.Contains(r.Data()["disabledReason"].(string), "HTTP 410") {
			t.Fatalf("integration: %s", r.Raw)
		}
		time.Sleep(300 * time.Millisecond)
		if n := rc.count(); n < webhooks.DisableAfter || n > webhooks.DisableAfter+5 {
			t.Fatalf("receiver got %d requests", n)
		}
		// Enabling again clears the count and the reason.
		r = a.do("PATCH", base+"/"+hookID, map[string]any{"enabled": true})
		expectOK(t, r, http.StatusOK)
		if r.Data()["consecutiveFailures"] != float64(0) || r.Data()["disabledReason"] != nil {
			t.Fatalf("re-enable: %s", r.Raw)
		}
	})
}
