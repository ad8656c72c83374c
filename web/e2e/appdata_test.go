package e2e

import (
	"testing"
)

// TestSettingsDevicesUserActionsRulesTokensIntegrations drives the remaining app pages:
// settings (the HWID lock), devices a real client login records, the user page's actions
// (reset HWID, extend, kill sessions), rules, tokens and a CUSTOM integration.
func TestSettingsDevicesUserActionsRulesTokensIntegrations(t *testing.T) {
	n := startNode(t, "KEYWARD_WEBHOOKS_ALLOW_PRIVATE=true")
	n.admin(t, "create", "--username", "vendor", "--email", "vendor@example.com", "--password", "Vendor-Pass-1")
	n.admin(t, "set", "--username", "vendor", "--plan", "business")
	b := newBrowser(t, 1280, 800)
	jwt := signIn(t, b, n, "vendor", "Vendor-Pass-1")
	auth := map[string]string{"Authorization": "Bearer " + jwt}
	app := call(t, "POST", n.url+"/api/apps", auth, map[string]any{"name": "Suite"})
	appID, secret := app["id"].(string), app["secret"].(string)
	alice := call(t, "POST", n.url+"/api/apps/"+appID+"/users", auth, map[string]any{"username": "alice", "password": "User-Pass-12"})

	// Settings: lock accounts to their device.
	b.hash("apps/" + appID + "/settings")
	b.waitText("main", "Regenerate secret")
	b.eval(`document.querySelector('main [name=lockHwid]').click()`, nil)
	b.click("main", "Save settings")
	b.waitText("#toasts", "Saved")
	if got := call(t, "GET", n.url+"/api/apps/"+appID, auth, nil); got["lockHwid"] != true {
		t.Fatalf("lockHwid not saved: %v", got)
	}
	b.shot("settings-1280")

	// A client login records its device.
	_, client := clientSession(t, n.url, secret, "alice", "User-Pass-12")
	b.hash("apps/" + appID + "/devices")
	b.waitText("main table", "HW-1")

	// The user page: kill sessions (the socket is told), reset HWID, extend.
	b.hash("apps/" + appID + "/users/" + alice["id"].(string))
	b.waitText("#user-name", "alice")
	b.click("main", "Kill sessions")
	b.waitText("#toasts", "1 session(s) ended")
	readType(t, client, "force_logout")
	b.click("main", "Reset HWID")
	b.waitText("#toasts", "1 device(s) removed")
	b.fill("main form.inline", map[string]string{"days": "30"})
	b.click("main", "Extend")
	b.waitText("#toasts", "Now expires")
	if got := call(t, "GET", n.url+"/api/apps/"+appID+"/users/"+alice["id"].(string), auth, nil); got["expiresAt"] == nil {
		t.Fatalf("not extended: %v", got)
	}
	b.shot("user-1280")

	// Rules: a refused value keeps the form; a CIDR is stored normalised.
	b.hash("apps/" + appID + "/rules")
	b.fill("main form.inline", map[string]string{"value": "not-an-ip"})
	b.click("main", "Add rule")
	b.do("rule refused", pollNonEmpty("main form.inline .error"))
	b.fill("main form.inline", map[string]string{"value": "10.1.2.3/8", "note": "office"})
	b.click("main", "Add rule")
	b.waitText("main table", "10.0.0.0/8")

	// Tokens.
	b.hash("apps/" + appID + "/tokens")
	b.fill("main form.inline", map[string]string{"count": "3", "note": "beta"})
	b.click("main", "Create tokens")
	b.waitText("main", "3 tokens created")
	b.waitText(".pager", "of 3")

	// A CUSTOM integration: its signing secret is shown once; a test delivery reports failure.
	b.hash("apps/" + appID + "/integrations")
	b.fill("main form", map[string]string{"name": "hooks", "type": "CUSTOM", "webhookUrl": "https://127.0.0.1:9/hook"})
	b.click("main", "Create integration")
	b.waitText("main", "Signing secret of hooks")
	b.waitText("main table", "127.0.0.1")
	b.click("main table", "Test")
	b.waitText("#toasts", "Not delivered")
	b.shot("integrations-1280")
	b.clean()
}
