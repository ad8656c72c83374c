package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/keyward/keyward/internal/testtls"
)

// hookReceiver is an HTTPS webhook receiver on loopback that records what it got.
type hookReceiver struct {
	url  string
	ca   string
	mu   sync.Mutex
	hits []receivedHook
}

type receivedHook struct {
	header http.Header
	body   []byte
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	ca := testtls.NewCA(t)
	r := &hookReceiver{ca: ca.PEMFile(t)}
	srv := ca.NewHTTPSServer(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.hits = append(r.hits, receivedHook{req.Header.Clone(), body})
		r.mu.Unlock()
		w.Write([]byte(`{"ok":true,"from":"receiver"}`))
	}))
	r.url = srv.URL + "/hook"
	return r
}

// wait answers the first n requests once they arrived (bounded).
func (r *hookReceiver) wait(t *testing.T, n int) []receivedHook {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r.mu.Lock()
		got := append([]receivedHook(nil), r.hits...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver got %d requests, want %d", len(got), n)
		}
	}
}

// downloads sends the tab's downloads to a fresh folder, answered.
func (b *browser) downloads() string {
	b.t.Helper()
	dir := b.t.TempDir()
	b.do("downloads", cdpbrowser.SetDownloadBehavior(cdpbrowser.SetDownloadBehaviorBehaviorAllow).WithDownloadPath(dir))
	return dir
}

// downloaded waits for the file name in dir (complete: Chromium writes a .crdownload
// first) and answers its content.
func downloaded(t *testing.T, dir, name string) string {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if raw, err := os.ReadFile(filepath.Join(dir, name)); err == nil && len(raw) > 0 {
			return string(raw)
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(dir)
			t.Fatalf("no download %s in %s (%v)", name, dir, entries)
		}
	}
}

// TestDeliveriesDialogLicensesButtonsAndAPIDocs (issue 22) drives, in Chromium, what the
// owner does with a webhook's deliveries (open the dialog, see a delivery's request exactly
// as the receiver got it, redeliver it), the licenses page's buttons (offline file, seats
// held and freed, add time to unused keys, export every key, import keys) and the API
// reference (linked from the dashboard, styled, a filter that leaves no empty heading),
// with axe-core at 0 violations on each view when KEYWARD_TEST_AXE is set.
func TestDeliveriesDialogLicensesButtonsAndAPIDocs(t *testing.T) {
	for _, size := range []struct {
		name          string
		width, height int
	}{{"desktop", 1280, 800}, {"phone", 390, 844}} {
		t.Run(size.name, func(t *testing.T) { deliveriesLicensesAndDocs(t, size.width, size.height) })
	}
}

