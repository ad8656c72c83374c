package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/keyward/keyward/internal/testenv"
)

// reply is a decoded JSON answer.
type reply struct {
	t      *testing.T
	status int
	body   map[string]any
}

// data answers the envelope's data, failing unless the status is want.
func (r reply) data(want int) map[string]any {
	r.t.Helper()
	if r.status != want {
		r.t.Fatalf("status %d, want %d: %v", r.status, want, r.body)
	}
	return r.body["data"].(map[string]any)
}

// call sends a JSON request with an optional bearer token.
func call(t *testing.T, method, url, token string, body any) reply {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest(method, url, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s %s: not JSON: %q", method, url, b)
	}
	return reply{t: t, status: resp.StatusCode, body: out}
}

// readType reads socket messages until one of type typ and answers its data.
func readType(t *testing.T, c *websocket.Conn, typ string) map[string]any {
	t.Helper()
	for {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var m map[string]any
		if err := c.ReadJSON(&m); err != nil {
			t.Fatalf("waiting for %s: %v", typ, err)
		}
		if m["type"] == typ {
			d, _ := m["data"].(map[string]any)
			return d
		}
	}
}

// socketCluster starts two nodes over one MongoDB database and one Redis prefix, with a
// Business owner signed in; extra settings go to both nodes.
func socketCluster(t *testing.T, extra ...string) (a, b *node, token string) {
	t.Helper()
	env := append([]string{"KEYWARD_MONGO_URI=" + testenv.MongoURI(t), "KEYWARD_MONGO_DATABASE=" + testenv.UniqueName("kwtest_"),
		"KEYWARD_REDIS_URL=" + testenv.RedisURL(t), "KEYWARD_REDIS_PREFIX=" + testenv.UniqueName("kwtest:") + ":",
		"KEYWARD_JWT_SECRET=" + strings.Repeat("d", 40), "KEYWARD_SECRETS_KEY=" + strings.Repeat("k", 40)}, extra...)
	a = startNode(t, append(env, "KEYWARD_DATA_DIR="+t.TempDir()))
	b = startNode(t, append(env, "KEYWARD_DATA_DIR="+t.TempDir()))
	for _, args := range [][]string{
		{"admin", "create", "--username", "owner", "--email", "owner@example.com", "--password", "Owner-Pass-12"},
		{"admin", "set", "--username", "owner", "--plan", "business"},
	} {
		cmd := exec.Command(binary, args...)
		cmd.Env = append(append(os.Environ(), env...), "KEYWARD_DATA_DIR="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	token = call(t, "POST", a.url+"/api/auth/login", "", map[string]string{"username": "owner", "password": "Owner-Pass-12"}).data(200)["token"].(string)
	return a, b, token
}

// clientLogin makes a client session on n and signs the user in, as an SDK does.
func clientLogin(t *testing.T, n *node, secret, username, password string) string {
	t.Helper()
	session := call(t, "POST", n.url+"/api/client/init", "", map[string]string{"secret": secret, "version": "1.0.0", "hwid": "h"}).data(200)["sessionToken"].(string)
	nonce := call(t, "POST", n.url+"/api/client/nonce", "", map[string]string{"sessionToken": session}).data(200)["nonce"].(string)
	body, _ := json.Marshal(map[string]string{"sessionToken": session, "username": username, "password": password})
	req, _ := http.NewRequest("POST", n.url+"/api/client/login", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Nonce", nonce)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("login: %v %v", err, resp)
	}
	resp.Body.Close()
	return session
}

// dial opens a socket on n at path; the socket closes with the test.
func dial(t *testing.T, n *node, path string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(n.url, "http")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ping sends a ping and waits for the pong: once answered, the socket is admitted.
func ping(t *testing.T, c *websocket.Conn) {
	t.Helper()
	if err := c.WriteJSON(map[string]string{"type": "ping"}); err != nil {
		t.Fatal(err)
	}
	readType(t, c, "pong")
}

// TestSocketsAcrossProcesses runs two keyward processes over MongoDB and Redis: a client
// socket on one, the dashboard and REST calls on the other; stopping the first releases
// the socket's presence at once.
func TestSocketsAcrossProcesses(t *testing.T) {
	a, b, token := socketCluster(t)
	app := call(t, "POST", a.url+"/api/apps", token, map[string]string{"name": "Sockets"}).data(201)
	appID, secret := app["id"].(string), app["secret"].(string)
	user := call(t, "POST", a.url+"/api/apps/"+appID+"/users", token, map[string]string{"username": "ivy", "password": "pw-ivy-12"}).data(201)

	// The program signs in on node B and opens its socket on node A.
	session := clientLogin(t, b, secret, "ivy", "pw-ivy-12")
	client := dial(t, a, "/api/client/ws?token="+url.QueryEscape(session))
	ping(t, client)

	dash := dial(t, b, "/api/apps/"+appID+"/ws/connect?token="+url.QueryEscape(token))
	if d := readType(t, dash, "online_count"); d["count"] != float64(1) {
		t.Fatalf("online_count on B: %v", d)
	}

	// B's REST call reaches the socket on A; A's client reaches B's dashboard.
	if d := call(t, "POST", b.url+"/api/apps/"+appID+"/ws/chat", token, map[string]string{"userId": user["id"].(string), "message": "hi ivy"}).data(200); d["sent"] != true {
		t.Fatalf("chat on B: %v", d)
	}
	if d := readType(t, client, "chat"); d["message"] != "hi ivy" {
		t.Fatalf("chat at the client: %v", d)
	}
	if err := client.WriteJSON(map[string]any{"type": "chat", "message": "hi owner"}); err != nil {
		t.Fatal(err)
	}
	if d := readType(t, dash, "chat"); d["message"] != "hi owner" {
		t.Fatalf("chat at the dashboard: %v", d)
	}

	// Stopping node A closes its socket (going away) and releases its presence.
	a.stop(t)
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, _, err := client.ReadMessage(); err != nil {
			if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
				t.Fatalf("socket on a stopped node ended with %v, want going away", err)
			}
			break
		}
	}
	readType(t, dash, "session_disconnect")
	if d := call(t, "GET", b.url+"/api/apps/"+appID+"/ws/online", token, nil).data(200); d["count"] != float64(0) {
		t.Fatalf("online after node A stopped: %v", d)
	}
	b.stop(t)
}

// TestSocketsOfADeadNodeExpire kills a node holding a socket (no shutdown): the other node
// stops counting the socket once its presence lease runs out.
func TestSocketsOfADeadNodeExpire(t *testing.T) {
	a, b, token := socketCluster(t, "KEYWARD_WS_LEASE_TTL=3s")
	app := call(t, "POST", b.url+"/api/apps", token, map[string]string{"name": "Doomed"}).data(201)
	appID := app["id"].(string)
	call(t, "POST", b.url+"/api/apps/"+appID+"/users", token, map[string]string{"username": "kim", "password": "pw-kim-123"}).data(201)
	session := clientLogin(t, a, app["secret"].(string), "kim", "pw-kim-123")
	ping(t, dial(t, a, "/api/client/ws?token="+url.QueryEscape(session)))
	online := func() float64 {
		return call(t, "GET", b.url+"/api/apps/"+appID+"/ws/online", token, nil).data(200)["count"].(float64)
	}
	if n := online(); n != 1 {
		t.Fatalf("online before the kill: %v", n)
	}
	// Renewed while the node lives: still online after more than one lease.
	time.Sleep(4 * time.Second)
	if n := online(); n != 1 {
		t.Fatalf("online after 4 s on a live node: %v", n)
	}

	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for online() != 0 {
		if time.Since(killed) > 10*time.Second {
			t.Fatal("the dead node's socket still counts 10 s after the kill (lease 3 s)")
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("the dead node's socket stopped counting %.1f s after the kill", time.Since(killed).Seconds())
	b.stop(t)
}
