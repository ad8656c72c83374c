package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestSignInHoldsAcrossTabsAndReturns: a second tab takes the browser's sign-in from the
// refresh cookie; after the session ended, signing in returns to the page that was open;
// the Sessions card lists the sessions and signs the others out.
func TestSignInHoldsAcrossTabsAndReturns(t *testing.T) {
	n := startNode(t)
	n.admin(t, "create", "--username", "tabby", "--email", "tabby@example.com", "--password", "Tabby-Pass-123")
	b := newBrowser(t, 1280, 900)
	signIn := func() {
		b.do("sign-in page", chromedp.WaitVisible(`.auth [name=password]`, chromedp.ByQuery))
		b.fill(".auth", map[string]string{"username": "tabby", "password": "Tabby-Pass-123"})
		b.click(".auth", "Sign in")
	}
	b.do("open", chromedp.Navigate(n.url+"/#/login"))
	signIn()
	b.waitText("main", "Applications")
	var cookieSeen bool
	b.eval(`document.cookie.includes('kw_refresh')`, &cookieSeen)
	if cookieSeen {
		t.Fatal("the refresh cookie is readable by the page's scripts")
	}

	// A second tab of the same browser opens the page asked for, signed in.
	tab, cancel := chromedp.NewContext(b.ctx)
	defer cancel()
	tab, cancelT := context.WithTimeout(tab, 30*time.Second)
	defer cancelT()
	var second string
	if err := chromedp.Run(tab, chromedp.Navigate(n.url+"/#/account"),
		// An interval, not animation frames: a tab opened beside another may not paint.
		chromedp.Poll(`(document.querySelector('#sessions')?.textContent ?? '').includes('this browser')`, nil,
			chromedp.WithPollingInterval(100*time.Millisecond)),
		chromedp.Text("main h1", &second, chromedp.ByQuery)); err != nil {
		var text string
		_ = chromedp.Run(b.ctx, chromedp.Evaluate(`document.body.innerText`, &text))
		t.Fatalf("second tab: %v\nfirst tab:\n%s\nnode log:\n%s", err, text, n.stderr)
	}
	if second != "Account" {
		t.Fatalf("second tab shows %q, want the Account page", second)
	}

	// The session ends (signed out elsewhere): the open page asks for a sign-in and
	// returns to itself after it.
	b.do("account page", chromedp.Evaluate(`location.hash = '#/account'`, nil))
	b.waitText("#sessions", "this browser")
	var token string
	b.eval(`sessionStorage.getItem('keyward.token')`, &token)
	call(t, "POST", n.url+"/api/auth/logout", map[string]string{"Authorization": "Bearer " + token}, nil)
	b.do("reload the page's data", chromedp.Evaluate(`location.hash = '#/apps'; setTimeout(() => { location.hash = '#/account'; }, 0)`, nil))
	signIn()
	b.waitText("main h1", "Account")
	b.waitText("#sessions", "this browser")

	// Another sign-in elsewhere is listed and signed out from here.
	call(t, "POST", n.url+"/api/auth/login", map[string]string{"User-Agent": "Mozilla/5.0 Firefox/133.0"},
		map[string]string{"username": "tabby", "password": "Tabby-Pass-123"})
	b.do("reload", chromedp.Evaluate(`location.hash = '#/apps'; setTimeout(() => { location.hash = '#/account'; }, 0)`, nil))
	b.waitText("#sessions", "Firefox")
	b.click("#app", "Sign out all other sessions")
	b.click("dialog", "Sign out others")
	b.waitText("body", "other session")
	b.do("reload", chromedp.Evaluate(`location.hash = '#/apps'; setTimeout(() => { location.hash = '#/account'; }, 0)`, nil))
	b.waitText("#sessions", "this browser")
	b.waitGone("#sessions", "Firefox")
	b.shot("sessions-1280")
	b.clean()
}
