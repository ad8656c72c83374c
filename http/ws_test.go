package httpapi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	ts "github.com/keyward/keyward/internal/testserver"
)

// wsConn is a test socket: JSON messages in and out, every read bounded in time.
type wsConn struct {
	t    *testing.T
	conn *websocket.Conn
	// ignore lists types expectType always skips unless asked for: a dashboard's
	// session_connect of a client that connected just before it may come at any time.
	ignore []string
}

// dialWS opens a socket on path (with its query) from ip, as an SDK does: a plain GET
// upgrade, no subprotocol, no Origin.
func dialWS(t *testing.T, s *ts.Server, path, ip string) (*wsConn, *http.Response, error) {
	t.Helper()
	u := "ws" + strings.TrimPrefix(s.URL, "http") + path
	h := http.Header{}
	if ip != "" {
		h.Set("X-Forwarded-For", ip)
	}
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	conn, resp, err := d.Dial(u, h)
	if err != nil {
		return nil, resp, err
	}
	t.Cleanup(func() { conn.Close() })
	return &wsConn{t: t, conn: conn}, resp, nil
}

func mustDialWS(t *testing.T, s *ts.Server, path, ip string) *wsConn {
	t.Helper()
	c, resp, err := dialWS(t, s, path, ip)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s: %v (status %d)", path, err, status)
	}
	return c
}

func (c *wsConn) send(msg map[string]any) {
	c.t.Helper()
	if err := c.conn.WriteJSON(msg); err != nil {
		c.t.Fatalf("send %v: %v", msg, err)
	}
}

// next answers the next message, failing after 20 s.
func (c *wsConn) next() map[string]any {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	kind, raw, err := c.conn.ReadMessage()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	if kind != websocket.TextMessage {
		c.t.Fatalf("frame kind %d, want text", kind)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		c.t.Fatalf("not JSON: %q", raw)
	}
	return m
}

// expectType reads messages until one of type typ (skipping the types in skip) and
// answers its data.
func (c *wsConn) expectType(typ string, skip ...string) map[string]any {
	c.t.Helper()
	for {
		m := c.next()
		if m["type"] == typ {
			d, _ := m["data"].(map[string]any)
			return d
		}
		skipped := false
		for _, s := range append(skip, c.ignore...) {
			skipped = skipped || m["type"] == s
		}
		if !skipped {
			c.t.Fatalf("got %v, want a %s message", m, typ)
		}
	}
}

// expectClosed reads until the server closes the socket and answers the close code and
// reason; other messages before it are skipped.
func (c *wsConn) expectClosed() (int, string) {
	c.t.Helper()
	for {
		_ = c.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, _, err := c.conn.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code, ce.Text
		}
		c.t.Fatalf("socket ended without a close frame: %v", err)
	}
}

// wsApp is a Business owner's app with one logged-in SDK client.
type wsApp struct {
	a              api
	appID          string
	userID         string
	username       string
	client         *sdk
	clientSocketAt string
}

func newWSApp(t *testing.T, s *ts.Server, username string) wsApp {
	t.Helper()
	o := newOwner(t, s)
	setPlan(t, s, o.Username, "business")
	a := api{t, s, o.Token}
	appID, secret := a.createApp("Sockets")
	r := a.do("POST", "/api/apps/"+appID+"/users", map[string]any{"username": username, "password": "pw-" + username + "-1"})
	expectOK(t, r, http.StatusCreated)
	c := newSDK(t, s, secret)
	c.mustInit()
	expectOK(t, c.withNonce("login", map[string]any{"username": username, "password": "pw-" + username + "-1"}), http.StatusOK)
	return wsApp{a: a, appID: appID, userID: r.Data()["id"].(string), username: username, client: c,
		clientSocketAt: "/api/client/ws?token=" + url.QueryEscape(c.token)}
}

// clientSocket opens the SDK client's socket and waits for it to be admitted (a pong).
func (w wsApp) clientSocket(t *testing.T, s *ts.Server) *wsConn {
	t.Helper()
	c := mustDialWS(t, s, w.clientSocketAt, w.client.ip)
	c.send(map[string]any{"type": "ping"})
	c.expectType("pong")
	return c
}

