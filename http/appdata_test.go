package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	ts "github.com/keyward/keyward/internal/testserver"
)

func TestVariables(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		a := api{t, s, o.Token}
		id, _ := a.createApp("Vars")
		base := "/api/apps/" + id + "/variables"

		t.Run("app variables are typed", func(t *testing.T) {
			bad := []map[string]any{{"key": "", "value": "x"}, {"key": "n", "value": "x", "type": "INT"},
				{"key": "n", "value": "1.5", "type": "INT"}, {"key": "f", "value": "abc", "type": "FLOAT"},
				{"key": "b", "value": "yes", "type": "BOOL"}, {"key": "j", "value": "{oops", "type": "JSON"},
				{"key": "t", "value": "x", "type": "DATE"}, {"key": "v"}}
			for _, b := range bad {
				expect(t, a.do("POST", base, b), http.StatusBadRequest, "VALIDATION_ERROR")
			}
			for _, v := range []map[string]any{{"key": "name", "value": "Game"}, {"key": "max", "value": 10, "type": "INT"},
				{"key": "ratio", "value": "0.5", "type": "float"}, {"key": "on", "value": true, "type": "BOOL"},
				{"key": "cfg", "value": `{"a":[1,2]}`, "type": "JSON"}} {
				expectOK(t, a.do("POST", base, v), http.StatusCreated)
			}
			expect(t, a.do("POST", base, map[string]any{"key": "name", "value": "again"}), http.StatusConflict, "CONFLICT")
			r := a.do("GET", base, nil)
			expectOK(t, r, http.StatusOK)
			var keys []string
			for _, v := range r.Body["data"].([]any) {
				keys = append(keys, v.(map[string]any)["key"].(string))
			}
			if fmt.Sprint(keys) != "[cfg max name on ratio]" {
				t.Fatalf("not sorted by key: %v", keys)
			}
			if v := r.Body["data"].([]any)[1].(map[string]any); v["value"] != "10" || v["type"] != "INT" {
				t.Fatalf("number value not kept as text: %v", v)
			}
		})
		t.Run("update re-checks the type", func(t *testing.T) {
			list := a.do("GET", base, nil).Body["data"].([]any)
			maxID := list[1].(map[string]any)["id"].(string)
			expect(t, a.do("PATCH", base+"/"+maxID, map[string]any{"value": "ten"}), http.StatusBadRequest, "VALIDATION_ERROR")
			expect(t, a.do("PATCH", base+"/"+maxID, map[string]any{"type": "BOOL"}), http.StatusBadRequest, "VALIDATION_ERROR")
			r := a.do("PATCH", base+"/"+maxID, map[string]any{"value": "20"})
			expectOK(t, r, http.StatusOK)
			if r.Data()["value"] != "20" {
				t.Fatalf("%s", r.Raw)
			}
			r = a.do("PATCH", base+"/"+maxID, map[string]any{"type": "STRING", "value": "twenty"})
			expectOK(t, r, http.StatusOK)
			expectOK(t, a.do("DELETE", base+"/"+maxID, nil), http.StatusOK)
			expect(t, a.do("DELETE", base+"/"+maxID, nil), http.StatusNotFound, "NOT_FOUND")
		})
		t.Run("bulk is all or nothing", func(t *testing.T) {
			r := a.do("POST", base+"/bulk", map[string]any{"variables": []map[string]any{
				{"key": "b1", "value": "1", "type": "INT"}, {"key": "b2", "value": "x", "type": "INT"}}})
			expect(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
			if !strings.Contains(string(r.Raw), "variables[1].value") {
				t.Fatalf("field not named: %s", r.Raw)
			}
			expect(t, a.do("POST", base+"/bulk", map[string]any{"variables": []map[string]any{
				{"key": "b1", "value": "1"}, {"key": "name", "value": "dup"}}}), http.StatusConflict, "CONFLICT")
			n := len(a.do("GET", base, nil).Body["data"].([]any))
			r = a.do("POST", base+"/bulk", map[string]any{"variables": []map[string]any{
				{"key": "b1", "value": "1", "type": "INT"}, {"key": "b2", "value": "two"}}})
			expectOK(t, r, http.StatusCreated)
			if got := len(a.do("GET", base, nil).Body["data"].([]any)); got != n+2 {
				t.Fatalf("after bulk: %d, want %d", got, n+2)
			}
		})
		t.Run("user variables", func(t *testing.T) {
			u := a.do("POST", "/api/apps/"+id+"/users", map[string]any{"username": "player", "password": "pw"})
			uid := u.Data()["id"].(string)
			ub := "/api/apps/" + id + "/users/" + uid + "/variables"
			expectOK(t, a.do("POST", ub, map[string]any{"key": "score", "value": "5"}), http.StatusCreated)
			expectOK(t, a.do("POST", ub, map[string]any{"key": "alpha", "value": "a"}), http.StatusCreated)
			r := a.do("GET", ub, nil)
			list := r.Body["data"].([]any)
			if len(list) != 2 || list[0].(map[string]any)["key"] != "alpha" {
				t.Fatalf("user variables: %s", r.Raw)
			}
			expect(t, a.do("GET", "/api/apps/"+id+"/users/nope/variables", nil), http.StatusNotFound, "NOT_FOUND")
			// Deleting the user removes its variables.
			expectOK(t, a.do("DELETE", "/api/apps/"+id+"/users/"+uid, nil), http.StatusOK)
			expect(t, a.do("GET", ub, nil), http.StatusNotFound, "NOT_FOUND")
		})
		t.Run("license variables need Pro", func(t *testing.T) {
			l := a.do("POST", "/api/apps/"+id+"/licenses", map[string]any{"count": 1})
			lid := l.Data()["licenses"].([]any)[0].(map[string]any)["id"].(string)
			lb := "/api/apps/" + id + "/licenses/" + lid + "/variables"
			expect(t, a.do("POST", lb, map[string]any{"key": "tier", "value": "gold"}), http.StatusForbidden, "PLAN_FEATURE")
			expect(t, a.do("GET", lb, nil), http.StatusForbidden, "PLAN_FEATURE")
			setPlan(t, s, o.Username, "pro")
			expectOK(t, a.do("POST", lb, map[string]any{"key": "tier", "value": "gold"}), http.StatusCreated)
			expect(t, a.do("POST", lb, map[string]any{"key": "tier", "value": "silver"}), http.StatusConflict, "CONFLICT")
			expect(t, a.do("POST", lb, map[string]any{"key": "seats", "value": "many", "type": "INT"}), http.StatusBadRequest, "VALIDATION_ERROR")
			if n := len(a.do("GET", lb, nil).Body["data"].([]any)); n != 1 {
				t.Fatalf("license variables: %d", n)
			}
		})
		t.Run("counts and logs", func(t *testing.T) {
			apps := a.do("GET", "/api/apps", nil).Body["data"].([]any)
			if c := apps[0].(map[string]any)["counts"].(map[string]any); c["variables"].(float64) < 5 {
				t.Fatalf("counts: %v", c)
			}
			waitLog(t, a, id, "variable.create")
			waitLog(t, a, id, "variable.update")
			waitLog(t, a, id, "variable.delete")
		})
	})
}

