package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"

	ts "github.com/keyward/keyward/internal/testserver"
)

func TestWebSocketHooks(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		w := newWSApp(t, s, "hugo")
		hooksAt := "/api/apps/" + w.appID + "/ws/hooks"

		r := w.a.do("POST", hooksAt, map[string]any{
			"name": "greet", "event": "join_room", "priority": 5,
			"conditions": []any{map[string]any{"field": "data.room", "operator": "eq", "value": "lobby"}},
			"actions": []any{
				map[string]any{"type": "respond", "message": "welcome {{username}} to {{data.room}}"},
				map[string]any{"type": "log", "message": "{{username}} joined"},
			},
		})
		expectOK(t, r, http.StatusCreated)
		greet := r.Data()
		if greet["enabled"] != true || greet["priority"] != float64(5) || len(greet["actions"].([]any)) != 2 {
			t.Fatalf("created hook: %s", r.Raw)
		}
		r = w.a.do("POST", hooksAt, map[string]any{"name": "first", "event": "join_room",
			"actions": []any{map[string]any{"type": "respond", "message": "first!"}}})
		expectOK(t, r, http.StatusCreated)
		first := r.Data()["id"].(string)
		r = w.a.do("GET", hooksAt, nil)
		expectOK(t, r, http.StatusOK)
		list := r.Data()["hooks"].([]any)
		if r.Data()["count"] != float64(2) || list[0].(map[string]any)["name"] != "first" || list[1].(map[string]any)["name"] != "greet" {
			t.Fatalf("hooks by priority: %s", r.Raw)
		}

		cl := w.clientSocket(t, s)
		dash := w.openDashboard(t, s)

		// Matching: both hooks respond, in priority order, and the dashboard sees the event.
		cl.send(map[string]any{"type": "join_room", "data": map[string]any{"room": "lobby"}})
		if d := cl.expectType("message"); d["message"] != "first!" {
			t.Fatalf("first response: %v", d)
		}
		if d := cl.expectType("message"); d["message"] != "welcome hugo to lobby" || d["type"] != "info" {
			t.Fatalf("templated response: %v", d)
		}
		if d := dash.expectType("custom_event", "session_connect"); d["event"] != "join_room" {
			t.Fatalf("custom_event: %v", d)
		}
		// Not matching: only the unconditional hook.
		cl.send(map[string]any{"type": "join_room", "data": map[string]any{"room": "cellar"}})
		if d := cl.expectType("message"); d["message"] != "first!" {
			t.Fatalf("unconditional hook: %v", d)
		}
		cl.send(map[string]any{"type": "ping"})
		cl.expectType("pong")

		// The log action wrote a log entry.
		waitFor(t, func() bool {
			r := w.a.do("GET", "/api/apps/"+w.appID+"/logs?event=ws.hook", nil)
			return r.Status == http.StatusOK && fmt.Sprint(r.Data()["total"]) == "1"
		})

		// Disabled hooks do not run; the change is seen at once.
		expectOK(t, w.a.do("PATCH", hooksAt+"/"+first, map[string]any{"enabled": false}), http.StatusOK)
		cl.send(map[string]any{"type": "join_room", "data": map[string]any{"room": "cellar"}})
		cl.send(map[string]any{"type": "ping"})
		cl.expectType("pong")

		// Bad input gets the envelope and changes nothing.
		for name, body := range map[string]map[string]any{
			"system event":   {"name": "x", "event": "chat", "actions": []any{map[string]any{"type": "respond", "message": "m"}}},
			"no actions":     {"name": "x", "event": "e", "actions": []any{}},
			"six actions":    {"name": "x", "event": "e", "actions": []any{respond(), respond(), respond(), respond(), respond(), respond()}},
			"priority 1000":  {"name": "x", "event": "e", "priority": 1000, "actions": []any{respond()}},
			"bad operator":   {"name": "x", "event": "e", "actions": []any{respond()}, "conditions": []any{map[string]any{"field": "a", "operator": "like", "value": "b"}}},
			"unknown action": {"name": "x", "event": "e", "actions": []any{map[string]any{"type": "explode"}}},
			"long name":      {"name": string(make([]byte, 101)), "event": "e", "actions": []any{respond()}},
		} {
			r := w.a.do("POST", hooksAt, body)
			if r.Status != http.StatusBadRequest || r.Code() != "VALIDATION_ERROR" {
				t.Fatalf("%s: %d %s", name, r.Status, r.Raw)
			}
		}
		expect(t, w.a.do("PATCH", hooksAt+"/"+first, map[string]any{"priority": -1}), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, w.a.do("PATCH", hooksAt+"/no-such-hook", map[string]any{"enabled": true}), http.StatusNotFound, "NOT_FOUND")
		expect(t, w.a.do("DELETE", hooksAt+"/no-such-hook", nil), http.StatusNotFound, "NOT_FOUND")
		if r := w.a.do("GET", hooksAt, nil); r.Data()["count"] != float64(2) {
			t.Fatalf("hooks after refused changes: %s", r.Raw)
		}

		// At most 20 hooks per app.
		for i := 2; i < 20; i++ {
			expectOK(t, w.a.do("POST", hooksAt, map[string]any{"name": fmt.Sprintf("h%d", i), "event": "noop", "actions": []any{respond()}}), http.StatusCreated)
		}
		expect(t, w.a.do("POST", hooksAt, map[string]any{"name": "h21", "event": "noop", "actions": []any{respond()}}), http.StatusForbidden, "PLAN_LIMIT")

		// A ban action bans the sender and ends the socket.
		expectOK(t, w.a.do("DELETE", hooksAt+"/"+first, nil), http.StatusOK)
		expectOK(t, w.a.do("POST", hooksAt, map[string]any{"name": "anticheat", "event": "cheat",
			"actions": []any{map[string]any{"type": "ban", "reason": "caught {{data.what}}"}}}), http.StatusCreated)
		cl.send(map[string]any{"type": "cheat", "data": map[string]any{"what": "speedhack"}})
		if d := cl.expectType("banned"); d["reason"] != "caught speedhack" {
			t.Fatalf("banned by a hook: %v", d)
		}
		if code, _ := cl.expectClosed(); code != 4002 {
			t.Fatalf("closed with %d", code)
		}
	})
}

func respond() map[string]any { return map[string]any{"type": "respond", "message": "ok"} }