// openDashboard opens a dashboard socket and reads its first two messages.
func (w wsApp) openDashboard(t *testing.T, s *ts.Server) *wsConn {
	t.Helper()
	d := w.dashboard(t, s)
	d.expectType("online_count")
	d.expectType("sessions")
	return d
}

func (w wsApp) dashboard(t *testing.T, s *ts.Server) *wsConn {
	t.Helper()
	d := mustDialWS(t, s, "/api/apps/"+w.appID+"/ws/connect?token="+url.QueryEscape(w.a.token), nextIP())
	d.ignore = []string{"session_connect"}
	return d
}

func TestWebSocketChannels(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		w := newWSApp(t, s, "wendy")
		base := "/api/apps/" + w.appID + "/ws"

		cl := w.clientSocket(t, s)

		// The dashboard gets online_count and sessions at once.
		dash := w.dashboard(t, s)
		if d := dash.expectType("online_count"); d["count"] != float64(1) {
			t.Fatalf("online_count: %v", d)
		}
		sessions := dash.expectType("sessions")["sessions"].([]any)
		if len(sessions) != 1 || sessions[0].(map[string]any)["username"] != "wendy" || sessions[0].(map[string]any)["ip"] != w.client.ip {
			t.Fatalf("sessions: %v", sessions)
		}
		dash.send(map[string]any{"type": "ping"})
		dash.expectType("pong", "session_connect") // the client's connect may come late

		// The node's gauges count its sockets.
		resp, err := http.Get(s.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		metrics, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range []string{`keyward_ws_sockets{channel="client"} 1`, `keyward_ws_sockets{channel="dashboard"} 1`,
			`keyward_ws_bus_deliveries_total{direction="published"}`, `keyward_ws_bus_deliveries_total{direction="received"}`} {
			if !strings.Contains(string(metrics), line) {
				t.Fatalf("metrics lack %q", line)
			}
		}

		// REST helpers see the same.
		r := w.a.do("GET", base+"/online", nil)
		expectOK(t, r, http.StatusOK)
		if r.Data()["count"] != float64(1) {
			t.Fatalf("online: %s", r.Raw)
		}
		r = w.a.do("GET", base+"/sessions", nil)
		expectOK(t, r, http.StatusOK)
		if r.Data()["count"] != float64(1) || r.Data()["sessions"].([]any)[0].(map[string]any)["userId"] != w.userID {
			t.Fatalf("sessions: %s", r.Raw)
		}

		// Client to dashboard: chat, status, typing, custom events.
		cl.send(map[string]any{"type": "chat", "message": "hello & welcome"})
		if d := dash.expectType("chat", "session_connect"); d["message"] != "hello & welcome" || d["username"] != "wendy" || d["userId"] != w.userID {
			t.Fatalf("chat at the dashboard: %v", d)
		}
		cl.send(map[string]any{"type": "set_status", "status": "away"})
		if d := dash.expectType("status"); d["status"] != "away" {
			t.Fatalf("status at the dashboard: %v", d)
		}
		cl.send(map[string]any{"type": "typing", "typing": true})
		if d := dash.expectType("typing"); d["typing"] != true {
			t.Fatalf("typing at the dashboard: %v", d)
		}
		cl.send(map[string]any{"type": "set_metadata", "metadata": map[string]any{"level": 3, "map": "dust"}})
		cl.send(map[string]any{"type": "game_over", "data": map[string]any{"score": 42}})
		if d := dash.expectType("custom_event"); d["event"] != "game_over" || d["data"].(map[string]any)["score"] != float64(42) {
			t.Fatalf("custom_event: %v", d)
		}
		r = w.a.do("GET", base+"/sessions", nil)
		got := r.Data()["sessions"].([]any)[0].(map[string]any)
		if got["status"] != "away" || got["metadata"].(map[string]any)["map"] != "dust" {
			t.Fatalf("status and metadata in sessions: %s", r.Raw)
		}

		// Dashboard to client, over REST and over the socket.
		expectOK(t, w.a.do("POST", base+"/chat", map[string]any{"userId": w.userID, "message": "hi wendy"}), http.StatusOK)
		if d := cl.expectType("chat"); d["message"] != "hi wendy" {
			t.Fatalf("chat at the client: %v", d)
		}
		dash.send(map[string]any{"type": "chat", "userId": w.userID, "message": "from the socket"})
		if d := cl.expectType("chat"); d["message"] != "from the socket" {
			t.Fatalf("socket chat at the client: %v", d)
		}
		dash.send(map[string]any{"type": "typing", "userId": w.userID, "typing": true})
		if d := cl.expectType("typing"); d["typing"] != true {
			t.Fatalf("typing at the client: %v", d)
		}
		r = w.a.do("POST", base+"/broadcast", map[string]any{"message": "maintenance at 5", "type": "warning"})
		expectOK(t, r, http.StatusOK)
		if r.Data()["sent"] != true || r.Data()["onlineUsers"] != float64(1) {
			t.Fatalf("broadcast: %s", r.Raw)
		}
		if d := cl.expectType("message"); d["message"] != "maintenance at 5" || d["type"] != "warning" {
			t.Fatalf("broadcast at the client: %v", d)
		}
		expectOK(t, w.a.do("POST", base+"/command", map[string]any{"command": "reload", "userId": w.userID, "payload": map[string]any{"hard": true}}), http.StatusOK)
		if d := cl.expectType("command"); d["command"] != "reload" || d["payload"].(map[string]any)["hard"] != true {
			t.Fatalf("command at the client: %v", d)
		}
		expectOK(t, w.a.do("POST", base+"/push", map[string]any{"payload": map[string]any{"banner": "sale"}}), http.StatusOK)
		if d := cl.expectType("custom"); d["banner"] != "sale" {
			t.Fatalf("push at the client: %v", d)
		}

		// Variable changes reach the sockets (app variables to all, user variables to the user).
		expectOK(t, w.a.do("POST", "/api/apps/"+w.appID+"/variables", map[string]any{"key": "motd", "value": "7", "type": "INT"}), http.StatusCreated)
		if d := cl.expectType("variable_update"); d["key"] != "motd" || d["value"] != "7" || d["type"] != "INT" {
			t.Fatalf("variable_update: %v", d)
		}
		expectOK(t, w.client.call("set-user-variable", map[string]any{"key": "last_seen", "value": "now"}), http.StatusOK)
		if d := cl.expectType("user_variable_update"); d["key"] != "last_seen" || d["value"] != "now" {
			t.Fatalf("user_variable_update: %v", d)
		}

		// Bad input: the envelope, and nothing sent.
		expect(t, w.a.do("POST", base+"/broadcast", map[string]any{"type": "info"}), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, w.a.do("POST", base+"/broadcast", map[string]any{"message": "x", "type": "loud"}), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, w.a.do("POST", base+"/chat", map[string]any{"message": "to nobody"}), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, w.a.do("POST", base+"/push", map[string]any{"userId": w.userID}), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, w.a.do("POST", base+"/command", map[string]any{"payload": map[string]any{}}), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, w.a.do("POST", base+"/chat", "not json"), http.StatusBadRequest, "VALIDATION_ERROR")
		cl.send(map[string]any{"type": "set_metadata", "metadata": "flat"})
		cl.expectType("error")
		cl.send(map[string]any{"type": "set_status", "status": strings.Repeat("s", 33)})
		cl.expectType("error")
		if err := cl.conn.WriteMessage(websocket.TextMessage, []byte("not json")); err != nil {
			t.Fatal(err)
		}
		cl.expectType("error")
		cl.send(map[string]any{"type": "ping"})
		cl.expectType("pong") // the socket lives on after bad messages

		// Kick: the socket is told why (force_logout, SPEC 6.3), then closes with the reason.
		r = w.a.do("POST", base+"/users/"+w.userID+"/kick", map[string]any{"reason": "be nice"})
		expectOK(t, r, http.StatusOK)
		if d := cl.expectType("force_logout"); d["reason"] != "be nice" {
			t.Fatalf("kicked socket told: %v", d)
		}
		if code, reason := cl.expectClosed(); code != 4001 || reason != "be nice" {
			t.Fatalf("kick closed with %d %q", code, reason)
		}
		if d := dash.expectType("session_disconnect", "custom_event", "chat", "typing", "status"); d["userId"] != w.userID {
			t.Fatalf("session_disconnect: %v", d)
		}
		waitFor(t, func() bool { return w.a.do("GET", base+"/online", nil).Data()["count"] == float64(0) })
	})
}

