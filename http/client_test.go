package httpapi_test

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/core/accounts"
	ts "github.com/keyward/keyward/internal/testserver"
)

// sdk behaves like an official client SDK (CLIENT-SDKS.md §1–2): every call is a POST with
// a JSON body carrying sessionToken, and a fresh nonce is fetched right before each nonce
// call and sent once in X-Nonce.
type sdk struct {
	t      *testing.T
	s      *ts.Server
	ip     string
	secret string
	token  string
}

func newSDK(t *testing.T, s *ts.Server, secret string) *sdk {
	return &sdk{t: t, s: s, ip: nextIP(), secret: secret}
}

func (c *sdk) post(path string, body map[string]any, nonce string) ts.Response {
	c.t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	if c.token != "" {
		if _, set := body["sessionToken"]; !set {
			body["sessionToken"] = c.token
		}
	}
	h := map[string]string{"Accept": "application/json"}
	if nonce != "" {
		h["X-Nonce"] = nonce
	}
	r := c.s.Do(c.t, ts.Req{Method: "POST", Path: "/api/client/" + path, Body: body, IP: c.ip, Header: h})
	// Every reply starts with success, whatever the status (the C++ SDK's parser).
	if !bytes.HasPrefix(r.Raw, []byte(`{"success":`)) {
		c.t.Fatalf("%s: reply does not start with success: %s", path, r.Raw)
	}
	if bytes.Contains(r.Raw, []byte(":null")) {
		c.t.Fatalf("%s: reply holds a null member: %s", path, r.Raw)
	}
	return r
}

func (c *sdk) nonce() string {
	c.t.Helper()
	r := c.post("nonce", nil, "")
	expectOK(c.t, r, http.StatusOK)
	return r.Data()["nonce"].(string)
}

// withNonce calls path the way SDKs call login, register, license, activate and heartbeat.
func (c *sdk) withNonce(path string, body map[string]any) ts.Response {
	c.t.Helper()
	return c.post(path, body, c.nonce())
}

var urlSafe = regexp.MustCompile(`^[A-Za-z0-9_-]{20,}$`)

func (c *sdk) init(version, hwid string) ts.Response {
	c.t.Helper()
	r := c.post("init", map[string]any{"secret": c.secret, "version": version, "hwid": hwid}, "")
	if r.Status == http.StatusOK {
		c.token = r.Data()["sessionToken"].(string)
	}
	return r
}

func (c *sdk) mustInit() {
	c.t.Helper()
	expectOK(c.t, c.init("1.0.0", "host-user"), http.StatusOK)
}

func createLicense(a api, appID string, extra map[string]any) string {
	a.t.Helper()
	body := map[string]any{"count": 1}
	for k, v := range extra {
		body[k] = v
	}
	r := a.do("POST", "/api/apps/"+appID+"/licenses", body)
	expectOK(a.t, r, http.StatusCreated)
	return r.Data()["licenses"].([]any)[0].(map[string]any)["key"].(string)
}

