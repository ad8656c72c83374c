package httpapi_test

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	ts "github.com/keyward/keyward/internal/testserver"
)

func TestClientPerAppSettings(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Settings")
		for _, bad := range []any{59, 30*24*3600 + 1, -1, "60"} {
			expect(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"sessionTimeout": bad}), http.StatusBadRequest, "VALIDATION_ERROR")
		}
		r := a.do("PATCH", "/api/apps/"+appID, map[string]any{"sessionTimeout": 90, "fileEncryption": false})
		expectOK(t, r, http.StatusOK)
		if r.Data()["sessionTimeout"] != float64(90) || r.Data()["fileEncryption"] != false {
			t.Fatalf("update: %s", r.Raw)
		}
		content := []byte("plain bytes for a plain app")
		uploadFile(a, appID, "tool.bin", "1.0.0", content)

		var c *sdk
		waitFor(t, func() bool { // the change reaches the app actor through the event pipeline
			c = newSDK(t, s, secret)
			r := c.init("1.0.0", "h")
			expectOK(t, r, http.StatusOK)
			exp, err := time.Parse(time.RFC3339, r.Data()["expiresAt"].(string))
			return err == nil && time.Until(exp) < 2*time.Minute
		})
		resp, body := c.download(map[string]any{"name": "tool.bin"}, "")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("X-File-Encrypted") != "" || !bytes.Equal(body, content) {
			t.Fatalf("download of a plain-files app: %d %v %q", resp.StatusCode, resp.Header, body)
		}
		// Back to the default: encrypted again.
		expectOK(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"sessionTimeout": 0, "fileEncryption": true}), http.StatusOK)
		waitFor(t, func() bool {
			c := newSDK(t, s, secret)
			c.mustInit()
			resp, _ := c.download(map[string]any{"name": "tool.bin"}, "")
			return resp.Header.Get("X-File-Encrypted") == "1"
		})
	})
}

// TestPlanChangeReachesRunningApps: the owner's plan is part of each app's snapshot; a
// plan change reloads the snapshots at once, not at the next background refresh.
func TestPlanChangeReachesRunningApps(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		a := api{t, s, o.Token}
		_, secret := a.createApp("Plans")
		c := newSDK(t, s, secret)
		c.mustInit()
		expectOK(t, c.withNonce("register", map[string]any{"username": "ivan", "password": "pw-ivan-1"}), http.StatusOK)
		expect(t, c.post("license-variables", nil, ""), http.StatusForbidden, "PLAN_FEATURE")
		setPlan(t, s, o.Username, "pro")
		waitFor(t, func() bool { return c.post("license-variables", nil, "").Status == http.StatusOK })
	})
}