func TestWebSocketAdmission(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		w := newWSApp(t, s, "xena")
		base := "/api/apps/" + w.appID + "/ws"

		// A bad token is told why after the upgrade (SDKs cannot read a refused upgrade).
		bad := mustDialWS(t, s, "/api/client/ws?token=nope", w.client.ip)
		if d := bad.expectType("force_logout"); d["code"] != "UNAUTHORIZED" {
			t.Fatalf("bad token: %v", d)
		}
		if code, _ := bad.expectClosed(); code != 1008 {
			t.Fatalf("bad token closed with %d", code)
		}
		// Another address than the session's: IP pinning.
		other := mustDialWS(t, s, w.clientSocketAt, nextIP())
		if d := other.expectType("force_logout"); d["code"] != "UNAUTHORIZED" {
			t.Fatalf("other address: %v", d)
		}
		// A session that did not log in.
		fresh := newSDK(t, s, "")
		fresh.secret = w.client.secret
		fresh.mustInit()
		anon := mustDialWS(t, s, "/api/client/ws?token="+url.QueryEscape(fresh.token), fresh.ip)
		if d := anon.expectType("force_logout"); d["code"] != "NOT_LOGGED_IN" {
			t.Fatalf("anonymous session: %v", d)
		}

		// One socket per user: the newer wins, the older is told and closed.
		first := w.clientSocket(t, s)
		second := mustDialWS(t, s, w.clientSocketAt, w.client.ip)
		if d := first.expectType("force_logout"); d["reason"] == "" {
			t.Fatalf("replaced: %v", d)
		}
		if code, _ := first.expectClosed(); code != 4003 {
			t.Fatalf("replaced socket closed with %d", code)
		}
		second.send(map[string]any{"type": "ping"})
		second.expectType("pong")
		waitFor(t, func() bool { return w.a.do("GET", base+"/online", nil).Data()["count"] == float64(1) })

		// The client message rate: 20 per 10 s (one ping is already counted), then error,
		// and the socket stays.
		for range 19 {
			second.send(map[string]any{"type": "ping"})
			second.expectType("pong")
		}
		second.send(map[string]any{"type": "ping"})
		if d := second.expectType("error"); !strings.Contains(d["message"].(string), "rate limited") {
			t.Fatalf("rate limit: %v", d)
		}

		// Ban: banned, then closed, and the user is banned in storage.
		r := w.a.do("POST", base+"/users/"+w.userID+"/ban", map[string]any{"reason": "cheating"})
		expectOK(t, r, http.StatusOK)
		if d := second.expectType("banned", "error"); d["reason"] != "cheating" {
			t.Fatalf("banned: %v", d)
		}
		if code, _ := second.expectClosed(); code != 4002 {
			t.Fatalf("banned socket closed with %d", code)
		}
		r = w.a.do("GET", "/api/apps/"+w.appID+"/users/"+w.userID, nil)
		u := r.Data()
		if inner, ok := u["user"].(map[string]any); ok {
			u = inner
		}
		if u["banned"] != true {
			t.Fatalf("user after a socket ban: %s", r.Raw)
		}
		expect(t, w.a.do("POST", base+"/users/no-such-user/ban", nil), http.StatusNotFound, "NOT_FOUND")

		// The dashboard channel refuses a bad token and another owner's app before the upgrade.
		if _, resp, err := dialWS(t, s, base+"/connect?token=nope", nextIP()); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("dashboard with a bad token: %v %v", err, resp)
		}
		stranger := newOwner(t, s)
		setPlan(t, s, stranger.Username, "business")
		if _, resp, err := dialWS(t, s, base+"/connect?token="+url.QueryEscape(stranger.Token), nextIP()); err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
			t.Fatalf("dashboard of another owner's app: %v %v", err, resp)
		}
		expect(t, s.Do(t, ts.Req{Method: "GET", Path: base + "/online", Token: stranger.Token}), http.StatusNotFound, "NOT_FOUND")
	})
}