func TestClientSDKFlow(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Flow")
		expectOK(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"version": "1.0.0", "antiDebug": true}), http.StatusOK)

		c := newSDK(t, s, secret)
		r := c.init("1.0.0", "host-user")
		expectOK(t, r, http.StatusOK)
		d := r.Data()
		if !urlSafe.MatchString(c.token) || d["appName"] != "Flow" || d["appVersion"] != "1.0.0" || d["antiDebug"] != true ||
			d["antiVM"] != false || d["lockHwid"] != false || d["resumed"] != false || d["expiresAt"] == nil {
			t.Fatalf("init: %s", r.Raw)
		}

		// Login-type calls need a nonce; a reused or missing one changes nothing.
		body := map[string]any{"username": "alice", "password": "pw-alice-1", "email": "", "displayName": "", "licenseKey": "", "hwid": "host-user", "pcName": ""}
		expect(t, c.post("register", body, ""), http.StatusUnauthorized, "NONCE_REQUIRED")
		n := c.nonce()
		r = c.post("register", body, n)
		expectOK(t, r, http.StatusOK)
		d = r.Data()
		if d["key"] != "alice" || d["username"] != "alice" || d["level"] != float64(1) || d["licenseActivated"] != false {
			t.Fatalf("register: %s", r.Raw)
		}
		if _, isList := d["warnings"].([]any); !isList {
			t.Fatalf("register warnings are not a list: %s", r.Raw)
		}
		expect(t, c.post("heartbeat", nil, n), http.StatusUnauthorized, "NONCE_REQUIRED")
		other := newSDK(t, s, secret)
		other.mustInit()
		expect(t, other.post("heartbeat", nil, c.nonce()), http.StatusUnauthorized, "NONCE_REQUIRED") // another session's nonce

		// Heartbeat answers expiresAt; check validates; the init token stays the session.
		r = c.withNonce("heartbeat", nil)
		expectOK(t, r, http.StatusOK)
		if _, err := time.Parse(time.RFC3339, r.Data()["expiresAt"].(string)); err != nil {
			t.Fatalf("heartbeat: %s", r.Raw)
		}
		r = c.post("check", nil, "")
		expectOK(t, r, http.StatusOK)
		if r.Data()["valid"] != true || r.Data()["username"] != "alice" {
			t.Fatalf("check: %s", r.Raw)
		}

		// A second program logs in with the password.
		c2 := newSDK(t, s, secret)
		c2.mustInit()
		expect(t, c2.withNonce("login", map[string]any{"username": "alice", "password": "wrong", "licenseKey": "", "hwid": "h", "pcName": ""}),
			http.StatusUnauthorized, "UNAUTHORIZED")
		r = c2.withNonce("login", map[string]any{"username": "alice", "password": "pw-alice-1", "licenseKey": "", "hwid": "h", "pcName": ""})
		expectOK(t, r, http.StatusOK)
		if r.Data()["username"] != "alice" || r.Data()["avatarUrl"] == "" {
			t.Fatalf("login: %s", r.Raw)
		}
		failed := waitLog(t, a, appID, "user.login_failed")
		if failed["username"] != "alice" {
			t.Fatalf("login_failed entry: %v", failed)
		}

		// End closes the session for good.
		r = c.post("end", nil, "")
		expectOK(t, r, http.StatusOK)
		expect(t, c.post("check", nil, ""), http.StatusUnauthorized, "UNAUTHORIZED")
		expect(t, c.post("nonce", nil, ""), http.StatusUnauthorized, "UNAUTHORIZED")
		waitLog(t, a, appID, "session.end")
	})
}

func TestClientInitRefusals(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Init")
		expect(t, newSDK(t, s, "").init("1.0.0", "h"), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, newSDK(t, s, "not-the-secret").init("1.0.0", "h"), http.StatusUnauthorized, "UNAUTHORIZED")

		expectOK(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"version": "2.0.0"}), http.StatusOK)
		expect(t, newSDK(t, s, secret).init("1.0.0", "h"), http.StatusForbidden, "VERSION_MISMATCH")
		expectOK(t, newSDK(t, s, secret).init("2.0.0", "h"), http.StatusOK)

		// A disabled app refuses at once: the change reaches the app's actor.
		expectOK(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"enabled": false}), http.StatusOK)
		waitFor(t, func() bool { return newSDK(t, s, secret).init("2.0.0", "h").Code() == "APP_DISABLED" })
		expectOK(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"enabled": true}), http.StatusOK)

		// Rules apply at init already.
		ip := nextIP()
		expectOK(t, a.do("POST", "/api/apps/"+appID+"/rules", map[string]any{"type": "ip", "action": "blacklist", "value": ip + "/32"}), http.StatusCreated)
		blocked := newSDK(t, s, secret)
		blocked.ip = ip
		waitFor(t, func() bool { return blocked.init("2.0.0", "h").Code() == "RULE_BLOCKED" })
		entry := waitLog(t, a, appID, "rule.triggered")
		if entry["ipAddress"] != ip {
			t.Fatalf("rule.triggered: %v", entry)
		}
		expectOK(t, newSDK(t, s, secret).init("2.0.0", "h"), http.StatusOK)
	})
}

