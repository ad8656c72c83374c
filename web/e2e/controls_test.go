package e2e

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"
)

// signIn opens the dashboard as an account made with the admin command and returns its JWT.
func signIn(t *testing.T, b *browser, n *node, user, pass string) string {
	t.Helper()
	b.do("open", chromedp.Navigate(n.url+"/"), chromedp.WaitVisible(`.auth [name=username]`, chromedp.ByQuery))
	b.fill(".auth", map[string]string{"username": user, "password": pass})
	b.click(".auth", "Sign in")
	b.waitText("main", "Applications")
	var token string
	b.eval(`sessionStorage.getItem('keyward.token')`, &token)
	return token
}

// closeCode reads until the socket closes and returns its close code (bounded).
func closeCode(t *testing.T, c *websocket.Conn) int {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
	for i := 0; i < 50; i++ {
		if _, _, err := c.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code
			}
			t.Fatalf("socket ended without a close frame: %v", err)
		}
	}
	t.Fatal("the socket stayed open")
	return 0
}

// TestLiveControlsHooksAndBulkActions drives the rest of the live page (broadcast, command,
// push JSON, kick), the hook editor (a built-in event refused in the form, then a hook a
// real client triggers), and the bulk and search actions of the licenses and users pages.
func TestLiveControlsHooksAndBulkActions(t *testing.T) {
	n := startNode(t)
	n.admin(t, "create", "--username", "seller", "--email", "seller@example.com", "--password", "Seller-Pass-1")
	n.admin(t, "set", "--username", "seller", "--plan", "business")
	b := newBrowser(t, 1280, 800)
	jwt := signIn(t, b, n, "seller", "Seller-Pass-1")
	auth := map[string]string{"Authorization": "Bearer " + jwt}
	app := call(t, "POST", n.url+"/api/apps", auth, map[string]any{"name": "Tools"})
	appID, secret := app["id"].(string), app["secret"].(string)
	base := n.url + "/api/apps/" + appID
	for _, u := range []string{"alice", "albert", "zoe"} {
		call(t, "POST", base+"/users", auth, map[string]any{"username": u, "password": "User-Pass-12"})
	}

	// Users: search narrows the list.
	b.hash("apps/" + appID + "/users")
	b.waitText("main table", "zoe")
	b.fill("form.filters", map[string]string{"search": "al"})
	b.click("form.filters", "Filter")
	b.waitGone("main table", "zoe")
	b.waitText("main table", "albert")

	// Licenses: five keys, two deleted by selection, one verified.
	b.hash("apps/" + appID + "/licenses")
	b.fill("main form.inline", map[string]string{"count": "5", "note": "batch"})
	b.click("main", "Generate")
	b.waitText(".pager", "of 5")
	b.do("select two", chromedp.Evaluate(`[...document.querySelectorAll('tbody input[aria-label=select]')].slice(0, 2).forEach((c) => c.click())`, nil))
	b.click("main", "Delete selected (2)")
	b.click("dialog", "Delete")
	b.waitText(".pager", "of 3")
	var key string
	b.eval(`document.querySelector('tbody td code').textContent`, &key)
	b.do("verify form", chromedp.Evaluate(`document.querySelectorAll('main form.inline')[1].querySelector('[name=key]').value = `+js(key), nil))
	b.click("main", "Verify")
	b.waitText("main", "Valid: level 1")

	// The hook editor refuses a built-in event before sending, then creates a hook.
	b.hash("apps/" + appID + "/hooks")
	b.fill("main form", map[string]string{"name": "greet", "event": "chat"})
	b.click("main", "Create hook")
	b.waitText("main form .error", "built-in")
	b.fill("main form", map[string]string{"event": "hello"})
	b.do("respond text", chromedp.SetValue(`#actions [name=message]`, "Hello {{username}}, room {{data.room}}", chromedp.ByQuery))
	b.click("main", "Create hook")
	b.waitText("main table", "hello")

	// A client triggers the hook, then gets a broadcast, a command and pushed JSON, and is kicked.
	b.hash("apps/" + appID + "/live")
	b.waitText("#socket-state", "connected")
	_, client := clientSession(t, n.url, secret, "alice", "User-Pass-12")
	b.waitText("#sessions", "alice")
	if err := client.WriteJSON(map[string]any{"type": "hello", "data": map[string]any{"room": "lobby"}}); err != nil {
		t.Fatal(err)
	}
	if got := readType(t, client, "message"); got["message"] != "Hello alice, room lobby" {
		t.Fatalf("hook answer %v", got)
	}
	b.waitText("#feed", "alice sent hello")
	b.fill("#broadcast-form", map[string]string{"message": "maintenance at noon", "type": "warning"})
	b.click("#broadcast-form", "Broadcast")
	if got := readType(t, client, "message"); got["message"] != "maintenance at noon" || got["type"] != "warning" {
		t.Fatalf("broadcast %v", got)
	}
	b.fill("#command-form", map[string]string{"command": "reload", "payload": `{"level": 2}`})
	b.click("#command-form", "Send command")
	if got := readType(t, client, "command"); got["command"] != "reload" || fmt.Sprint(got["payload"]) != "map[level:2]" {
		t.Fatalf("command %v", got)
	}
	b.fill("#push-form", map[string]string{"payload": `[1, 2]`})
	b.click("#push-form", "Push JSON")
	b.waitText("#push-form .error", "JSON object")
	b.fill("#push-form", map[string]string{"payload": `{"banner": "sale"}`})
	b.click("#push-form", "Push JSON")
	if got := readType(t, client, "custom"); got["banner"] != "sale" {
		t.Fatalf("push %v", got)
	}
	b.click("#sessions", "Kick")
	b.fill("dialog", map[string]string{"reason": "bye"})
	b.click("dialog", "Kick")
	if code := closeCode(t, client); code != 4001 {
		t.Fatalf("kick closed with %d", code)
	}
	b.waitGone("#sessions", "alice")
	b.shot("live-controls-1280")
	if !strings.Contains(b.text("#feed"), "alice left") {
		t.Fatal("no disconnect in the feed")
	}
	b.clean()
}