func TestWebSocketNeedsBusinessPlan(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		w := newWSApp(t, s, "yuri")
		setPlan(t, s, ownerOfApp(t, w), "pro")
		base := "/api/apps/" + w.appID + "/ws"
		for _, r := range []ts.Response{
			w.a.do("GET", base+"/online", nil),
			w.a.do("GET", base+"/sessions", nil),
			w.a.do("POST", base+"/broadcast", map[string]any{"message": "x"}),
			w.a.do("POST", base+"/users/"+w.userID+"/kick", nil),
			w.a.do("POST", base+"/push", map[string]any{"payload": map[string]any{}}),
			w.a.do("GET", base+"/hooks", nil),
			w.a.do("POST", base+"/hooks", map[string]any{"name": "x", "event": "e", "actions": []any{respond()}}),
		} {
			expect(t, r, http.StatusForbidden, "PLAN_FEATURE")
		}
		if _, resp, err := dialWS(t, s, base+"/connect?token="+url.QueryEscape(w.a.token), nextIP()); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("dashboard socket on Pro: %v %v", err, resp)
		}
		// The plan change reaches the app snapshot at once (its app.plan_change events,
		// stored with it). A few tries at most, spaced out: every dial counts toward the
		// upgrade limit of the address.
		refused := false
		for try := 0; try < 6 && !refused; try++ {
			if try > 0 {
				time.Sleep(500 * time.Millisecond)
			}
			c, _, err := dialWS(t, s, w.clientSocketAt, w.client.ip)
			if err != nil {
				t.Fatalf("dial on Pro: %v", err)
			}
			m := c.next()
			c.conn.Close()
			d, _ := m["data"].(map[string]any)
			refused = m["type"] == "force_logout" && d["code"] == "PLAN_FEATURE"
		}
		if !refused {
			t.Fatal("a client socket on the Pro plan was not refused with PLAN_FEATURE")
		}
		// Too many upgrades from one address: 429 with the envelope before any upgrade.
		ip := nextIP()
		for range 10 {
			if c, _, err := dialWS(t, s, "/api/client/ws?token=nope", ip); err == nil {
				c.conn.Close()
			}
		}
		r := s.Do(t, ts.Req{Method: "GET", Path: "/api/client/ws?token=nope", IP: ip})
		expect(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
	})
}