// waitFor polls cond: dashboard changes reach the app actors through the event pipeline.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestClientLicenseLogin(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Keys")
		key := createLicense(a, appID, map[string]any{"level": 3, "duration": 86400, "maxUses": 1})

		c := newSDK(t, s, secret)
		c.mustInit()
		expect(t, c.withNonce("license", map[string]any{"licenseKey": "NOPE-NOPE", "hwid": "h"}), http.StatusForbidden, "LICENSE_INVALID")
		r := c.withNonce("license", map[string]any{"licenseKey": key, "hwid": "h", "pcName": ""})
		expectOK(t, r, http.StatusOK)
		d := r.Data()
		exp, err := time.Parse(time.RFC3339, d["expiresAt"].(string))
		if d["key"] != key || d["username"] != key || d["level"] != float64(3) || d["returning"] != false || err != nil ||
			exp.Sub(time.Now()) < 23*time.Hour {
			t.Fatalf("first license login: %s", r.Raw)
		}
		// The same key again is a returning user; no use is spent.
		c2 := newSDK(t, s, secret)
		c2.mustInit()
		r = c2.withNonce("license", map[string]any{"licenseKey": key, "hwid": "h"})
		expectOK(t, r, http.StatusOK)
		if r.Data()["returning"] != true {
			t.Fatalf("returning license login: %s", r.Raw)
		}
		r = a.do("GET", "/api/apps/"+appID+"/licenses?search="+key, nil)
		expectOK(t, r, http.StatusOK)
		lic := r.Data()["licenses"].([]any)[0].(map[string]any)
		if lic["usedCount"] != float64(1) || lic["usedBy"] != key {
			t.Fatalf("license after logins: %v", lic)
		}
		waitLog(t, a, appID, "license.activate")

		// A used-up key cannot activate for another account.
		c3 := newSDK(t, s, secret)
		c3.mustInit()
		expectOK(t, c3.withNonce("register", map[string]any{"username": "bob", "password": "pw-bob-123"}), http.StatusOK)
		expect(t, c3.withNonce("activate", map[string]any{"licenseKey": key}), http.StatusForbidden, "LICENSE_USED")
	})
}

func TestClientConcurrentActivationsOfALastUse(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Race")
		key := createLicense(a, appID, map[string]any{"maxUses": 1})
		codes := raceClients(t, s, secret, 6, func(i int, c *sdk) {
			expectOK(t, c.withNonce("register", map[string]any{"username": "racer" + string(rune('a'+i)), "password": "pw-racer-1"}), http.StatusOK)
		}, func(_ int, c *sdk, nonce string) ts.Response {
			return c.post("activate", map[string]any{"licenseKey": key}, nonce)
		})
		if okCount := countOK(t, codes, "LICENSE_USED"); okCount != 1 {
			t.Fatalf("%d activations of a key with one use succeeded: %v", okCount, codes)
		}
	})
}

// raceClients makes n initialised clients (prepare runs on each, then each takes a
// nonce) and then sends every client's call at once; it answers each call's outcome:
// "OK" or its error code.
func raceClients(t *testing.T, s *ts.Server, secret string, n int, prepare func(i int, c *sdk), call func(i int, c *sdk, nonce string) ts.Response) []string {
	t.Helper()
	clients := make([]*sdk, n)
	nonces := make([]string, n)
	for i := range clients {
		clients[i] = newSDK(t, s, secret)
		clients[i].mustInit()
		prepare(i, clients[i])
		nonces[i] = clients[i].nonce()
	}
	var wg sync.WaitGroup
	outcomes := make([]string, n)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := call(i, clients[i], nonces[i])
			outcomes[i] = r.Code()
			if r.Status == http.StatusOK {
				outcomes[i] = "OK"
			}
		}()
	}
	wg.Wait()
	return outcomes
}

// countOK answers how many outcomes are "OK"; any other than refusal fails the test.
func countOK(t *testing.T, outcomes []string, refusal string) int {
	t.Helper()
	ok := 0
	for _, c := range outcomes {
		switch c {
		case "OK":
			ok++
		case refusal:
		default:
			t.Fatalf("unexpected answer %q (all: %v)", c, outcomes)
		}
	}
	return ok
}

