package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestOwnerDailyWork (issue 22) walks the owner's daily pages in Chromium: the app list
// (a new app joins it, "1 application"), the overview tab, users (defaults kept after a
// creation, sortable columns marked, rows selected and banned in one bulk request, select-all
// cleared, delete expired), the audit log (the bulk entry's before and after side by side),
// API keys (shown once, revoked), signing (rotate with a confirmation), the secret's mask
// after regenerating, log detail, rules' words, and the server away (an in-place notice with
// Retry under the tabs; Live shows no one online) then back.
func TestOwnerDailyWork(t *testing.T) {
	for _, size := range []struct {
		name          string
		width, height int
	}{{"desktop", 1280, 800}, {"phone", 390, 844}} {
		t.Run(size.name, func(t *testing.T) { ownerDailyWork(t, size.width, size.height) })
	}
}

func ownerDailyWork(t *testing.T, width, height int) {
	n := startNode(t)
	n.admin(t, "create", "--username", "daily", "--email", "daily@example.com", "--password", "Daily-Pass-12")
	b := newBrowser(t, width, height)
	axe := axeSource(t) // with it, the new pages are checked at this size too
	check := func(page string) {
		t.Helper()
		if axe != nil {
			b.axe(axe, fmt.Sprintf("%s at %d×%d", page, width, height))
		}
	}
	jwt := signIn(t, b, n, "daily", "Daily-Pass-12")
	auth := map[string]string{"Authorization": "Bearer " + jwt}

	// The app list: the new app is in the table above its success message; one application.
	b.fill("main form", map[string]string{"name": "Daily"})
	b.click("main", "Create application")
	b.waitText("#apps tbody", "Daily")
	b.waitText("main", "1 of 1 application on")
	var appID string
	b.eval(`document.querySelector('#apps tbody tr').dataset.id`, &appID)
	base := n.url + "/api/apps/" + appID

	// The overview is the first tab.
	b.do("open app", chromedp.Click(`#open-app`, chromedp.ByQuery))
	b.waitText("#app-overview", "Failed logins")
	b.waitText(".tabs a.active", "Overview")
	check("overview")

	// Users: the level and device limit keep their defaults after a creation.
	b.hash("apps/" + appID + "/users")
	b.fill("main form.inline", map[string]string{"username": "first", "password": "User-Pass-12"})
	b.click("main", "Create user")
	b.waitText("main table", "first")
	var defaults string
	b.eval(`[...document.querySelectorAll('main form.inline [name=level], main form.inline [name=deviceLimit]')].map((i) => i.value).join(',')`, &defaults)
	if defaults != "1,1" {
		t.Fatalf("level and device limit after a creation: %q, want 1,1", defaults)
	}
	for i := range 4 {
		call(t, "POST", base+"/users", auth, map[string]any{"username": fmt.Sprintf("user%d", i), "password": "User-Pass-12"})
	}
	call(t, "POST", base+"/users", auth, map[string]any{"username": "gone", "password": "User-Pass-12", "expiresAt": "2020-01-01T00:00:00Z"})
	b.hash("apps/" + appID + "/overview")
	b.waitText("#app-overview", "Users")
	b.hash("apps/" + appID + "/users")
	b.waitText(".pager", "of 6")
	var sorted string
	b.eval(`document.querySelector('th[aria-sort]')?.dataset.sort + ' ' + document.querySelectorAll('th[data-sort] .arrow').length`, &sorted)
	if sorted != "created_at 4" {
		t.Fatalf("sortable columns: %q", sorted)
	}
	b.do("select all", chromedp.Evaluate(`document.querySelector('thead input[aria-label="select all"]').click()`, nil))
	b.waitText("#selected-count", "6 users selected")
	check("users with a selection")
	b.click(".selection-bar", "Ban")
	b.fill("dialog", map[string]string{"banReason": "chargeback"})
	b.click("dialog", "Ban")
	b.waitText("#toasts", "6 users done")
	b.waitText("#selected-count", "none selected")
	var allChecked bool
	b.eval(`document.querySelector('thead input[aria-label="select all"]').checked`, &allChecked)
	if allChecked {
		t.Fatal("select-all stays checked after the bulk action")
	}
	b.waitText("main table", "banned")
	got := call(t, "GET", base+"/users?banned=true", auth, nil)
	if got["total"] != float64(6) {
		t.Fatalf("%v users banned, want 6", got["total"])
	}
	b.click("main", "Delete expired…")
	b.click("dialog", "Delete")
	b.waitText("#toasts", "1 user done")
	b.waitText(".pager", "of 5")
	// Import: a CSV of two users, one request.
	b.click("main", "Import CSV…")
	b.do("csv", chromedp.SetValue(`#import-text`, "username,password,level\nimported1,User-Pass-12,2\nimported2,User-Pass-12,3\n", chromedp.ByQuery))
	b.click("dialog", "Import")
	b.waitText("#toasts", "2 users imported")
	b.waitText(".pager", "of 7")

	// The audit log (the app's tab): the bulk ban with each user's before and after.
	b.hash("apps/" + appID + "/audit")
	b.waitText("#audit tbody", "users")
	// The newest POSTs are the import, then "delete expired", then the ban.
	b.do("open the ban's changes", chromedp.Evaluate(`[...document.querySelectorAll('#audit tbody tr')].filter((r) => r.textContent.includes('POST'))[2]
		.querySelector('button').click()`, nil))
	b.waitText("dialog .diff", "chargeback")
	check("audit change")
	var sides int
	b.eval(`document.querySelectorAll('dialog .diff pre').length`, &sides)
	if sides != 2 {
		t.Fatalf("%d sides in the change view", sides)
	}
	b.click("dialog", "Close")

	// API keys: scopes by resource, the key shown once, revoke.
	b.hash("api-keys")
	b.fill("main form", map[string]string{"name": "support bot"})
	b.do("choose scopes", chromedp.Evaluate(`document.querySelector('input[value="users:read"]').click(); document.querySelector('input[value="licenses:create"]').click()`, nil))
	b.click("main", "Create key")
	var key string
	b.do("key shown once", chromedp.WaitVisible(`#new-key input`, chromedp.ByQuery), chromedp.Value(`#new-key input`, &key, chromedp.ByQuery))
	if len(key) < 20 {
		t.Fatalf("key %q", key)
	}
	b.waitText("#api-keys", "licenses:create, users:read")
	check("api keys")
	if strings.Contains(b.text("#api-keys"), key) {
		t.Fatal("the list shows the whole key")
	}
	b.click("#api-keys", "Revoke")
	b.click("dialog", "Revoke")
	b.waitText("#api-keys", "No API keys yet")

	// Settings: the mask follows a regenerated secret; signing rotates after a confirmation.
	b.hash("apps/" + appID + "/settings")
	before := b.text("#current-secret")
	b.click("main", "Regenerate secret")
	b.click("dialog", "Regenerate")
	// The new secret's own box: the signing key's public key is in a .secret box too.
	b.do("new secret", chromedp.WaitVisible(`#new-secret .secret input`, chromedp.ByQuery))
	var fresh string
	b.eval(`document.querySelector('#new-secret .secret input').value`, &fresh)
	if now := b.text("#current-secret"); now == before || now != "***"+fresh[len(fresh)-6:] {
		t.Fatalf("secret mask %q after regenerating (was %q)", now, before)
	}
	oldKey := b.text("#public-key textarea")
	b.click("main", "Rotate the signing key…")
	b.waitText("dialog", "offline license files already issued no longer verify")
	b.click("dialog", "Rotate the key")
	b.waitText("#toasts", "New signing key")
	var newKey string
	b.eval(`document.querySelector('#public-key textarea').value`, &newKey)
	if newKey == "" || newKey == oldKey {
		t.Fatal("the public key did not change on the page")
	}

	// Rules speak one language; a country rule says why it is inactive.
	call(t, "POST", base+"/rules", auth, map[string]any{"type": "country", "action": "blacklist", "value": "FR"})
	b.hash("apps/" + appID + "/rules")
	b.waitText("main table", "deny")
	b.waitText("main table", "GeoIP")

	// The server goes away: the tab says so in place under its tabs; Retry brings it back.
	n.admin(t, "set", "--username", "daily", "--plan", "business") // the Live page needs it
	b.hash("apps/" + appID + "/live")
	b.waitText("#socket-state", "connected")
	n2 := n.restartLater(t)
	b.waitText("#socket-state", "reconnecting")
	b.waitText("#sessions", "Unknown while the server cannot be reached")
	b.hash("apps/" + appID + "/logs")
	b.do("away notice", chromedp.WaitVisible(`.away[role=alert]`, chromedp.ByQuery))
	check("server away")
	var tabs int
	b.eval(`document.querySelectorAll('.tabs a').length`, &tabs)
	if tabs < 10 {
		t.Fatalf("the tabs went away with the server (%d links)", tabs)
	}
	n2()
	b.click(".away", "Retry")
	b.do("logs back", chromedp.WaitVisible(`#logs table`, chromedp.ByQuery))
	b.waitText("main table", "user.ban")
	b.do("details", chromedp.Evaluate(`[...document.querySelectorAll('#logs tbody button')].find((x) => x.textContent === 'Details').click()`, nil))
	b.waitText("dialog", "Data")
	b.click("dialog", "Close")
	b.shot(fmt.Sprintf("daily-%d", width))
	b.clean()
}

// restartLater stops the node now and answers a func that starts it again on the same
// address and data (the page meanwhile sees the server away).
func (n *node) restartLater(t *testing.T) func() {
	t.Helper()
	n.stop()
	return func() {
		t.Helper()
		*n = *startNodeAt(t, n.addr, n.dataDir, n.env...)
	}
}