// ownerOfApp answers the username of the app's owner.
func ownerOfApp(t *testing.T, w wsApp) string {
	t.Helper()
	r := w.a.do("GET", "/api/auth/me", nil)
	expectOK(t, r, http.StatusOK)
	return r.Data()["username"].(string)
}

// TestWebSocketEndsWithItsSession: a program's end call closes the socket opened with
// that session at once, and only that one.
func TestWebSocketEndsWithItsSession(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		w := newWSApp(t, s, "una")
		cl := w.clientSocket(t, s)

		// Another session of the same user ends: this socket stays.
		other := newSDK(t, s, w.client.secret)
		other.mustInit()
		expectOK(t, other.withNonce("login", map[string]any{"username": "una", "password": "pw-una-1"}), http.StatusOK)
		expectOK(t, other.post("end", nil, ""), http.StatusOK)
		cl.send(map[string]any{"type": "ping"})
		cl.expectType("pong")

		expectOK(t, w.client.post("end", nil, ""), http.StatusOK)
		if d := cl.expectType("force_logout"); d["reason"] != "the session ended" {
			t.Fatalf("end: %v", d)
		}
		if code, _ := cl.expectClosed(); code != 4000 {
			t.Fatalf("ended session's socket closed with %d", code)
		}
	})
}