// waitLog waits (bounded) until the app's log has an entry of the event; the log writer
// flushes off the request path.
func waitLog(t *testing.T, a api, appID, event string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := a.do("GET", "/api/apps/"+appID+"/logs?event="+url.QueryEscape(event), nil)
		expectOK(t, r, http.StatusOK)
		if list := r.Data()["logs"].([]any); len(list) > 0 {
			return list[0].(map[string]any)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s log entry", event)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRules(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		id, _ := a.createApp("Rules")
		base := "/api/apps/" + id + "/rules"
		for _, bad := range []map[string]any{{"type": "ip", "action": "blacklist", "value": "10.0.0.0/33"},
			{"type": "ip", "action": "deny", "value": "1.2.3.4"}, {"type": "mac", "action": "blacklist", "value": "x"},
			{"type": "country", "action": "whitelist", "value": "ZZ"}, {"type": "hwid", "action": "blacklist", "value": ""}} {
			expect(t, a.do("POST", base, bad), http.StatusBadRequest, "VALIDATION_ERROR")
		}
		r := a.do("POST", base, map[string]any{"type": "ip", "action": "blacklist", "value": "10.1.2.3/8", "note": "office"})
		expectOK(t, r, http.StatusCreated)
		if r.Data()["value"] != "10.0.0.0/8" || r.Data()["active"] != true {
			t.Fatalf("normalised: %s", r.Raw)
		}
		ruleID := r.Data()["id"].(string)
		expect(t, a.do("POST", base, map[string]any{"type": "ip", "action": "blacklist", "value": "10.0.0.0/8"}), http.StatusConflict, "CONFLICT")
		r = a.do("POST", base+"/bulk", map[string]any{"rules": []map[string]any{{"type": "country", "action": "whitelist", "value": "de"},
			{"type": "hwid", "action": "blacklist", "value": "HW-1"}, {"type": "ip", "action": "whitelist", "value": "2001:db8::/32"}}})
		expectOK(t, r, http.StatusCreated)
		for _, raw := range r.Data()["rules"].([]any) {
			rule := raw.(map[string]any)
			if rule["type"] == "country" && (rule["value"] != "DE" || rule["active"] != false) {
				t.Fatalf("country rule without a country source must be inactive: %v", rule)
			}
		}
		expect(t, a.do("POST", base+"/bulk", map[string]any{"rules": []map[string]any{{"type": "hwid", "action": "blacklist", "value": "HW-2"},
			{"type": "ip", "action": "blacklist", "value": "nope"}}}), http.StatusBadRequest, "VALIDATION_ERROR")
		if n := len(a.do("GET", base, nil).Body["data"].([]any)); n != 4 {
			t.Fatalf("rules: %d", n)
		}
		if n := len(a.do("GET", base+"?type=ip", nil).Body["data"].([]any)); n != 2 {
			t.Fatalf("type filter: %d", n)
		}
		if n := len(a.do("GET", base+"?type=ip&action=whitelist", nil).Body["data"].([]any)); n != 1 {
			t.Fatalf("action filter: %d", n)
		}
		expect(t, a.do("GET", base+"?type=mac", nil), http.StatusBadRequest, "VALIDATION_ERROR")
		r = a.do("PATCH", base+"/"+ruleID, map[string]any{"enabled": false, "value": "192.168.0.0/16"})
		expectOK(t, r, http.StatusOK)
		if r.Data()["enabled"] != false || r.Data()["value"] != "192.168.0.0/16" || r.Data()["active"] != false {
			t.Fatalf("update: %s", r.Raw)
		}
		expect(t, a.do("PATCH", base+"/"+ruleID, map[string]any{"value": "not-an-ip"}), http.StatusBadRequest, "VALIDATION_ERROR")
		expectOK(t, a.do("DELETE", base+"/"+ruleID, nil), http.StatusOK)
		expect(t, a.do("DELETE", base+"/"+ruleID, nil), http.StatusNotFound, "NOT_FOUND")
		waitLog(t, a, id, "rule.delete")
	})
}

