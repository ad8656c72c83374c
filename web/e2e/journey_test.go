package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"
	"github.com/pquerna/otp/totp"
)

// xss is owner- and client-controlled text that must show as text, never run.
const xss = `<img src=x onerror=alert(1)>`

func (b *browser) hash(h string) {
	b.t.Helper()
	b.do("open #"+h, chromedp.Evaluate(fmt.Sprintf(`location.hash = %s`, js("#/"+h)), nil))
}

// noInjectedImage fails when the page holds an <img src=x>: the XSS text became markup.
func (b *browser) noInjectedImage() {
	b.t.Helper()
	var n int
	b.eval(`document.querySelectorAll('img[src="x"]').length`, &n)
	if n != 0 {
		b.t.Fatalf("%d injected <img src=x> elements in the page", n)
	}
}

// clientSession signs a user in through the Client API, as an SDK does, and opens its socket.
func clientSession(t *testing.T, base, secret, username, password string) (string, *websocket.Conn) {
	t.Helper()
	session := call(t, "POST", base+"/api/client/init", nil, map[string]string{"secret": secret, "version": "1.0.0", "hwid": "HW-1"})["sessionToken"].(string)
	nonce := call(t, "POST", base+"/api/client/nonce", nil, map[string]string{"sessionToken": session})["nonce"].(string)
	call(t, "POST", base+"/api/client/login", map[string]string{"X-Nonce": nonce}, map[string]string{"sessionToken": session, "username": username, "password": password, "hwid": "HW-1"})
	call(t, "POST", base+"/api/client/log", nil, map[string]any{"sessionToken": session, "message": "client says " + xss, "level": "WARNING"})
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/api/client/ws?token="+session, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return session, c
}

// readType reads messages until one of type typ (bounded).
func readType(t *testing.T, c *websocket.Conn, typ string) map[string]any {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
	for i := 0; i < 50; i++ {
		var m map[string]any
		if err := c.ReadJSON(&m); err != nil {
			t.Fatalf("waiting for %s: %v", typ, err)
		}
		if m["type"] == typ {
			d, _ := m["data"].(map[string]any)
			return d
		}
	}
	t.Fatalf("no %s message", typ)
	return nil
}

