package httpapi_test

import (
	"net/http"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	ts "github.com/keyward/keyward/internal/testserver"
)

// wireTimestamp is docs/API.md's "RFC 3339 in UTC with milliseconds".
var wireTimestamp = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// looksLikeTimestamp catches any string a client would read as a date-time.
var looksLikeTimestamp = regexp.MustCompile(`^\d{4}-\d\d-\d\d[T ]\d\d:\d\d`)

// uuidLike is a request id the server made.
var uuidLike = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// walkJSON calls fn for every member and element under v with its path (object members by
// name, array elements as []) and whether it is present as an object member.
func walkJSON(path string, v any, fn func(path string, v any)) {
	fn(path, v)
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			walkJSON(path+"."+k, e, fn)
		}
	case []any:
		for _, e := range x {
			walkJSON(path+"[]", e, fn)
		}
	}
}

// documentedNulls is docs/API.md's list of the members that are null when absent, each
// phrase as the Conventions section writes it, with the answers (route and member path)
// where the test's fixture has them absent. Every null the server answers must be one of
// these, and each of these must really be null (not "" and not left out).
var documentedNulls = []struct {
	phrase string
	at     map[string][]string // answer label → member paths
}{
	{"an API key's `expiresAt`,\n  `lastUsedAt` and `lastUsedIp`", map[string][]string{
		"api-keys": {".data[].expiresAt", ".data[].lastUsedAt", ".data[].lastUsedIp"}}},
	{"a webhook delivery's `nextAttemptAt`, `lastError` and\n  `sent`", map[string][]string{
		"delivery (delivered)": {".data.nextAttemptAt", ".data.lastError"},
		"delivery (refused)":   {".data.sent"}}},
	{"an audit entry's `before` and `after`", map[string][]string{
		"audit": {".data.entries[].before", ".data.entries[].after"}}},
	// "the backups' `last`" is an administrator's answer: TestBackups covers it.
}