func TestLogs(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		a := api{t, s, o.Token}
		id, _ := a.createApp("Logs")
		for _, name := range []string{"Zed", "zora", "amy"} {
			a.do("POST", "/api/apps/"+id+"/users", map[string]any{"username": name, "password": "pw"})
		}
		a.do("POST", "/api/apps/"+id+"/licenses", map[string]any{"count": 2})
		entry := waitLog(t, a, id, "user.create")
		for _, k := range []string{"id", "event", "message", "username", "ipAddress", "level", "createdAt"} {
			if _, ok := entry[k]; !ok {
				t.Fatalf("log entry lacks %s: %v", k, entry)
			}
		}
		deadline := time.Now().Add(30 * time.Second)
		for a.do("GET", "/api/apps/"+id+"/logs?event=user.create", nil).Data()["total"] != float64(3) {
			if time.Now().After(deadline) {
				t.Fatal("3 user.create entries not logged")
			}
			time.Sleep(50 * time.Millisecond)
		}
		waitLog(t, a, id, "license.create") // logs are written in batches: the 4th INFO entry
		r := a.do("GET", "/api/apps/"+id+"/logs?username=Z", nil)
		if r.Data()["total"] != float64(2) {
			t.Fatalf("username filter: %s", r.Raw)
		}
		r = a.do("GET", "/api/apps/"+id+"/logs?level=INFO&limit=2", nil)
		if len(r.Data()["logs"].([]any)) != 2 || r.Data()["total"].(float64) < 4 {
			t.Fatalf("level filter and paging: %s", r.Raw)
		}
		future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		if r := a.do("GET", "/api/apps/"+id+"/logs?startDate="+future, nil); r.Data()["total"] != float64(0) {
			t.Fatalf("startDate: %s", r.Raw)
		}
		for _, q := range []string{"?startDate=yesterday", "?level=LOUD", "?limit=0",
			"?startDate=2030-01-02T00:00:00Z&endDate=2030-01-01T00:00:00Z"} {
			expect(t, a.do("GET", "/api/apps/"+id+"/logs"+q, nil), http.StatusBadRequest, "VALIDATION_ERROR")
		}
		st := a.do("GET", "/api/apps/"+id+"/logs/stats", nil)
		expectOK(t, st, http.StatusOK)
		if st.Data()["byEvent"].(map[string]any)["user.create"] != float64(3) || st.Data()["total"].(float64) < 4 {
			t.Fatalf("stats: %s", st.Raw)
		}
		expect(t, a.do("GET", "/api/apps/"+id+"/logs/stats?hours=0", nil), http.StatusBadRequest, "VALIDATION_ERROR")
		ev := a.do("GET", "/api/apps/"+id+"/logs/events", nil)
		names := fmt.Sprint(ev.Body["data"])
		if !strings.Contains(names, "user.create") || !strings.Contains(names, "license.create") {
			t.Fatalf("events: %s", ev.Raw)
		}
		expect(t, a.do("DELETE", "/api/apps/"+id+"/logs?days=-1", nil), http.StatusBadRequest, "VALIDATION_ERROR")
		r = a.do("DELETE", "/api/apps/"+id+"/logs?days=1", nil)
		expectOK(t, r, http.StatusOK)
		if r.Data()["deleted"] != float64(0) {
			t.Fatalf("purge of recent entries: %s", r.Raw)
		}
		s.Clock().Advance(48 * time.Hour)
		defer s.Clock().Advance(-48 * time.Hour)
		a.token = login(t, s, o.Username, o.Password, "").Data()["token"].(string) // the old JWT has expired
		r = a.do("DELETE", "/api/apps/"+id+"/logs?days=1", nil)
		expectOK(t, r, http.StatusOK)
		if r.Data()["deleted"] != float64(4) { // 3 user.create and 1 license.create
			t.Fatalf("purge: %s", r.Raw)
		}
		stranger := api{t, s, newOwner(t, s).Token}
		expect(t, stranger.do("GET", "/api/apps/"+id+"/logs", nil), http.StatusNotFound, "NOT_FOUND")
	})
}