func deliveriesLicensesAndDocs(t *testing.T, width, height int) {
	rc := newHookReceiver(t)
	n := startNode(t, "KEYWARD_WEBHOOKS_ALLOW_PRIVATE=true", "KEYWARD_WEBHOOKS_CA_FILE="+rc.ca)
	n.admin(t, "create", "--username", "hooks", "--email", "hooks@example.com", "--password", "Hooks-Pass-12")
	b := newBrowser(t, width, height)
	axe := axeSource(t)
	check := func(view string) {
		t.Helper()
		if axe != nil {
			b.axe(axe, fmt.Sprintf("%s at %d×%d", view, width, height))
		}
	}
	dir := b.downloads()
	jwt := signIn(t, b, n, "hooks", "Hooks-Pass-12")
	auth := map[string]string{"Authorization": "Bearer " + jwt}
	app := call(t, "POST", n.url+"/api/apps", auth, map[string]any{"name": "Hooks"})
	appID, secret := app["id"].(string), app["secret"].(string)
	base := n.url + "/api/apps/" + appID
	call(t, "POST", base+"/integrations", auth, map[string]any{"name": "Ops", "type": "CUSTOM", "webhookUrl": rc.url, "events": []string{"rule.create"}})
	call(t, "POST", base+"/rules", auth, map[string]any{"type": "ip", "action": "blacklist", "value": "203.0.113.9"})
	first := rc.wait(t, 1)[0]

	// Deliveries: the dialog lists the attempt; Payload shows the request as it was sent.
	b.hash("apps/" + appID + "/integrations")
	b.click("main", "Deliveries")
	b.waitText("dialog", "rule.create")
	b.waitText("dialog", `"from":"receiver"`) // the receiver's answer
	check("deliveries dialog")
	b.click("dialog", "Payload")
	b.waitText("#delivery-detail", "Request as sent")
	var body, headers string
	b.eval(`document.querySelector('#delivery-detail .sent-body').textContent`, &body)
	b.eval(`document.querySelector('#delivery-detail .sent-headers').textContent`, &headers)
	if body != string(first.body) {
		t.Fatalf("the dialog shows body %q, the receiver got %q", body, first.body)
	}
	for _, name := range []string{"X-Keyward-Signature", "X-Keyward-Delivery", "X-Keyward-Timestamp", "Content-Length"} {
		if line := name + ": " + first.header.Get(name); !strings.Contains(headers, line) {
			t.Errorf("the dialog's headers lack %q:\n%s", line, headers)
		}
	}
	if strings.Contains(headers, "/hook") {
		t.Errorf("the dialog shows the URL path:\n%s", headers)
	}
	check("delivery detail")
	b.click("dialog", "Redeliver")
	b.waitText("#toasts", "Queued again")
	second := rc.wait(t, 2)[1]
	if second.header.Get("X-Keyward-Delivery") != first.header.Get("X-Keyward-Delivery") {
		t.Fatalf("the redelivery carries event id %q, the first %q", second.header.Get("X-Keyward-Delivery"), first.header.Get("X-Keyward-Delivery"))
	}
	b.click("dialog", "Close")
	b.click("main", "Deliveries")
	b.do("two attempts", chromedp.Poll(`document.querySelectorAll('dialog tbody tr').length === 2`, nil, chromedp.WithPollingTimeout(15*time.Second)))
	b.click("dialog", "Payload")
	b.waitText("#delivery-detail", "2 attempt(s)")
	b.eval(`document.querySelector('#delivery-detail .sent-body').textContent`, &body)
	if body != string(second.body) {
		t.Fatalf("after the redelivery the dialog shows body %q, the receiver got %q", body, second.body)
	}
	b.click("dialog", "Close")

	// Licenses: a floating key (2 seats, 30 days once activated) and an unused one.
	lic := call(t, "POST", base+"/licenses", auth, map[string]any{"count": 1, "maxSeats": 2, "duration": 30 * 86400, "note": "floating"})["licenses"].([]any)[0].(map[string]any)
	call(t, "POST", base+"/licenses", auth, map[string]any{"count": 1, "duration": 86400, "note": "spare"})
	// One seat held through the Client API, as an SDK holds it.
	session := call(t, "POST", n.url+"/api/client/init", nil, map[string]string{"secret": secret, "version": "1.0.0", "hwid": "HW-1"})["sessionToken"].(string)
	nonce := call(t, "POST", n.url+"/api/client/nonce", nil, map[string]string{"sessionToken": session})["nonce"].(string)
	call(t, "POST", n.url+"/api/client/license", map[string]string{"X-Nonce": nonce}, map[string]string{"sessionToken": session, "licenseKey": lic["key"].(string), "hwid": "HW-1"})

	b.hash("apps/" + appID + "/licenses")
	b.waitText("main table", "floating")
	b.click("main table", "2 seats")
	b.waitText("#seats", "1 of 2 seats in use.")
	check("seats dialog")
	b.click("#seats", "Free")
	b.waitText("#toasts", "Seat freed")
	b.waitText("#seats", "No seat is held now.")
	b.click("dialog", "Close")

	b.do("offline file", chromedp.Evaluate(`[...[...document.querySelectorAll('main tbody tr')].find((r) => r.textContent.includes('floating'))
		.querySelectorAll('button')].find((x) => x.textContent === 'Offline file').click()`, nil))
	b.waitText("#toasts", "License file saved")
	var files []string
	for deadline := time.Now().Add(15 * time.Second); len(files) == 0; time.Sleep(50 * time.Millisecond) {
		// *.lic, not *.lic*: Chromium writes KEY.lic.crdownload until the download ends.
		files, _ = filepath.Glob(filepath.Join(dir, "*.lic"))
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(dir)
			t.Fatalf("no license file downloaded (%v)", entries)
		}
	}
	if name := filepath.Base(files[0]); name != lic["key"].(string)+".lic" {
		t.Fatalf("license file saved as %s", name)
	}
	downloaded(t, dir, filepath.Base(files[0]))
	// The saved file verifies offline with the app's public key, as a customer's copy does.
	pk := call(t, "GET", base, auth, nil)["publicKey"].(map[string]any)["base64"].(string)
	if out, err := exec.Command(binary, "license", "verify", "--public-key", pk, "--app-id", appID, files[0]).CombinedOutput(); err != nil {
		t.Fatalf("keyward license verify on the downloaded file: %v\n%s", err, out)
	}

	spareBefore := unusedDuration(t, base, auth, "spare")
	b.click("main", "Add time to unused…")
	b.do("days", chromedp.SetValue(`dialog [name=days]`, "7", chromedp.ByQuery))
	check("add time dialog")
	b.click("dialog", "Add time")
	b.waitText("#toasts", "lengthened")
	if after := unusedDuration(t, base, auth, "spare"); after != spareBefore+7*86400 {
		t.Fatalf("the unused key's duration went from %v to %v, want 7 days more", spareBefore, after)
	}

	b.click("main", "Import keys…")
	b.do("keys", chromedp.SetValue(`#import-text`, "key,level,note\nIMPORTED-KEY-0001,3,imported\n", chromedp.ByQuery))
	check("import dialog")
	b.click("dialog", "Import")
	b.waitText("#toasts", "1 key imported")
	b.waitText("main table", "IMPORTED-KEY-0001")

	b.click("main", "Export all (CSV)")
	b.waitText("#toasts", "3 keys exported")
	exported := downloaded(t, dir, "licenses-all.csv")
	for _, want := range []string{"key,level,", lic["key"].(string), "IMPORTED-KEY-0001", "spare"} {
		if !strings.Contains(exported, want) {
			t.Errorf("the export lacks %q:\n%s", want, exported)
		}
	}
	check("licenses")

	// The API reference: linked from the dashboard, styled like it, and its filter leaves
	// no heading without operations.
	var href string
	b.eval(`[...document.querySelectorAll('a')].find((a) => a.textContent === 'API docs')?.getAttribute('href') ?? ''`, &href)
	if href != "/api/docs" {
		t.Fatalf("the dashboard links the API docs as %q", href)
	}
	b.do("open the API docs", chromedp.Navigate(n.url+href), chromedp.WaitVisible(`section[data-tag] details`, chromedp.ByQuery))
	b.do("styled", chromedp.Poll(`[...document.styleSheets].some((s) => (s.href || '').includes('app.css'))`, nil, chromedp.WithPollingTimeout(10*time.Second)))
	var font string
	b.eval(`getComputedStyle(document.body).fontFamily`, &font)
	if strings.Contains(strings.ToLower(font), "times") {
		t.Fatalf("the API docs are unstyled (font %q)", font)
	}
	check("api docs")
	b.do("filter", chromedp.SetValue(`#filter`, "licenses:update", chromedp.ByQuery), chromedp.Evaluate(`document.getElementById('filter').dispatchEvent(new Event('input'))`, nil))
	var shown, empty int
	b.eval(`[...document.querySelectorAll('section[data-tag]')].filter((s) => !s.hidden).length`, &shown)
	b.eval(`[...document.querySelectorAll('section[data-tag]')].filter((s) => !s.hidden && ![...s.querySelectorAll('details')].some((d) => !d.hidden)).length`, &empty)
	if shown == 0 || empty != 0 {
		t.Fatalf("filtering by licenses:update: %d sections shown, %d of them empty", shown, empty)
	}
	b.do("filter none", chromedp.SetValue(`#filter`, "no-such-operation", chromedp.ByQuery), chromedp.Evaluate(`document.getElementById('filter').dispatchEvent(new Event('input'))`, nil))
	b.eval(`[...document.querySelectorAll('section[data-tag]')].filter((s) => !s.hidden).length`, &shown)
	var none bool
	b.eval(`!document.getElementById('none').hidden`, &none)
	if shown != 0 || !none {
		t.Fatalf("a filter matching nothing: %d sections shown, the no-match line shown %v", shown, none)
	}
	check("api docs filtered to nothing")
	b.clean()
}

// unusedDuration is the duration of the app's license whose note is note.
func unusedDuration(t *testing.T, base string, auth map[string]string, note string) float64 {
	t.Helper()
	for _, l := range call(t, "GET", base+"/licenses?search="+note, auth, nil)["licenses"].([]any) {
		if l := l.(map[string]any); l["note"] == note {
			d, _ := l["duration"].(float64)
			return d
		}
	}
	t.Fatalf("no license with note %s", note)
	return 0
}
