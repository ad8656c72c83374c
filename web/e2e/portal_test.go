package e2e

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/mail"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/keyward/keyward/core/commerce"
	"github.com/keyward/keyward/core/commerce/commercetest"
)

var portalCode = regexp.MustCompile(`Your code: (\d{8})`)

// portalShop is an app with a store connection, a paid order and its portal turned on.
type portalShop struct {
	appID, secret, key, email string
	auth                      map[string]string
}

// newPortalShop makes the owner's app, sells one floating key (2 seats, a user made) through
// a signed Sellix notification, uploads a file and turns the buyer portal on.
func newPortalShop(t *testing.T, n *node, user string) portalShop {
	t.Helper()
	n.admin(t, "create", "--username", user, "--email", user+"@example.com", "--password", "Portal-Pass-12")
	login := call(t, "POST", n.url+"/api/auth/login", nil, map[string]any{"username": user, "password": "Portal-Pass-12"})
	sh := portalShop{email: "buyer-" + user + "@example.com", auth: map[string]string{"Authorization": "Bearer " + login["token"].(string)}}
	app := call(t, "POST", n.url+"/api/apps", sh.auth, map[string]any{"name": "Portal Shop"})
	sh.appID, sh.secret = app["id"].(string), app["secret"].(string)
	conn := call(t, "POST", n.url+"/api/apps/"+sh.appID+"/stores", sh.auth, map[string]any{"provider": "sellix", "secret": "sellix-secret"})
	call(t, "POST", n.url+"/api/apps/"+sh.appID+"/stores/"+conn["id"].(string)+"/products", sh.auth,
		map[string]any{"productId": "pro", "keyPrefix": "BUY", "maxSeats": 2, "createUser": true, "duration": 30 * 86400})
	body, ct := commercetest.Body(commerce.Sellix, commercetest.Sale{Kind: commerce.KindPaid, EventID: "e1", OrderID: "portal-order-1", Product: "pro",
		Email: sh.email, Amount: 1500, Currency: "eur"})
	name, value := commerce.Sign(commerce.Sellix, "sellix-secret", body, time.Now())
	req, _ := http.NewRequest("POST", n.url+conn["receiverPath"].(string), bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	req.Header.Set(name, value)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sale: %d %s", resp.StatusCode, raw)
	}
	orders := call(t, "GET", n.url+"/api/apps/"+sh.appID+"/orders", sh.auth, nil)["orders"].([]any)
	sh.key = orders[0].(map[string]any)["keys"].([]any)[0].(string)
	call(t, "PATCH", n.url+"/api/apps/"+sh.appID+"/portal", sh.auth, map[string]any{"enabled": true, "hwidReset": true,
		"seatRelease": true, "downloads": true, "resend": true})

	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	_ = w.WriteField("name", "Portal Tool")
	_ = w.WriteField("version", "2.0")
	fw, _ := w.CreateFormFile("file", "tool.bin")
	_, _ = fw.Write(bytes.Repeat([]byte("tool-bytes\n"), 200))
	_ = w.Close()
	req, _ = http.NewRequest("POST", n.url+"/api/apps/"+sh.appID+"/files", &buf)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Authorization", sh.auth["Authorization"])
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload: %d", resp.StatusCode)
	}
	return sh
}

// takeSeat signs a client session in with the key, as an SDK does, holding one seat.
func takeSeat(t *testing.T, n *node, sh portalShop) {
	t.Helper()
	hdr := map[string]string{"Accept": "application/json"}
	tok := call(t, "POST", n.url+"/api/client/init", hdr, map[string]any{"secret": sh.secret, "version": "1.0.0", "hwid": "pc-1"})["sessionToken"].(string)
	nonce := call(t, "POST", n.url+"/api/client/nonce", hdr, map[string]any{"sessionToken": tok})["nonce"].(string)
	call(t, "POST", n.url+"/api/client/license", map[string]string{"Accept": "application/json", "X-Nonce": nonce},
		map[string]any{"sessionToken": tok, "licenseKey": sh.key, "hwid": "pc-1"})
}

// lastCode reads the newest portal code mailed to addr from the node's outbox, newer than
// the count of codes seen before.
func (n *node) portalCode(t *testing.T, addr string, seen int) (string, int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(n.dataDir, "outbox", "*.eml"))
		var codes []string
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			m, err := mail.ReadMessage(bytes.NewReader(raw))
			if err != nil || !strings.Contains(m.Header.Get("To"), addr) {
				continue
			}
			text, _ := io.ReadAll(m.Body)
			if c := portalCode.FindSubmatch(text); c != nil {
				codes = append(codes, string(c[1]))
			}
		}
		if len(codes) > seen {
			return codes[len(codes)-1], len(codes)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no portal code mailed to %s", addr)
	return "", 0
}