// TestClientConcurrentLoginsFromNewDevices: logins of one user from new devices at once
// pass its device limit no more than one at a time: as many succeed as the limit allows,
// the others get DEVICE_LIMIT, and the user has as many devices as logins succeeded.
func TestClientConcurrentLoginsFromNewDevices(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Devices")
		expectOK(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"lockHwid": true}), http.StatusOK)
		r := a.do("POST", "/api/apps/"+appID+"/users", map[string]any{"username": "racer", "password": "pw-racer-1", "deviceLimit": 3})
		expectOK(t, r, http.StatusCreated)
		waitFor(t, func() bool { r := newSDK(t, s, secret).init("1.0.0", "x"); return r.Data()["lockHwid"] == true })
		const n, limit = 8, 3
		codes := raceClients(t, s, secret, n, func(int, *sdk) {}, func(i int, c *sdk, nonce string) ts.Response {
			return c.post("login", map[string]any{"username": "racer", "password": "pw-racer-1",
				"hwid": fmt.Sprintf("device-%d", i), "pcName": "PC"}, nonce)
		})
		okCount := countOK(t, codes, "DEVICE_LIMIT")
		devices := a.do("GET", "/api/apps/"+appID+"/devices", nil) // the app's one user's
		expectOK(t, devices, http.StatusOK)
		stored := len(devices.Data()["devices"].([]any))
		if okCount != limit || stored != limit {
			t.Fatalf("%d of %d logins from new devices succeeded with a limit of %d, %d devices stored: %v", okCount, n, limit, stored, codes)
		}

		// deviceLimit 0 is no limit (docs/API.md): a further device signs in.
		r = a.do("GET", "/api/apps/"+appID+"/users", nil)
		expectOK(t, r, http.StatusOK)
		userID := r.Data()["users"].([]any)[0].(map[string]any)["id"].(string)
		expectOK(t, a.do("PATCH", "/api/apps/"+appID+"/users/"+userID, map[string]any{"deviceLimit": 0}), http.StatusOK)
		c := newSDK(t, s, secret)
		c.mustInit()
		expectOK(t, c.withNonce("login", map[string]any{"username": "racer", "password": "pw-racer-1", "hwid": "device-unlimited", "pcName": "PC"}), http.StatusOK)
	})
}

func TestClientAccountStatesAndLocks(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Locks")
		users := map[string]string{}
		for _, name := range []string{"banned", "expired", "disabled", "locked"} {
			r := a.do("POST", "/api/apps/"+appID+"/users", map[string]any{"username": name, "password": "pw-" + name + "-1"})
			expectOK(t, r, http.StatusCreated)
			users[name] = r.Data()["id"].(string)
		}
		patchUser := func(name string, body map[string]any) {
			expectOK(t, a.do("PATCH", "/api/apps/"+appID+"/users/"+users[name], body), http.StatusOK)
		}
		patchUser("banned", map[string]any{"banned": true, "banReason": "cheating"})
		patchUser("expired", map[string]any{"expiresAt": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)})
		patchUser("disabled", map[string]any{"enabled": false})
		login := func(c *sdk, name, hwid string) ts.Response {
			return c.withNonce("login", map[string]any{"username": name, "password": "pw-" + name + "-1", "hwid": hwid, "pcName": "PC-1"})
		}
		for name, code := range map[string]string{"banned": "BANNED", "expired": "EXPIRED", "disabled": "USER_DISABLED"} {
			c := newSDK(t, s, secret)
			c.mustInit()
			expect(t, login(c, name, "h1"), http.StatusForbidden, code)
		}

		// HWID lock: the first login binds, another device is refused.
		expectOK(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"lockHwid": true}), http.StatusOK)
		c := newSDK(t, s, secret)
		c.mustInit()
		waitFor(t, func() bool { r := newSDK(t, s, secret).init("1.0.0", "x"); return r.Data()["lockHwid"] == true })
		expectOK(t, login(c, "locked", "device-A"), http.StatusOK)
		c2 := newSDK(t, s, secret)
		c2.mustInit()
		expect(t, login(c2, "locked", "device-B"), http.StatusForbidden, "HWID_LOCKED")
		expectOK(t, login(c2, "locked", "device-A"), http.StatusOK)

		// With a device limit of 2 a second device registers, a third is refused.
		patchUser("locked", map[string]any{"deviceLimit": 2})
		c3 := newSDK(t, s, secret)
		c3.mustInit()
		expectOK(t, login(c3, "locked", "device-B"), http.StatusOK)
		expect(t, login(c3, "locked", "device-C"), http.StatusForbidden, "DEVICE_LIMIT")

		// IP lock binds the first address.
		expectOK(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"lockHwid": false, "lockIp": true}), http.StatusOK)
		waitFor(t, func() bool { r := newSDK(t, s, secret).init("1.0.0", "x"); return r.Data()["lockIp"] == true })
		home := newSDK(t, s, secret)
		home.mustInit()
		expectOK(t, login(home, "locked", ""), http.StatusOK)
		away := newSDK(t, s, secret)
		away.mustInit()
		expect(t, login(away, "locked", ""), http.StatusForbidden, "IP_LOCKED")

		// A paused app refuses new logins but keeps sessions.
		expectOK(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"lockIp": false, "paused": true}), http.StatusOK)
		waitFor(t, func() bool {
			p := newSDK(t, s, secret)
			p.mustInit()
			return login(p, "locked", "").Code() == "APP_PAUSED"
		})
		expectOK(t, home.withNonce("heartbeat", nil), http.StatusOK)
	})
}

