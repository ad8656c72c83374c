package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// TestAccessibility runs the axe-core checker (WCAG 2 A and AA rules) on the main pages. It
// needs axe-core's axe.min.js, which is not vendored (the product does not use it): set
// KEYWARD_TEST_AXE to its path, e.g. after `npm install axe-core` in a scratch folder.
// Every violation fails the test (issue 22: 0 on every page); deploy/testenv.sh installs axe-core
// with npm into its cache and sets KEYWARD_TEST_AXE.
func TestAccessibility(t *testing.T) {
	axePath := os.Getenv("KEYWARD_TEST_AXE")
	if axePath == "" {
		t.Skip("set KEYWARD_TEST_AXE to axe-core's axe.min.js to run the accessibility check")
	}
	axe, err := os.ReadFile(axePath)
	if err != nil {
		t.Fatal(err)
	}
	n := startNode(t)
	n.admin(t, "create", "--username", "a11y", "--email", "a11y@example.com", "--password", "A11y-Pass-12")
	n.admin(t, "set", "--username", "a11y", "--plan", "business")
	b := newBrowser(t, 1280, 800)
	check := func(page string) { t.Helper(); b.axe(axe, page) }
	b.do("open", chromedp.Navigate(n.url+"/"), chromedp.WaitVisible(`.auth [name=username]`, chromedp.ByQuery))
	check("sign-in")
	b.hash("register")
	b.do("register", chromedp.WaitVisible(`.auth [name=email]`, chromedp.ByQuery))
	check("register")
	b.hash("login")
	b.fill(".auth", map[string]string{"username": "a11y", "password": "A11y-Pass-12"})
	b.click(".auth", "Sign in")
	b.waitText("main", "Applications")
	b.fill("main", map[string]string{"name": "Shop"})
	b.click("main", "Create application")
	check("applications")
	b.do("open app", chromedp.WaitVisible(`#open-app`, chromedp.ByQuery), chromedp.Click(`#open-app`, chromedp.ByQuery))
	for _, p := range []string{"overview", "users", "licenses", "variables", "files", "devices", "tokens", "rules", "logs", "analytics",
		"integrations", "live", "hooks", "audit", "settings"} {
		b.do("open "+p, chromedp.Evaluate(`location.hash = location.hash.replace(/[^/]+$/, `+js(p)+`)`, nil))
		b.do("wait "+p, chromedp.WaitVisible(`.tabs a.active`, chromedp.ByQuery), chromedp.Sleep(500*time.Millisecond))
		check(p)
	}
	b.hash("account")
	b.waitText("main", "Two-factor")
	check("account")
	b.hash("api-keys")
	b.waitText("main", "New API key")
	check("api-keys")
	b.hash("audit")
	b.waitText("#audit", "apps")
	check("audit")
}

// axe runs axe-core (its script in src) on the page as it is and fails the test on any
// violation (issue 22: 0 of any impact).
func (b *browser) axe(src []byte, page string) {
	b.t.Helper()
	b.do("load axe", chromedp.Evaluate(string(src), nil))
	var out []struct {
		ID     string `json:"id"`
		Impact string `json:"impact"`
		Help   string `json:"help"`
		Nodes  int    `json:"nodes"`
		Target string `json:"target"`
	}
	b.do("axe "+page, chromedp.Evaluate(`axe.run(document, {runOnly: ['wcag2a', 'wcag2aa']}).then((r) => r.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length, target: String(v.nodes[0]?.target)})))`, &out,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	var bad []string
	for _, v := range out {
		bad = append(bad, fmt.Sprintf("%s: %s [%s] %s ×%d (first: %s)", page, v.ID, v.Impact, v.Help, v.Nodes, v.Target))
	}
	b.t.Logf("%s: %d violations", page, len(out))
	if len(bad) > 0 {
		b.t.Errorf("accessibility violations:\n%s", strings.Join(bad, "\n"))
	}
}

// axeSource reads axe-core's script when KEYWARD_TEST_AXE names it (nil otherwise).
func axeSource(t *testing.T) []byte {
	t.Helper()
	p := os.Getenv("KEYWARD_TEST_AXE")
	if p == "" {
		return nil
	}
	src, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return src
}