func TestAnalytics(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		id, _ := a.createApp("Stats")
		base := "/api/apps/" + id + "/analytics"
		a.do("POST", "/api/apps/"+id+"/users", map[string]any{"username": "fresh", "password": "pw"})
		a.do("POST", "/api/apps/"+id+"/licenses", map[string]any{"count": 3})
		waitLog(t, a, id, "license.create")

		r := a.do("GET", base+"/overview", nil)
		expectOK(t, r, http.StatusOK)
		d := r.Data()
		if d["period"] != "24h" || d["users"].(map[string]any)["total"] != float64(1) || d["users"].(map[string]any)["new"] != float64(1) ||
			d["licenses"].(map[string]any)["unused"] != float64(3) || d["activity"].(map[string]any)["logins"] != float64(0) {
			t.Fatalf("overview: %s", r.Raw)
		}
		expect(t, a.do("GET", base+"/overview?period=2d", nil), http.StatusBadRequest, "VALIDATION_ERROR")

		r = a.do("GET", base+"/timeseries?period=24h&event=user.create", nil)
		expectOK(t, r, http.StatusOK)
		// Sums, not positions: the test may straddle an hour or a midnight.
		sum := func(points []any) (n float64) {
			for _, p := range points {
				n += p.(map[string]any)["count"].(float64)
			}
			return n
		}
		if points := r.Body["data"].([]any); len(points) != 24 || sum(points) != 1 {
			t.Fatalf("hourly series: %s", r.Raw)
		}
		r = a.do("GET", base+"/timeseries?event=license.create", nil)
		if points := r.Body["data"].([]any); len(points) != 7 || sum(points) != 1 {
			t.Fatalf("daily series: %s", r.Raw)
		}
		if r := a.do("GET", base+"/timeseries?period=30d", nil); len(r.Body["data"].([]any)) != 30 {
			t.Fatalf("30d series: %s", r.Raw)
		}
		expect(t, a.do("GET", base+"/timeseries?period=1y", nil), http.StatusBadRequest, "VALIDATION_ERROR")
		r = a.do("GET", base+"/geography", nil)
		expectOK(t, r, http.StatusOK)
		if len(r.Body["data"].([]any)) != 0 {
			t.Fatalf("geography without countries: %s", r.Raw)
		}
		r = a.do("GET", base+"/recent?limit=1", nil)
		if list := r.Body["data"].([]any); len(list) != 1 || list[0].(map[string]any)["event"] == nil {
			t.Fatalf("recent: %s", r.Raw)
		}
		expect(t, a.do("GET", base+"/recent?limit=0", nil), http.StatusBadRequest, "VALIDATION_ERROR")
	})
}