func TestClientSessionIdleTimeout(t *testing.T) {
	env := ts.Env(t, ts.Pairs[0])
	env["KEYWARD_CLIENT_SESSION_TTL"] = "2s"
	s := ts.StartEnv(t, env)
	a := api{t, s, newOwner(t, s).Token}
	_, secret := a.createApp("Idle")
	c := newSDK(t, s, secret)
	c.mustInit()
	for range 4 { // calls keep it alive past its ttl (with a wide margin for slow machines)
		time.Sleep(700 * time.Millisecond)
		expectOK(t, c.withNonce("heartbeat", nil), http.StatusOK)
	}
	time.Sleep(2500 * time.Millisecond)
	r := c.post("check", nil, "")
	expect(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
	if msg := r.Body["error"].(map[string]any)["message"].(string); !regexp.MustCompile(`expired`).MatchString(msg) {
		t.Fatalf("expired session message: %q", msg)
	}
}

func TestClientLicenseOnLoginAndRegister(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Attach")
		onRegister := createLicense(a, appID, map[string]any{"level": 5, "duration": 3600})
		onLogin := createLicense(a, appID, map[string]any{"level": 7, "duration": 7200})
		banned := createLicense(a, appID, nil)
		r := a.do("GET", "/api/apps/"+appID+"/licenses?search="+banned, nil)
		expectOK(t, r, http.StatusOK)
		bannedID := r.Data()["licenses"].([]any)[0].(map[string]any)["id"].(string)
		expectOK(t, a.do("PATCH", "/api/apps/"+appID+"/licenses/"+bannedID, map[string]any{"banned": true}), http.StatusOK)

		// Register with a key: activated at once, level and expiry from the key.
		c := newSDK(t, s, secret)
		c.mustInit()
		expect(t, c.withNonce("register", map[string]any{"username": "gina", "password": "pw-gina-1", "licenseKey": banned}), http.StatusForbidden, "BANNED")
		r = c.withNonce("register", map[string]any{"username": "gina", "password": "pw-gina-1", "licenseKey": onRegister})
		expectOK(t, r, http.StatusOK)
		exp1, _ := time.Parse(time.RFC3339, r.Data()["expiresAt"].(string))
		if r.Data()["level"] != float64(5) || r.Data()["key"] != onRegister || r.Data()["licenseActivated"] != true || time.Until(exp1) < 50*time.Minute {
			t.Fatalf("register with a key: %s", r.Raw)
		}
		// Login with another key: its duration adds to the time left.
		c2 := newSDK(t, s, secret)
		c2.mustInit()
		r = c2.withNonce("login", map[string]any{"username": "gina", "password": "pw-gina-1", "licenseKey": onLogin})
		expectOK(t, r, http.StatusOK)
		exp2, _ := time.Parse(time.RFC3339, r.Data()["expiresAt"].(string))
		if r.Data()["level"] != float64(7) || exp2.Sub(exp1) < 119*time.Minute {
			t.Fatalf("login with a key: %s (first expiry %v)", r.Raw, exp1)
		}
		// A refused registration creates nothing.
		r = a.do("GET", "/api/apps/"+appID+"/users", nil)
		expectOK(t, r, http.StatusOK)
		if r.Data()["total"] != float64(1) {
			t.Fatalf("users after registrations: %s", r.Raw)
		}
	})
}

