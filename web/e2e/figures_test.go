package e2e

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// loadFigures reads what the page loaded (bytes over the wire: the navigation and every
// resource) and when it became usable (the dashboard's keyward-ready mark).
type loadFigures struct {
	Bytes    float64 `json:"bytes"`
	Requests int     `json:"requests"`
	ReadyMs  float64 `json:"readyMs"`
}

const figuresJS = `(() => {
	const nav = performance.getEntriesByType('navigation')[0];
	const res = performance.getEntriesByType('resource');
	const ready = performance.getEntriesByName('keyward-ready')[0];
	return { bytes: (nav ? nav.transferSize : 0) + res.reduce((n, r) => n + r.transferSize, 0),
		requests: 1 + res.length, readyMs: ready ? ready.startTime : -1 };
})()`

// TestFirstLoadFigures (KEYWARD_TEST_FIGURES=1) prints the first-load weight and time of the
// sign-in page and of an app's overview, cache empty, each in a fresh browser.
func TestFirstLoadFigures(t *testing.T) {
	if os.Getenv("KEYWARD_TEST_FIGURES") != "1" {
		t.Skip("set KEYWARD_TEST_FIGURES=1 to measure the first load")
	}
	n := startNode(t)
	n.admin(t, "create", "--username", "figures", "--email", "figures@example.com", "--password", "Figures-Pass-1")
	n.admin(t, "set", "--username", "figures", "--plan", "business")
	for i := range 3 {
		b := newBrowser(t, 1280, 800)
		var f loadFigures
		b.do("sign-in page", chromedp.Navigate(n.url+"/"), chromedp.WaitVisible(`.auth [name=username]`, chromedp.ByQuery),
			chromedp.Poll(`performance.getEntriesByName('keyward-ready').length > 0`, nil, chromedp.WithPollingTimeout(10*time.Second)),
			chromedp.Evaluate(figuresJS, &f))
		t.Logf("sign-in page, run %d: %.1f KB over the wire, %d requests, usable at %.0f ms", i+1, f.Bytes/1024, f.Requests, f.ReadyMs)
		jwt := signIn(t, b, n, "figures", "Figures-Pass-1")
		app := call(t, "POST", n.url+"/api/apps", map[string]string{"Authorization": "Bearer " + jwt}, map[string]any{"name": fmt.Sprintf("Figures %d", i)})
		// A fresh browser for the overview: what a bookmark to it costs.
		b2 := newBrowser(t, 1280, 800)
		// The sign-in is put in the tab's storage, then the overview is loaded anew with the
		// browser cache off: a first load.
		b2.do("sign in again", chromedp.Navigate(n.url+"/"), chromedp.WaitVisible(`.auth [name=username]`, chromedp.ByQuery),
			chromedp.Evaluate(`sessionStorage.setItem('keyward.token', `+js(jwt)+`)`, nil),
			network.Enable(), network.SetCacheDisabled(true),
			chromedp.Navigate(n.url+"/?first-load#/apps/"+app["id"].(string)+"/overview"),
			chromedp.WaitVisible(`#app-overview .stat`, chromedp.ByQuery), chromedp.Evaluate(figuresJS, &f))
		t.Logf("app overview, run %d: %.1f KB over the wire, %d requests, usable at %.0f ms", i+1, f.Bytes/1024, f.Requests, f.ReadyMs)
		if f.Bytes <= 0 || f.Requests < 2 {
			t.Fatalf("no figures read: %+v", f)
		}
	}
}

// TestFindSelectAndBanAtScale (KEYWARD_TEST_SCALE=1): 10,000 users; the owner searches for
// 100 of them, shows 100 a page, selects them all and bans them in one bulk request. Prints
// the time of the search and of the whole.
func TestFindSelectAndBanAtScale(t *testing.T) {
	if os.Getenv("KEYWARD_TEST_SCALE") != "1" {
		t.Skip("set KEYWARD_TEST_SCALE=1 to run the 10,000-user figure")
	}
	n := startNode(t)
	n.admin(t, "create", "--username", "scale", "--email", "scale@example.com", "--password", "Scale-Pass-12")
	n.admin(t, "set", "--username", "scale", "--plan", "business")
	b := newBrowser(t, 1280, 800)
	jwt := signIn(t, b, n, "scale", "Scale-Pass-12")
	auth := map[string]string{"Authorization": "Bearer " + jwt}
	app := call(t, "POST", n.url+"/api/apps", auth, map[string]any{"name": "Scale"})
	appID := app["id"].(string)
	start := time.Now()
	var wg sync.WaitGroup
	work := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				name := fmt.Sprintf("user%05d", i)
				if i%100 == 0 {
					name = fmt.Sprintf("cheat%05d", i) // 100 of 10,000
				}
				call(t, "POST", n.url+"/api/apps/"+appID+"/users", auth, map[string]any{"username": name, "password": "User-Pass-12"})
			}
		}()
	}
	for i := range 10000 {
		work <- i
	}
	close(work)
	wg.Wait()
	t.Logf("10,000 users created through the API in %s", time.Since(start).Round(time.Millisecond))

	b.hash("apps/" + appID + "/users")
	b.waitText(".pager", "of 10,000")
	b.do("100 a page", chromedp.SetValue(`select[aria-label="rows per page"]`, "100", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('select[aria-label="rows per page"]').dispatchEvent(new Event('change'))`, nil))
	b.waitText(".pager", "1–100 of 10,000")
	t0 := time.Now()
	b.fill("form.filters", map[string]string{"search": "cheat"})
	b.click("form.filters", "Filter")
	b.waitText(".pager", "1–100 of 100")
	search := time.Since(t0)
	b.do("select all", chromedp.Evaluate(`document.querySelector('thead input[aria-label="select all"]').click()`, nil))
	b.waitText("#selected-count", "100 users selected")
	b.click(".selection-bar", "Ban")
	b.click("dialog", "Ban")
	b.waitText("#toasts", "100 users done")
	total := time.Since(t0)
	t.Logf("find, select and ban 100 of 10,000 users: %s (search %s)", total.Round(time.Millisecond), search.Round(time.Millisecond))
	if got := call(t, "GET", n.url+"/api/apps/"+appID+"/users?banned=true", auth, nil); got["total"] != float64(100) {
		t.Fatalf("%v banned, want 100", got["total"])
	}
	b.clean()
}