// TestDocsAgreeWithServer holds the server to docs/API.md's Conventions (issue 22): the
// members documented as null come back null and no other member does, every timestamp is
// RFC 3339 UTC with milliseconds, every answer (success, error, page, unknown route)
// carries X-Request-Id; and the plans' features are what "Plan features" says: free's
// list is SPEC 2's, and only license variables and WebSocket features are refused by plan.
func TestDocsAgreeWithServer(t *testing.T) {
	doc, err := os.ReadFile("../docs/API.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range documentedNulls {
		if !strings.Contains(string(doc), n.phrase) {
			t.Errorf("docs/API.md no longer says %q is null when absent: update documentedNulls with it", n.phrase)
		}
	}
	for _, phrase := range []string{"free's list is fixed by SPEC 2:\n`users`, `licenses`, `devices`, `logs`", "(`license_variables`, pro or higher) and every WebSocket feature (`websocket`, business)"} {
		if !strings.Contains(string(doc), phrase) {
			t.Errorf("docs/API.md's Plan features no longer says %q", phrase)
		}
	}
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		rc := newReceiver(t, http.StatusOK)
		s := startWithReceiver(t, e, rc)
		o := newOwner(t, s)
		a := api{t, s, o.Token}
		if plan, _ := a.do("GET", "/api/auth/me", nil).Data()["plan"].(map[string]any); plan["name"] != "free" {
			t.Fatalf("a new owner's plan is %v, want free", plan)
		}
		appID, _ := a.createApp("Docs")
		app := "/api/apps/" + appID
		hooks := map[string]string{}
		for name, u := range map[string]string{"delivered": rc.URL + "/hook", "refused": "https://127.0.0.1:1/hook"} {
			r := a.do("POST", app+"/integrations", map[string]any{"name": name, "type": "CUSTOM", "webhookUrl": u, "events": []string{"rule.create"}})
			expectOK(t, r, http.StatusCreated)
			hooks[name] = r.Data()["id"].(string)
		}
		// What the free plan can use beyond its features list, as the docs say.
		expectOK(t, a.do("POST", app+"/rules", map[string]any{"type": "ip", "action": "blacklist", "value": "203.0.113.9"}), http.StatusCreated)
		// A deletion's audit entry has no before and after (a creation's holds the record).
		gone := a.do("POST", app+"/rules", map[string]any{"type": "ip", "action": "blacklist", "value": "203.0.113.10"})
		expectOK(t, gone, http.StatusCreated)
		expectOK(t, a.do("DELETE", app+"/rules/"+gone.Data()["id"].(string), nil), http.StatusOK)
		expectOK(t, a.do("POST", app+"/tokens", map[string]any{"count": 1}), http.StatusCreated)
		expectOK(t, a.do("POST", app+"/variables", map[string]any{"key": "motd", "value": "hi"}), http.StatusCreated)
		r := a.do("POST", app+"/users", map[string]any{"username": "alice", "password": "correct horse 1"})
		expectOK(t, r, http.StatusCreated)
		userID := r.Data()["id"].(string)
		r = a.do("POST", app+"/licenses", map[string]any{"count": 1})
		expectOK(t, r, http.StatusCreated)
		licID := r.Data()["licenses"].([]any)[0].(map[string]any)["id"].(string)
		expectOK(t, a.do("POST", "/api/auth/api-keys", map[string]any{"name": "ci", "scopes": []string{"users:read"}}), http.StatusCreated)
		// The two features refused by plan.
		expect(t, a.do("POST", app+"/licenses/"+licID+"/variables", map[string]any{"key": "tier", "value": "gold"}), http.StatusForbidden, "PLAN_FEATURE")
		expect(t, a.do("GET", app+"/ws/online", nil), http.StatusForbidden, "PLAN_FEATURE")

		plans := a.do("GET", "/api/plans", nil)
		expectOK(t, plans, http.StatusOK)
		list, _ := plans.Body["data"].([]any)
		if len(list) != 3 {
			t.Fatalf("plans: %s", plans.Raw)
		}
		free := list[0].(map[string]any)
		limits := free["limits"].(map[string]any)
		if free["name"] != "free" || limits["maxApps"] != float64(1) || limits["maxUsersPerApp"] != float64(15) ||
			limits["maxApiCallsMonth"] != float64(2500) || limits["webSocketAccess"] != false ||
			!reflect.DeepEqual(limits["features"], []any{"users", "licenses", "devices", "logs"}) {
			t.Errorf("free plan %v, want SPEC 2's", free)
		}
		for _, p := range list[1:] {
			features := p.(map[string]any)["limits"].(map[string]any)["features"].([]any)
			if !reflect.DeepEqual(features[:4], []any{"users", "licenses", "devices", "logs"}) || !contains(features, "license_variables") {
				t.Errorf("plan %v: features %v", p.(map[string]any)["name"], features)
			}
		}

		// Wait until both deliveries have had their first attempt.
		deliveryOf := map[string]string{}
		for deadline := time.Now().Add(15 * time.Second); len(deliveryOf) < 2; time.Sleep(20 * time.Millisecond) {
			for name, id := range hooks {
				path := app + "/integrations/" + id + "/deliveries"
				if list := a.do("GET", path, nil).Data()["attempts"].([]any); len(list) > 0 {
					d := a.do("GET", path+"/"+list[0].(map[string]any)["deliveryId"].(string), nil).Data()
					if (name == "delivered" && d["state"] == "delivered") || (name == "refused" && d["attempts"] == float64(1)) {
						deliveryOf[name] = path + "/" + d["id"].(string)
					}
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("deliveries not attempted: %v", deliveryOf)
			}
		}

		answers := map[string]string{
			"plans": "/api/plans", "me": "/api/auth/me", "api-keys": "/api/auth/api-keys", "apps": "/api/apps", "app": app,
			"stats": app + "/stats", "users": app + "/users", "user": app + "/users/" + userID, "licenses": app + "/licenses",
			"license": app + "/licenses/" + licID, "seats": app + "/licenses/" + licID + "/seats", "devices": app + "/devices",
			"tokens": app + "/tokens", "rules": app + "/rules", "logs": app + "/logs", "logs stats": app + "/logs/stats",
			"variables": app + "/variables", "overview": app + "/analytics/overview", "recent": app + "/analytics/recent",
			"files": app + "/files", "integrations": app + "/integrations", "integration": app + "/integrations/" + hooks["delivered"],
			"attempts":             app + "/integrations/" + hooks["refused"] + "/deliveries",
			"delivery (delivered)": deliveryOf["delivered"], "delivery (refused)": deliveryOf["refused"],
			"integration events": "/api/integrations/events",
		}
		// The audit log is written behind the answer; wait for the rule's creation entry.
		auditEntries(t, s, o.Token, "/api/audit?recordType=rules", 3)
		answers["audit"] = "/api/audit?recordType=rules"

		allowed := map[string]bool{}
		for _, n := range documentedNulls {
			for label, paths := range n.at {
				for _, p := range paths {
					allowed[label+p] = true
				}
			}
		}
		nulls := map[string]bool{}
		for label, path := range answers {
			r := a.do("GET", path, nil)
			expectOK(t, r, http.StatusOK)
			if r.Header.Get("X-Request-Id") == "" {
				t.Errorf("GET %s: no X-Request-Id", path)
			}
			walkJSON(label, r.Body, func(p string, v any) {
				switch x := v.(type) {
				case nil:
					nulls[p] = true
					if !allowed[p] {
						t.Errorf("%s (GET %s) is null; docs/API.md says absent values are left out", p, path)
					}
				case string:
					if looksLikeTimestamp.MatchString(x) && !wireTimestamp.MatchString(x) {
						t.Errorf("%s = %q, not RFC 3339 UTC with milliseconds", p, x)
					}
				}
			})
		}
		for p := range allowed {
			if !nulls[p] {
				t.Errorf("%s is documented as null when absent but did not come back null", p)
			}
		}
		refused := a.do("GET", deliveryOf["refused"], nil).Data()
		if _, ok := refused["lastError"].(string); !ok || refused["nextAttemptAt"] == nil {
			t.Errorf("refused delivery %v: want its error and next attempt", refused)
		}
		if a.do("GET", deliveryOf["delivered"], nil).Data()["sent"] == nil {
			t.Error("the delivered delivery has no sent request")
		}

		// X-Request-Id on answers that are not successes or not JSON.
		for _, c := range []struct {
			method, path, token, body string
			status                    int
		}{
			{"GET", "/api/auth/me", "", "", http.StatusUnauthorized},
			{"GET", "/api/no-such-route", o.Token, "", http.StatusNotFound},
			{"DELETE", "/api/plans", "", "", http.StatusMethodNotAllowed},
			{"POST", "/api/apps", o.Token, "{not json", http.StatusBadRequest},
			{"GET", "/healthz", "", "", http.StatusOK},
			{"GET", "/api/openapi.json", "", "", http.StatusOK},
			{"GET", "/api/docs", "", "", http.StatusOK},
			{"GET", "/", "", "", http.StatusOK},
		} {
			req, _ := http.NewRequest(c.method, s.URL+c.path, strings.NewReader(c.body))
			if c.token != "" {
				req.Header.Set("Authorization", "Bearer "+c.token)
			}
			if c.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.status || !uuidLike.MatchString(resp.Header.Get("X-Request-Id")) {
				t.Errorf("%s %s: %d with X-Request-Id %q, want %d with a new id", c.method, c.path, resp.StatusCode, resp.Header.Get("X-Request-Id"), c.status)
			}
		}
		for sent, want := range map[string]string{"trace-42.a:b_c": "trace-42.a:b_c", "not valid!": ""} {
			r := s.Do(t, ts.Req{Method: "GET", Path: "/api/plans", Header: map[string]string{"X-Request-Id": sent}})
			got := r.Header.Get("X-Request-Id")
			if (want != "" && got != want) || (want == "" && !uuidLike.MatchString(got)) {
				t.Errorf("X-Request-Id %q answered %q", sent, got)
			}
		}
	})
}

func contains(list []any, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
