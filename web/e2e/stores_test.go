package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/keyward/keyward/core/commerce"
	"github.com/keyward/keyward/core/commerce/commercetest"
)

// TestStoresTab: an owner connects a store in the Stores tab, sees the receiver address,
// and after a signed sale arrives sees the order, its keys and the raw notification; axe
// finds no violation on the tab (when KEYWARD_TEST_AXE is set).
func TestStoresTab(t *testing.T) {
	n := startNode(t)
	n.admin(t, "create", "--username", "seller", "--email", "seller@example.com", "--password", "Seller-Pass-1")
	b := newBrowser(t, 1280, 800)
	jwt := signIn(t, b, n, "seller", "Seller-Pass-1")
	auth := map[string]string{"Authorization": "Bearer " + jwt}
	appID := call(t, "POST", n.url+"/api/apps", auth, map[string]any{"name": "Shop"})["id"].(string)

	// Connect Sellix through the page.
	b.hash("apps/" + appID + "/stores")
	b.waitText("main", "No store connected.")
	b.do("pick sellix", chromedp.SetValue(`main [name=provider]`, "sellix", chromedp.ByQuery))
	b.fill("main", map[string]string{"name": "My Sellix", "secret": "sellix-secret"})
	b.click("main", "Connect")
	b.waitText("main table", "My Sellix")
	if got := b.text("main code.receiver"); !strings.HasPrefix(got, n.url+"/api/stores/receive/") {
		t.Fatalf("receiver address shown: %q", got)
	}
	list := getList(t, n.url+"/api/apps/"+appID+"/stores", jwt)
	conn := list[0]
	call(t, "POST", n.url+"/api/apps/"+appID+"/stores/"+conn["id"].(string)+"/products", auth, map[string]any{"productId": "pro", "keyPrefix": "WEB"})

	// A signed sale arrives.
	body, ct := commercetest.Body(commerce.Sellix, commercetest.Sale{Kind: commerce.KindPaid, EventID: "e1", OrderID: "web-order-1", Product: "pro",
		Email: "buyer@example.com", Amount: 2500, Currency: "eur"})
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

	// The order, its keys and the raw payload are on the page.
	b.hash("apps/" + appID + "/users")
	b.hash("apps/" + appID + "/stores")
	b.waitText("main", "web-order-1")
	b.waitText("main", "25.00 EUR")
	b.click("main", "Details")
	b.waitText(".modal, dialog", "WEB-")
	b.waitText(".modal, dialog", "order:paid")
	b.shot("stores-1280")

	if axePath := os.Getenv("KEYWARD_TEST_AXE"); axePath != "" {
		axe, err := os.ReadFile(axePath)
		if err != nil {
			t.Fatal(err)
		}
		b.do("load axe", chromedp.Evaluate(string(axe), nil))
		var out []string
		b.do("axe stores", chromedp.Evaluate(`axe.run(document, {runOnly: ['wcag2a', 'wcag2aa']}).then((r) => r.violations.map((v) => v.id + ' [' + v.impact + '] ' + v.help + ' (first: ' + String(v.nodes[0]?.target) + ')'))`, &out,
			func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
		if len(out) > 0 {
			t.Errorf("axe on the Stores tab with an order open: %d violations:\n%s", len(out), strings.Join(out, "\n"))
		}
	}
}

// getList reads a list answer (data is an array).
func getList(t *testing.T, url, jwt string) []map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+jwt)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data []map[string]any `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Data) == 0 {
		t.Fatalf("GET %s: %v %v", url, err, out)
	}
	return out.Data
}
