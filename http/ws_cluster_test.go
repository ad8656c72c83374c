package httpapi_test

import (
	"net/http"
	"net/url"
	"testing"

	ts "github.com/keyward/keyward/internal/testserver"
)

// TestWebSocketAcrossNodes runs the socket channels on two nodes sharing MongoDB and Redis:
// presence, deliveries, the one-socket-per-user rule and revalidation hold across nodes.
func TestWebSocketAcrossNodes(t *testing.T) {
	env := ts.Env(t, ts.Engines{Name: "mongo+redis", Mongo: true, Redis: true})
	a := ts.StartEnv(t, env)
	b := ts.StartEnv(t, env)
	w := newWSApp(t, a, "zoe")
	onB := api{t, b, w.a.token}
	base := "/api/apps/" + w.appID + "/ws"

	cl := mustDialWS(t, a, w.clientSocketAt, w.client.ip)
	cl.send(map[string]any{"type": "ping"})
	cl.expectType("pong")

	// Node B sees the socket held by node A, and its dashboard gets A's client's messages.
	dash := mustDialWS(t, b, base+"/connect?token="+url.QueryEscape(w.a.token), nextIP())
	dash.ignore = []string{"session_connect"}
	if d := dash.expectType("online_count"); d["count"] != float64(1) {
		t.Fatalf("online_count on B: %v", d)
	}
	dash.expectType("sessions")
	cl.send(map[string]any{"type": "chat", "message": "from A"})
	if d := dash.expectType("chat", "session_connect"); d["message"] != "from A" {
		t.Fatalf("chat on B: %v", d)
	}

	// REST calls on node B reach the socket on node A.
	r := onB.do("POST", base+"/broadcast", map[string]any{"message": "hello cluster"})
	expectOK(t, r, http.StatusOK)
	if r.Data()["onlineUsers"] != float64(1) {
		t.Fatalf("broadcast on B: %s", r.Raw)
	}
	if d := cl.expectType("message"); d["message"] != "hello cluster" {
		t.Fatalf("broadcast at the client on A: %v", d)
	}
	expectOK(t, onB.do("POST", base+"/chat", map[string]any{"userId": w.userID, "message": "psst"}), http.StatusOK)
	if d := cl.expectType("chat"); d["message"] != "psst" {
		t.Fatalf("chat at the client on A: %v", d)
	}

	// A hook created on node B runs on node A at once, although A's app actor had already
	// loaded the app's hooks (none): the change invalidates A's app actor over the bus.
	cl.send(map[string]any{"type": "greet"})
	dash.expectType("custom_event", "chat")
	expectOK(t, onB.do("POST", base+"/hooks", map[string]any{"name": "hello", "event": "greet",
		"actions": []any{map[string]any{"type": "respond", "message": "hello {{username}}"}}}), http.StatusCreated)
	waitFor(t, func() bool {
		// The pong after the greet says whether the hook answered it.
		cl.send(map[string]any{"type": "greet"})
		cl.send(map[string]any{"type": "ping"})
		answered := false
		for m := cl.next(); m["type"] != "pong"; m = cl.next() {
			d, _ := m["data"].(map[string]any)
			answered = answered || m["type"] == "message" && d["message"] == "hello zoe"
		}
		return answered
	})

	// The same user connecting on node B replaces the socket on node A.
	onBClient := mustDialWS(t, b, w.clientSocketAt, w.client.ip)
	cl.expectType("force_logout")
	if code, _ := cl.expectClosed(); code != 4003 {
		t.Fatalf("replaced socket on A closed with %d", code)
	}
	onBClient.send(map[string]any{"type": "ping"})
	onBClient.expectType("pong")
	waitFor(t, func() bool { return w.a.do("GET", base+"/online", nil).Data()["count"] == float64(1) })

	// Pausing the app on node A ends the socket on node B at once (not at the 30 s check).
	expectOK(t, w.a.do("PATCH", "/api/apps/"+w.appID, map[string]any{"paused": true}), http.StatusOK)
	if d := onBClient.expectType("force_logout"); d["reason"] == "" {
		t.Fatalf("paused app: %v", d)
	}
	if code, _ := onBClient.expectClosed(); code != 4000 {
		t.Fatalf("paused app closed the socket with %d", code)
	}
	waitFor(t, func() bool { return onB.do("GET", base+"/online", nil).Data()["count"] == float64(0) })
}