// TestWebSocketDashboardMessages covers the dashboard's own messages, its filters and rate,
// and the force-logout helper.
func TestWebSocketDashboardMessages(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		w := newWSApp(t, s, "vera")
		base := "/api/apps/" + w.appID + "/ws"
		cl := w.clientSocket(t, s)
		dash := w.openDashboard(t, s)

		dash.send(map[string]any{"type": "get_online"})
		if d := dash.expectType("online_count", "session_connect"); d["count"] != float64(1) {
			t.Fatalf("get_online: %v", d)
		}
		dash.send(map[string]any{"type": "get_sessions"})
		if d := dash.expectType("sessions"); len(d["sessions"].([]any)) != 1 {
			t.Fatalf("get_sessions: %v", d)
		}
		dash.send(map[string]any{"type": "push_json", "userId": w.userID, "payload": map[string]any{"x": 1}})
		if d := cl.expectType("custom"); d["x"] != float64(1) {
			t.Fatalf("push_json at the client: %v", d)
		}
		dash.send(map[string]any{"type": "command", "command": "restart"})
		if d := cl.expectType("command"); d["command"] != "restart" {
			t.Fatalf("command at the client: %v", d)
		}
		dash.send(map[string]any{"type": "chat", "userId": w.userID})
		dash.expectType("error")
		dash.send(map[string]any{"type": "no_such_type"})
		dash.expectType("error")

		// Filters: only the listed types come through from then on.
		dash.send(map[string]any{"type": "set_filters", "events": []any{"custom_event"}})
		dash.send(map[string]any{"type": "ping"}) // its pong says the filters are in place
		dash.expectType("pong")
		cl.send(map[string]any{"type": "chat", "message": "filtered out"})
		cl.send(map[string]any{"type": "level_up", "data": map[string]any{"level": 2}})
		if d := dash.expectType("custom_event"); d["event"] != "level_up" {
			t.Fatalf("filtered dashboard: %v", d)
		}
		dash.send(map[string]any{"type": "set_filters", "events": "all"})
		dash.expectType("error")

		// The dashboard's rate: 30 messages per 10 s (9 sent so far), then error.
		for range 21 {
			dash.send(map[string]any{"type": "ping"})
			dash.expectType("pong")
		}
		dash.send(map[string]any{"type": "ping"})
		if d := dash.expectType("error"); !strings.Contains(d["message"].(string), "rate limited") {
			t.Fatalf("dashboard rate: %v", d)
		}

		// Force logout: the user's socket is told and closed; an offline user is reported.
		r := w.a.do("POST", base+"/users/"+w.userID+"/force-logout", map[string]any{"reason": "update required"})
		expectOK(t, r, http.StatusOK)
		if r.Data()["sent"] != true {
			t.Fatalf("force-logout: %s", r.Raw)
		}
		if d := cl.expectType("force_logout"); d["reason"] != "update required" {
			t.Fatalf("force_logout: %v", d)
		}
		if code, _ := cl.expectClosed(); code != 4000 {
			t.Fatalf("force-logout closed with %d", code)
		}
		waitFor(t, func() bool { return w.a.do("GET", base+"/online", nil).Data()["count"] == float64(0) })
		r = w.a.do("POST", base+"/users/"+w.userID+"/force-logout", nil)
		expectOK(t, r, http.StatusOK)
		if r.Data()["sent"] != false {
			t.Fatalf("force-logout of an offline user: %s", r.Raw)
		}
	})
}

