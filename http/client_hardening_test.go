package httpapi_test

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	ts "github.com/keyward/keyward/internal/testserver"
)

// TestExpiriesStopAtYear9999: an expiry the server computes by adding a duration stops at
// the end of year 9999, so every timestamp it writes is RFC 3339 and accepted when sent
// back; a timestamp past it is refused as input.
func TestExpiriesStopAtYear9999(t *testing.T) {
	const end = "9999-12-31T23:59:59"
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Forever")
		r := a.do("POST", "/api/apps/"+appID+"/users", map[string]any{"username": "eve", "password": "pw-eve-123", "expiresAt": "9999-12-31T00:00:00Z"})
		expectOK(t, r, http.StatusCreated)
		userID := r.Data()["id"].(string)

		r = a.do("POST", "/api/apps/"+appID+"/users/"+userID+"/extend", map[string]any{"duration": 2 * 86400})
		expectOK(t, r, http.StatusOK)
		exp := r.Data()["expiresAt"].(string)
		if _, err := time.Parse(time.RFC3339, exp); err != nil || exp[:len(end)] != end {
			t.Fatalf("extended past year 9999: %s", r.Raw)
		}
		expectOK(t, a.do("PATCH", "/api/apps/"+appID+"/users/"+userID, map[string]any{"expiresAt": exp}), http.StatusOK)
		for _, late := range []string{"9999-12-31T23:59:59-01:00", "9999-12-31T23:59:59.5Z"} {
			expect(t, a.do("PATCH", "/api/apps/"+appID+"/users/"+userID, map[string]any{"expiresAt": late}), http.StatusBadRequest, "VALIDATION_ERROR")
			expect(t, a.do("POST", "/api/apps/"+appID+"/licenses", map[string]any{"count": 1, "expiresAt": late}), http.StatusBadRequest, "VALIDATION_ERROR")
			expect(t, a.do("POST", "/api/apps/"+appID+"/tokens", map[string]any{"count": 1, "expiresAt": late}), http.StatusBadRequest, "VALIDATION_ERROR")
		}

		// A license's duration added at activation stops there too, in the client's answer.
		key := createLicense(a, appID, map[string]any{"duration": 100 * 365 * 86400})
		c := newSDK(t, s, secret)
		c.mustInit()
		r = c.withNonce("login", map[string]any{"username": "eve", "password": "pw-eve-123", "licenseKey": key})
		expectOK(t, r, http.StatusOK)
		if exp := r.Data()["expiresAt"].(string); exp != end+"Z" {
			t.Fatalf("client login with a key past year 9999: %s", r.Raw)
		}
		r = a.do("GET", "/api/apps/"+appID+"/users/"+userID, nil)
		expectOK(t, r, http.StatusOK)
		if got := r.Data()["expiresAt"]; got != end+".000Z" {
			t.Fatalf("user after activation: %s", r.Raw)
		}
	})
}

// TestClientNumbersKeepTheirText: a number sent where a string is meant is read as the
// text sent, digit for digit.
func TestClientNumbersKeepTheirText(t *testing.T) {
	s := ts.Start(t, ts.Pairs[0])
	a := api{t, s, newOwner(t, s).Token}
	_, secret := a.createApp("Numbers")
	c := newSDK(t, s, secret)
	c.mustInit()
	c.register("nora", "pw-nora-123")
	for key, n := range map[string]string{"big": "9223372036854775807", "pi": "3.14159265358979323846", "exp": "1e400", "cents": "1.50"} {
		expectOK(t, c.post("set-user-variable", map[string]any{"key": key, "value": json.Number(n)}, ""), http.StatusOK)
		r := c.post("user-variable", map[string]any{"key": key}, "")
		expectOK(t, r, http.StatusOK)
		if got := r.Data()["value"]; got != n {
			t.Fatalf("%s: stored %v, sent %s", key, got, n)
		}
	}
}

// TestClientConcurrentLicenseLoginsOfOneDevice: the holder of a key logs in from its bound
// device, however many of its logins run at once: one activates, the others are returning.
// Another device, or another account, is still refused.
func TestClientConcurrentLicenseLoginsOfOneDevice(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Burst")
		expectOK(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"lockHwid": true}), http.StatusOK)
		waitFor(t, func() bool { r := newSDK(t, s, secret).init("1.0.0", "x"); return r.Data()["lockHwid"] == true })
		licID, key := createLicenseRecord(a, appID, map[string]any{"maxUses": 1, "duration": 86400})

		const n = 50
		clients := make([]*sdk, n)
		nonces := make([]string, n)
		for i := range clients {
			clients[i] = newSDK(t, s, secret)
			clients[i].mustInit()
			nonces[i] = clients[i].nonce()
		}
		var wg sync.WaitGroup
		replies := make([]ts.Response, n)
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				replies[i] = clients[i].post("license", map[string]any{"licenseKey": key, "hwid": "HWID-1", "pcName": "PC-1"}, nonces[i])
			}()
		}
		wg.Wait()
		first := 0
		for _, r := range replies {
			if r.Status != http.StatusOK {
				t.Fatalf("a login of the key's holder from its device was refused: %s", r.Raw)
			}
			if r.Data()["returning"] == false {
				first++
			}
		}
		if first != 1 {
			t.Fatalf("%d of %d concurrent logins were first activations, want 1", first, n)
		}
		r := a.do("GET", "/api/apps/"+appID+"/licenses/"+licID, nil)
		expectOK(t, r, http.StatusOK)
		if r.Data()["usedCount"] != float64(1) {
			t.Fatalf("license after the burst: %s", r.Raw)
		}

		other := newSDK(t, s, secret)
		other.mustInit()
		expect(t, other.withNonce("license", map[string]any{"licenseKey": key, "hwid": "HWID-2"}), http.StatusForbidden, "HWID_LOCKED")
		bob := newSDK(t, s, secret)
		bob.mustInit()
		expectOK(t, bob.withNonce("register", map[string]any{"username": "bob", "password": "pw-bob-123", "hwid": "HWID-B"}), http.StatusOK)
		expect(t, bob.withNonce("activate", map[string]any{"licenseKey": key}), http.StatusForbidden, "LICENSE_USED")
	})
}