func TestClientPCNameLockAndUserLimit(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("PCs")
		expectOK(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"lockPcName": true}), http.StatusOK)
		c := newSDK(t, s, secret)
		c.mustInit()
		waitFor(t, func() bool { r := newSDK(t, s, secret).init("1.0.0", "x"); return r.Data()["lockPcName"] == true })
		expect(t, c.withNonce("register", map[string]any{"username": "hank", "password": "pw-hank-1", "pcName": ""}), http.StatusForbidden, "PC_NAME_LOCKED")
		expectOK(t, c.withNonce("register", map[string]any{"username": "hank", "password": "pw-hank-1", "pcName": "DESK-1"}), http.StatusOK)
		c2 := newSDK(t, s, secret)
		c2.mustInit()
		expect(t, c2.withNonce("login", map[string]any{"username": "hank", "password": "pw-hank-1", "pcName": "LAPTOP"}), http.StatusForbidden, "PC_NAME_LOCKED")
		expectOK(t, c2.withNonce("login", map[string]any{"username": "hank", "password": "pw-hank-1", "pcName": "DESK-1"}), http.StatusOK)

		// The free plan's 15 users per app hold for client registrations too.
		expectOK(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"lockPcName": false}), http.StatusOK)
		for i := 0; i < 14; i++ {
			r := a.do("POST", "/api/apps/"+appID+"/users", map[string]any{"username": "filler" + strconv.Itoa(i), "password": "pw-filler-1"})
			expectOK(t, r, http.StatusCreated)
		}
		c3 := newSDK(t, s, secret)
		c3.mustInit()
		expect(t, c3.withNonce("register", map[string]any{"username": "one-too-many", "password": "pw-x-12345"}), http.StatusForbidden, "PLAN_LIMIT")
	})
}

// TestClientLoginsAreRecorded: what an owner reads after a login was answered includes
// that login (the batched last-login write is committed before the answer), and the
// device and computer name a user signs in from are shown although the app binds neither.
func TestClientLoginsAreRecorded(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		role := "admin"
		if _, err := s.Node.Accounts().ChangeAccountByUsername(t.Context(), o.Username, accounts.Change{Role: &role}); err != nil {
			t.Fatal(err)
		}
		a := api{t, s, o.Token}
		appID, secret := a.createApp("Recorded")
		r := a.do("POST", "/api/apps/"+appID+"/users", map[string]any{"username": "judy", "password": "pw-judy-1"})
		expectOK(t, r, http.StatusCreated)
		userID := r.Data()["id"].(string)
		for i := range 3 { // a first login, then returning ones from other addresses
			c := newSDK(t, s, secret)
			c.mustInit()
			expectOK(t, c.withNonce("login", map[string]any{"username": "judy", "password": "pw-judy-1"}), http.StatusOK)
			r = a.do("GET", "/api/apps/"+appID+"/users/"+userID+"/ip", nil)
			expectOK(t, r, http.StatusOK)
			if r.Data()["lastLoginIp"] != c.ip {
				t.Fatalf("login %d from %s: ip info right after: %s", i, c.ip, r.Raw)
			}
		}
		r = a.do("GET", "/api/apps/"+appID+"/stats", nil)
		expectOK(t, r, http.StatusOK)
		if r.Data()["logins"].(map[string]any)["today"] != float64(1) {
			t.Fatalf("stats after logins: %s", r.Raw)
		}

		// A license login with a device on an app that binds none records the device.
		key := createLicense(a, appID, map[string]any{"maxUses": 1})
		licID := a.do("GET", "/api/apps/"+appID+"/licenses?search="+key, nil).Data()["licenses"].([]any)[0].(map[string]any)["id"].(string)
		for i, dev := range []struct{ hwid, pc string }{{"hw-first", "DESK-1"}, {"hw-first", "DESK-1"}, {"hw-second", "LAPTOP-2"}} {
			c := newSDK(t, s, secret)
			c.mustInit()
			expectOK(t, c.withNonce("license", map[string]any{"licenseKey": key, "hwid": dev.hwid, "pcName": dev.pc}), http.StatusOK)
			r = a.do("GET", "/api/apps/"+appID+"/licenses/"+licID+"/user", nil)
			expectOK(t, r, http.StatusOK)
			d := r.Data()
			if d["hwid"] != dev.hwid || d["pcName"] != dev.pc || d["lastLoginIp"] != c.ip {
				t.Fatalf("license login %d from %v: license user info right after: %s", i, dev, r.Raw)
			}
		}
	})
}