// TestWebSocketBurstStaysOpen: a client that sends a few hundred messages at once, and reads
// everything, gets its answers within the rate and one error, and stays open (it used to
// be closed as too slow to receive, its queue full of rate-limit errors).
func TestWebSocketBurstStaysOpen(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		w := newWSApp(t, s, "burst")
		cl := w.clientSocket(t, s) // one ping counted
		const burst = 600
		for range burst {
			if err := cl.conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"ping"}`)); err != nil {
				t.Fatalf("burst write: %v", err)
			}
		}
		pongs, errs := 0, 0
		for pongs < 19 || errs < 1 {
			switch m := cl.next(); m["type"] {
			case "pong":
				pongs++
			case "error":
				errs++
			default:
				t.Fatalf("during the burst: %v", m)
			}
		}
		// Nothing more comes for the rest of the burst (read until quiet).
		_ = cl.conn.SetReadDeadline(time.Now().Add(time.Second))
		if _, raw, err := cl.conn.ReadMessage(); err == nil {
			t.Fatalf("after %d pongs and %d error: %s", pongs, errs, raw)
		} else if errors.As(err, new(*websocket.CloseError)) {
			t.Fatalf("the socket was closed: %v", err)
		}
		// A timed-out gorilla connection cannot be read again: open the check on REST and
		// the dashboard's view instead.
		r := w.a.do("GET", "/api/apps/"+w.appID+"/ws/online", nil)
		if r.Data()["count"] != float64(1) {
			t.Fatalf("online after a burst: %s", r.Raw)
		}
	})
}

// TestWebSocketDeliveryRightAfterUpgrade: a client socket is admitted before its upgrade is
// answered, so a broadcast made the moment the dial returns reaches it (it used to be
// admitted after, and such a broadcast missed the sockets still being admitted).
func TestWebSocketDeliveryRightAfterUpgrade(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		w := newWSApp(t, s, "first")
		var socks []*wsConn
		for i := range 8 {
			name := fmt.Sprintf("quick%d", i)
			expectOK(t, w.a.do("POST", "/api/apps/"+w.appID+"/users", map[string]any{"username": name, "password": "pw-" + name + "-1"}), http.StatusCreated)
			c := newSDK(t, s, w.client.secret)
			c.mustInit()
			expectOK(t, c.withNonce("login", map[string]any{"username": name, "password": "pw-" + name + "-1"}), http.StatusOK)
			socks = append(socks, mustDialWS(t, s, "/api/client/ws?token="+url.QueryEscape(c.token), c.ip))
			text := fmt.Sprintf("right after socket %d", i)
			expectOK(t, w.a.do("POST", "/api/apps/"+w.appID+"/ws/broadcast", map[string]any{"message": text}), http.StatusOK)
			for j, sock := range socks {
				if d := sock.expectType("message"); d["message"] != text {
					t.Fatalf("socket %d after socket %d's dial got %v", j, i, d)
				}
			}
		}
	})
}

// TestWebSocketMetrics: /metrics shows the socket edge's closes and refusals, the
// channels' counts and the actors' metrics.
func TestWebSocketMetrics(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		w := newWSApp(t, s, "metered")
		bad := mustDialWS(t, s, "/api/client/ws?token=nope", w.client.ip)
		bad.expectClosed()
		cl := w.clientSocket(t, s)
		expectOK(t, w.a.do("POST", "/api/apps/"+w.appID+"/ws/broadcast", map[string]any{"message": "hi"}), http.StatusOK)
		cl.expectType("message")
		expectOK(t, w.a.do("POST", "/api/apps/"+w.appID+"/ws/users/"+w.userID+"/kick", nil), http.StatusOK)
		cl.expectClosed()
		var metrics string
		waitFor(t, func() bool {
			resp, err := http.Get(s.URL + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			metrics = string(raw)
			return strings.Contains(metrics, `keyward_ws_closes_total{channel="client",code="4001"} 1`)
		})
		for _, want := range []string{
			`keyward_ws_admission_refusals_total{channel="client",code="UNAUTHORIZED"} 1`,
			`keyward_ws_closes_total{channel="client",code="1008"} 1`,
			`keyward_ws_slow_consumer_disconnects_total 0`,
			`keyward_ws_delivery_queue_seconds_count`,
			`keyward_ws_revalidation_failures_total 0`,
			`keyward_ws_lease_renewal_errors_total 0`,
			`keyward_cluster_bus_dropped_total 0`,
			`keyward_ws_bus_topics`,
			`keyward_actors_spawned_total{kind="app"}`,
			`keyward_actor_messages_total{kind="app"}`,
			`keyward_actor_message_seconds_bucket{kind="app",`,
			`keyward_actor_dead_letters_total{kind="app"}`,
			`keyward_actors_alive{kind="app"} 1`,
			`keyward_actor_mailbox_messages{kind="app"}`,
			`keyward_http_requests_total{method="GET",route="/api/client/ws",status="101"}`,
		} {
			if !strings.Contains(metrics, want) {
				t.Errorf("metrics lack %q", want)
			}
		}
		// A socket's life is not a request: upgrades stay out of the latency histogram.
		if strings.Contains(metrics, `keyward_http_request_duration_seconds_count{method="GET",route="/api/client/ws",status="101"}`) {
			t.Error("an upgraded socket is in the HTTP latency histogram")
		}
	})
}