// TestClientDeletedDeviceFreesTheUser: deleting a user's device lets the user sign in from a
// new device (SPEC 4.5), and the new device is then the bound one.
func TestClientDeletedDeviceFreesTheUser(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Devices")
		expectOK(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"lockHwid": true, "lockPcName": true}), http.StatusOK)
		waitFor(t, func() bool { r := newSDK(t, s, secret).init("1.0.0", "x"); return r.Data()["lockPcName"] == true })
		expectOK(t, a.do("POST", "/api/apps/"+appID+"/users", map[string]any{"username": "dora", "password": "pw-dora-123"}), http.StatusCreated)
		login := func(hwid, pc string) ts.Response {
			c := newSDK(t, s, secret)
			c.mustInit()
			return c.withNonce("login", map[string]any{"username": "dora", "password": "pw-dora-123", "hwid": hwid, "pcName": pc})
		}
		expectOK(t, login("OLD-HWID", "OLD-PC"), http.StatusOK)
		expect(t, login("NEW-HWID", "NEW-PC"), http.StatusForbidden, "HWID_LOCKED")

		r := a.do("GET", "/api/apps/"+appID+"/devices?search=OLD-HWID", nil)
		expectOK(t, r, http.StatusOK)
		devices := r.Data()["devices"].([]any)
		if len(devices) != 1 {
			t.Fatalf("devices: %s", r.Raw)
		}
		expectOK(t, a.do("DELETE", "/api/apps/"+appID+"/devices/"+devices[0].(map[string]any)["id"].(string), nil), http.StatusOK)
		expectOK(t, login("NEW-HWID", "NEW-PC"), http.StatusOK)
		expect(t, login("OLD-HWID", "OLD-PC"), http.StatusForbidden, "HWID_LOCKED")
		expectOK(t, login("NEW-HWID", "NEW-PC"), http.StatusOK)
	})
}

// TestClientCheckLicenseOfItsHolder: a key whose uses are all taken is valid for its holder
// (the signed-in user who activated it, or anyone signing in with a license-login key) and
// reports max_uses_reached to everyone else.
func TestClientCheckLicenseOfItsHolder(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Holder")
		check := func(c *sdk, key string, valid bool, issues string) {
			t.Helper()
			r := c.post("check-license", map[string]any{"licenseKey": key}, "")
			expectOK(t, r, http.StatusOK)
			got, _ := json.Marshal(r.Data()["issues"])
			if r.Data()["valid"] != valid || string(got) != issues {
				t.Fatalf("check-license: %s, want valid %v and issues %s", r.Raw, valid, issues)
			}
		}
		// A license-login key: the signed-in holder, and anyone signing in with it.
		alone := createLicense(a, appID, map[string]any{"maxUses": 1})
		holder := newSDK(t, s, secret)
		holder.mustInit()
		expectOK(t, holder.withNonce("license", map[string]any{"licenseKey": alone, "hwid": "H"}), http.StatusOK)
		check(holder, alone, true, `[]`)
		fresh := newSDK(t, s, secret)
		fresh.mustInit()
		check(fresh, alone, true, `[]`)

		// A key activated by an account: valid for it, used up for another account.
		activated := createLicense(a, appID, map[string]any{"maxUses": 1})
		gus := newSDK(t, s, secret)
		gus.mustInit()
		expectOK(t, gus.withNonce("register", map[string]any{"username": "gus", "password": "pw-gus-1234", "licenseKey": activated}), http.StatusOK)
		check(gus, activated, true, `[]`)
		ivy := newSDK(t, s, secret)
		ivy.mustInit()
		expectOK(t, ivy.withNonce("register", map[string]any{"username": "ivy", "password": "pw-ivy-1234"}), http.StatusOK)
		check(ivy, activated, false, `["max_uses_reached"]`)
		check(ivy, alone, false, `["max_uses_reached"]`)
		anon := newSDK(t, s, secret)
		anon.mustInit()
		check(anon, activated, false, `["max_uses_reached"]`)
	})
}

// TestLicenseMaxUsesDefaultsToUnlimited: SPEC 4.4 writes maxUses "(0 unlimited)", its
// notation for the default: a key created without maxUses activates for any number of
// accounts.
func TestLicenseMaxUsesDefaultsToUnlimited(t *testing.T) {
	s := ts.Start(t, ts.Pairs[0])
	a := api{t, s, newOwner(t, s).Token}
	appID, secret := a.createApp("Unlimited")
	id, key := createLicenseRecord(a, appID, nil)
	for _, name := range []string{"kim", "lee", "max"} {
		c := newSDK(t, s, secret)
		c.mustInit()
		expectOK(t, c.withNonce("register", map[string]any{"username": name, "password": "pw-" + name + "-1234", "licenseKey": key}), http.StatusOK)
	}
	r := a.do("GET", "/api/apps/"+appID+"/licenses/"+id, nil)
	expectOK(t, r, http.StatusOK)
	if r.Data()["maxUses"] != float64(0) || r.Data()["usedCount"] != float64(3) {
		t.Fatalf("license with the default maxUses: %s", r.Raw)
	}
}