// nextCode is a TOTP code of the next 30-second step: the server accepts ±1 step and never
// a code older than the last accepted one, so two sign-ins in one step still work.
func nextCode(t *testing.T, secret string, step int) string {
	t.Helper()
	code, err := totp.GenerateCode(secret, time.Now().Add(time.Duration(step)*30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// TestOwnerJourney is the owner journey of issue 12 in a real browser against a real process:
// register → verify from the outbox → sign in → 2FA → app → users and 20 licenses → a
// variable → a file → a client appears live → chat both ways → ban → logs and analytics.
// Owner- and client-controlled text carries an XSS payload all along; no dialog may open.
func TestOwnerJourney(t *testing.T) {
	n := startNode(t)
	b := newBrowser(t, 1280, 800)
	const user, email, pass = "owner1", "owner1@example.com", "Owner-Pass-12"

	// Register; the page says mails go to the outbox folder, not its path (only a signed-in
	// owner is told that).
	b.do("open", chromedp.Navigate(n.url+"/"), chromedp.WaitVisible(`form [name=username]`, chromedp.ByQuery))
	b.shot("login-1280")
	b.hash("register")
	b.fill(".auth", map[string]string{"email": email, "username": user, "password": pass})
	b.click(".auth", "Create account")
	b.waitText(".auth", "outbox")
	if note := b.text(".auth .note"); strings.Contains(note, n.dataDir) || !strings.Contains(note, "KEYWARD_MAIL_OUTBOX") {
		t.Fatalf("the signed-out note on mails: %q", note)
	}
	link := n.verifyLink(t, email)
	b.do("verify", chromedp.Navigate(link))
	b.waitText("main", "Applications")
	var path string
	b.eval(`location.pathname + location.search`, &path)
	if strings.Contains(path, "token") {
		t.Fatalf("the token stays in the address bar: %s", path)
	}
	n.admin(t, "set", "--username", user, "--plan", "business")

	// Sign out, sign in with a wrong password (refused, the form keeps its input), then right.
	b.click("nav", "Sign out")
	b.do("login page", chromedp.WaitVisible(`.auth [name=password]`, chromedp.ByQuery))
	b.fill(".auth", map[string]string{"username": user, "password": "Wrong-Pass-1"})
	b.click(".auth", "Sign in")
	b.waitText(".auth .error", "")
	b.do("refusal shown", chromedp.Poll(`document.querySelector('.auth .error').textContent.length > 0`, nil, chromedp.WithPollingTimeout(10*time.Second)))
	var kept string
	b.eval(`document.querySelector('.auth [name=username]').value`, &kept)
	if kept != user {
		t.Fatalf("the refused form lost its input: %q", kept)
	}
	b.fill(".auth", map[string]string{"password": pass})
	b.click(".auth", "Sign in")
	b.waitText("main", "Applications")

	// Enable 2FA from the account page (QR code drawn by the library), then sign in with it.
	b.hash("account")
	b.waitText("#plan-name", "Business")
	if got := b.text("#mail-outbox"); got != filepath.Join(n.dataDir, "outbox") {
		t.Fatalf("outbox named to the signed-in owner as %q", got)
	}
	b.click("main", "Set up 2FA")
	secret := b.text("#totp-secret")
	b.do("QR drawn", chromedp.Poll(`Number(document.querySelector('canvas.qr')?.dataset.modules) >= 21`, nil, chromedp.WithPollingTimeout(10*time.Second)))
	b.shot("account-1280")
	b.fill("main", map[string]string{"code": nextCode(t, secret, 0)})
	b.click("main", "Enable 2FA")
	b.waitText("main", "Disable 2FA")
	b.click("nav", "Sign out")
	b.fill(".auth", map[string]string{"username": user, "password": pass})
	b.click(".auth", "Sign in")
	b.fill(".auth", map[string]string{"twoFactorCode": nextCode(t, secret, 1)})
	b.click(".auth", "Verify")
	b.waitText("main", "Applications")

	// Create an application; its secret is shown once.
	b.fill("main", map[string]string{"name": "Shop " + xss, "version": "1.0.0"})
	b.click("main", "Create application")
	var appSecret string
	b.do("secret shown", chromedp.WaitVisible(`.shown-once input[name=shown-secret]`, chromedp.ByQuery),
		chromedp.Value(`.shown-once input[name=shown-secret]`, &appSecret, chromedp.ByQuery))
	if len(appSecret) < 40 {
		t.Fatalf("secret %q", appSecret)
	}
	b.do("open app", chromedp.Click(`#open-app`, chromedp.ByQuery))
	b.waitText(".app-head h1", xss)
	b.noInjectedImage()
	var appID string
	b.eval(`location.hash.split('/')[2]`, &appID)
	b.waitText("#app-overview", "Users") // an app opens on its overview
	b.hash("apps/" + appID + "/users")

	// Users: a refused one keeps its input; then two users, one with the payload as display name.
	b.fill("main form.inline", map[string]string{"username": xss, "password": "Alice-Pass-1"})
	b.click("main", "Create user")
	b.do("username refused", chromedp.Poll(`document.querySelector('main form.inline .error').textContent.length > 0`, nil, chromedp.WithPollingTimeout(10*time.Second)))
	b.eval(`document.querySelector('main form.inline [name=username]').value`, &kept)
	if kept != xss {
		t.Fatalf("refused user form lost its input: %q", kept)
	}
	b.fill("main form.inline", map[string]string{"username": "alice", "password": "Alice-Pass-1"})
	b.click("main", "Create user")
	b.waitText("main table", "alice")
	b.fill("main form.inline", map[string]string{"username": "bob", "password": "Bob-Pass-12"})
	b.click("main", "Create user")
	b.waitText("main table", "bob")
	b.do("open bob", chromedp.Click(`//a[text()="bob"]`, chromedp.BySearch))
	b.waitText("#user-name", "bob")
	b.fill("main", map[string]string{"displayName": xss, "banReason": xss})
	b.click("main", "Save user")
	b.hash("apps/" + appID + "/users")
	b.waitText("main table", xss)
	b.noInjectedImage()
	b.shot("users-1280")

	// Licenses: 20 keys, downloaded as CSV.
	b.hash("apps/" + appID + "/licenses")
	b.fill("main form.inline", map[string]string{"count": "20", "prefix": "SHOP"})
	b.click("main", "Generate")
	b.waitText("#generated", "20 keys generated")
	var keys string
	b.do("keys", chromedp.Value(`#generated-keys`, &keys, chromedp.ByQuery))
	if got := len(strings.Fields(keys)); got != 20 || !strings.HasPrefix(keys, "SHOP-") {
		t.Fatalf("generated keys: %d %q", got, keys)
	}
	b.waitText(".pager", "of 20")
	downloads := t.TempDir()
	b.do("allow downloads", cdpbrowser.SetDownloadBehavior(cdpbrowser.SetDownloadBehaviorBehaviorAllow).WithDownloadPath(downloads).WithEventsEnabled(true))
	b.click("#generated", "Download .csv")
	csv := waitFile(t, filepath.Join(downloads, "licenses.csv"))
	if lines := strings.Count(strings.TrimSpace(csv), "\n"); lines != 20 || !strings.HasPrefix(csv, "key,level") {
		t.Fatalf("csv: %d lines\n%s", lines, csv)
	}
	b.shot("licenses-1280")

	// A variable: a value that does not fit its type is refused in the form, then edited.
	b.hash("apps/" + appID + "/variables")
	b.fill("main form.inline", map[string]string{"key": "motd", "type": "INT", "value": "hello"})
	b.click("main", "Add variable")
	b.waitText("main form.inline .error", "whole number")
	b.fill("main form.inline", map[string]string{"type": "STRING", "value": "hello"})
	b.click("main", "Add variable")
	b.waitText("table.vars", "motd")
	b.click("table.vars", "Edit")
	b.fill("dialog", map[string]string{"type": "INT", "value": "42"})
	b.click("dialog", "Save")
	b.waitText("table.vars", "42")
	b.waitText("table.vars", "INT")

	// A file, with the progress bar.
	file := filepath.Join(t.TempDir(), "loader.bin")
	if err := os.WriteFile(file, bytes.Repeat([]byte("keyward "), 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	b.hash("apps/" + appID + "/files")
	b.do("choose file", chromedp.WaitVisible(`input[type=file]`, chromedp.ByQuery), chromedp.SetUploadFiles(`input[type=file]`, []string{file}, chromedp.ByQuery))
	b.fill("main form.inline", map[string]string{"version": "2.0.0"})
	b.click("main", "Upload")
	b.waitText("#files", "loader.bin")
	b.waitText("#files", "512.0 KB")
	b.click("#files", "Download")
	if got := waitFile(t, filepath.Join(downloads, "loader.bin")); len(got) != 512<<10 || !strings.HasPrefix(got, "keyward keyward") {
		t.Fatalf("downloaded file: %d bytes", len(got))
	}

	// Live: a real client session appears, chats both ways, is banned and leaves.
	b.hash("apps/" + appID + "/live")
	b.waitText("#socket-state", "connected")
	_, client := clientSession(t, n.url, appSecret, "alice", "Alice-Pass-1")
	b.waitText("#sessions", "alice")
	b.waitText("#online-count", "1")
	b.waitText("#feed", "alice connected")
	var aliceID string
	b.eval(`document.querySelector('#sessions tr[data-user]').dataset.user`, &aliceID)
	b.do("choose alice", chromedp.SetValue(`#chat-to`, aliceID, chromedp.ByQuery))
	b.fill("#chat-form", map[string]string{"message": "hello alice"})
	b.click("#chat-form", "Send")
	if got := readType(t, client, "chat"); got["message"] != "hello alice" {
		t.Fatalf("client got chat %v", got)
	}
	if err := client.WriteJSON(map[string]any{"type": "chat", "message": "hi back " + xss}); err != nil {
		t.Fatal(err)
	}
	b.waitText("#chat-log", "hi back "+xss)
	b.noInjectedImage()
	b.shot("live-1280")
	b.click("#sessions", "Ban")
	b.fill("dialog", map[string]string{"reason": "cheating"})
	b.click("dialog", "Ban")
	if got := readType(t, client, "banned"); !strings.Contains(fmt.Sprint(got["reason"]), "cheating") {
		t.Fatalf("client got banned %v", got)
	}
	b.waitGone("#sessions", "alice")
	b.waitText("#online-count", "0")
	b.waitText("#feed", "alice left")

	// Logs (the client's payload shows as text) and the analytics chart.
	// Log entries are written in batches (every 500 ms), so the list is refreshed until they show.
	b.hash("apps/" + appID + "/logs")
	b.untilText("#logs", "user.ban", func() { b.click("#logs", "Filter") })
	b.waitText("#logs", "client says "+xss)
	b.noInjectedImage()
	b.shot("logs-1280")
	b.hash("apps/" + appID + "/analytics")
	b.do("chart drawn", chromedp.Poll(`Number(document.querySelector('#chart')?.dataset.total) >= 1 && !!document.querySelector('#chart canvas')`, nil, chromedp.WithPollingTimeout(15*time.Second)))
	b.waitText("#recent", "user.login")
	b.waitText("#overview", "Logins")
	b.shot("analytics-1280")

	// The same pages on a phone-sized screen.
	b.do("phone size", chromedp.EmulateViewport(390, 844))
	for _, p := range []string{"users", "licenses", "live", "analytics"} {
		b.hash("apps/" + appID + "/" + p)
		b.do("page "+p, chromedp.WaitVisible(`.tabs a.active`, chromedp.ByQuery))
		b.shot(p + "-390")
	}
	b.hash("account")
	b.waitText("main", "Two-factor")
	b.shot("account-390")

	if b.dialogs.Load() != 0 {
		t.Fatalf("%d dialogs opened", b.dialogs.Load())
	}
	b.clean()
}

// untilText refreshes the page with refresh until sel holds text (bounded).
func (b *browser) untilText(sel, text string, refresh func()) {
	b.t.Helper()
	for i := 0; i < 40; i++ {
		var ok bool
		b.eval(fmt.Sprintf(`(document.querySelector(%s)?.textContent ?? '').includes(%s)`, js(sel), js(text)), &ok)
		if ok {
			return
		}
		refresh()
		time.Sleep(250 * time.Millisecond)
	}
	b.waitText(sel, text)
}

func waitFile(t *testing.T, p string) string {
	t.Helper()
	for i := 0; i < 150; i++ {
		if b, err := os.ReadFile(p); err == nil && len(b) > 0 {
			return string(b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	t.Fatalf("no download at %s (folder holds %v)", p, entries)
	return ""
}