// TestBuyerPortal: a buyer opens the app's portal in Chromium, signs in with the key and
// the code mailed to the order's address, sees the license, releases the seat a client
// holds, resets the HWID and downloads the app's file; axe finds no violation on the
// sign-in and license views (when KEYWARD_TEST_AXE is set).
func TestBuyerPortal(t *testing.T) {
	n := startNode(t)
	sh := newPortalShop(t, n, "portalseller")
	takeSeat(t, n, sh)
	b := newBrowser(t, 1280, 800)
	var axe []byte
	if p := os.Getenv("KEYWARD_TEST_AXE"); p != "" {
		var err error
		if axe, err = os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
	}

	b.do("open portal", chromedp.Navigate(n.url+"/portal/"+sh.appID), chromedp.WaitVisible(`#key`, chromedp.ByQuery))
	b.waitText("header", "Portal Shop")
	if axe != nil {
		b.axe(axe, "portal sign-in")
	}
	b.fill("#code-form", map[string]string{"key": sh.key})
	b.click("#code-form", "Mail me a code")
	b.waitText("#notice", "a code was mailed")
	code, _ := n.portalCode(t, sh.email, 0)
	b.fill("#signin-form", map[string]string{"code": code})
	b.click("#signin-form", "Sign in")
	b.waitText("#facts", sh.key)
	b.waitText("#facts", "active")
	b.waitText("#facts", "1 of 2") // the client's seat
	if axe != nil {
		b.axe(axe, "portal license")
	}
	b.shot("portal-1280")

	// Release the seat, then reset the HWID.
	b.click("#seats", "Release")
	b.waitText("#notice", "The seat was released.")
	b.waitText("#facts", "0 of 2")
	b.click("#license", "Reset HWID")
	b.waitText("#notice", "The hardware binding was reset")
	b.waitText("#facts", "HWID resets1") // one reset used

	// Download the file through the page's link (the cookie goes with it).
	dir := t.TempDir()
	b.do("allow downloads", cdpbrowser.SetDownloadBehavior(cdpbrowser.SetDownloadBehaviorBehaviorAllow).WithDownloadPath(dir).WithEventsEnabled(true))
	b.do("download", chromedp.Click(`#file-list a`, chromedp.ByQuery))
	deadline := time.Now().Add(15 * time.Second)
	for {
		if got, err := os.ReadFile(filepath.Join(dir, "Portal Tool")); err == nil && len(got) == len("tool-bytes\n")*200 {
			break
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(dir)
			t.Fatalf("no download in %s: %v", dir, entries)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The cookie is HttpOnly: the page's script cannot read it.
	var cookie string
	b.eval(`document.cookie`, &cookie)
	if strings.Contains(cookie, "keyward_portal") {
		t.Fatalf("the session cookie is readable by script: %q", cookie)
	}
	// The owner turns downloads off in the app's settings: the buyer's page offers none.
	owner := newBrowser(t, 1280, 800)
	signIn(t, owner, n, "portalseller", "Portal-Pass-12")
	owner.hash("apps/" + sh.appID + "/settings")
	owner.waitText("#portal-address", "/portal/"+sh.appID)
	owner.do("untick downloads", chromedp.Click(`form.portal-settings [name=downloads]`, chromedp.ByQuery))
	owner.click("form.portal-settings", "Save portal")
	for deadline := time.Now().Add(15 * time.Second); ; {
		p := call(t, "GET", n.url+"/api/apps/"+sh.appID+"/portal", sh.auth, nil)
		if p["downloads"] == false && p["hwidReset"] == true && p["enabled"] == true {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the app's settings did not turn downloads off: %v", p)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if axe != nil {
		owner.axe(axe, "app settings with the buyer portal")
	}
	b.do("reload portal", chromedp.Reload(), chromedp.WaitVisible(`#facts`, chromedp.ByQuery))
	b.waitText("#facts", sh.key)
	var filesShown bool
	b.eval(`!document.getElementById('files').hidden`, &filesShown)
	if filesShown {
		t.Fatal("downloads still offered after the owner turned them off")
	}

	b.click("#license", "Sign out")
	b.waitText("#notice", "Signed out.")
}

// TestPortalFirstLoadFigures (KEYWARD_TEST_FIGURES=1) prints the portal's first-load weight
// and time, cache empty, in a fresh browser each run: the sign-in view a buyer opens.
func TestPortalFirstLoadFigures(t *testing.T) {
	if os.Getenv("KEYWARD_TEST_FIGURES") != "1" {
		t.Skip("set KEYWARD_TEST_FIGURES=1 to measure the portal's first load")
	}
	n := startNode(t)
	sh := newPortalShop(t, n, "portalfigures")
	for i := range 3 {
		b := newBrowser(t, 1280, 800)
		var f loadFigures
		b.do("portal", network.Enable(), network.SetCacheDisabled(true), chromedp.Navigate(n.url+"/portal/"+sh.appID),
			chromedp.WaitVisible(`#key`, chromedp.ByQuery),
			chromedp.Poll(`performance.getEntriesByName('keyward-ready').length > 0`, nil, chromedp.WithPollingTimeout(10*time.Second)),
			chromedp.Evaluate(figuresJS, &f))
		t.Logf("buyer portal, run %d: %.1f KB over the wire, %d requests, usable at %.0f ms", i+1, f.Bytes/1024, f.Requests, f.ReadyMs)
		if f.Bytes <= 0 || f.Requests < 3 {
			t.Fatalf("no figures read: %+v", f)
		}
	}
}
