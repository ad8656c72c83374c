package httpapi_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	ts "github.com/keyward/keyward/internal/testserver"
	"github.com/keyward/keyward/pkg/licensefile"
)

// TestLicenseFiles: the owner route and the client route issue files that
// pkg/licensefile verifies offline with the app's public key, bound to the user's HWID
// and carrying the license variables; banned and deleted licenses get none; every file
// issued is a license.file log entry.
func TestLicenseFiles(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		setPlan(t, s, o.Username, "pro") // license variables
		a := api{t, s, o.Token}
		appID, secret := a.createApp("Offline")
		expectOK(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"licenseFileDays": 7, "lockHwid": true}), http.StatusOK)
		pub := publicKeyOf(t, a, appID)
		licID, key := createLicenseRecord(a, appID, map[string]any{"level": 4, "duration": 86400})
		expectOK(t, a.do("POST", "/api/apps/"+appID+"/licenses/"+licID+"/variables",
			map[string]any{"key": "tier", "value": "gold"}), http.StatusCreated)

		// The owner issues a file before anyone activated the key: not bound, no expiry yet.
		r := a.do("POST", "/api/apps/"+appID+"/licenses/"+licID+"/file", nil)
		expectOK(t, r, http.StatusOK)
		now := s.Clock().Now()
		p, err := licensefile.Verify([]byte(r.Data()["file"].(string)), pub, licensefile.Options{Now: now, AppID: appID, HWID: "any"})
		if err != nil || p.Key != key || p.Level != 4 || p.Duration != 86400 || p.HWID != "" || p.Variables["tier"] != "gold" {
			t.Fatalf("owner file: %+v, %v (%s)", p, err, r.Raw)
		}
		if due, _ := time.Parse(time.RFC3339, p.CheckInBy); due.Sub(now) < 6*24*time.Hour || due.Sub(now) > 8*24*time.Hour {
			t.Fatalf("checkInBy %s is not 7 days after %s", p.CheckInBy, now)
		}
		if _, err := licensefile.Verify([]byte(r.Data()["file"].(string)), pub, licensefile.Options{Now: now.Add(8 * 24 * time.Hour)}); !errors.Is(err, licensefile.ErrCheckInDue) {
			t.Fatalf("after the check-in deadline: %v", err)
		}
		// One valid form: the signature's last character has 4 unused bits; setting one
		// spells the same bytes another way, and that is refused.
		issued := strings.TrimSpace(r.Data()["file"].(string))
		_, tail, _ := strings.Cut(issued, ".")
		sigEnd := strings.Index(issued, "\n"+licensefile.EndLine) - 1
		if len(strings.Join(strings.Fields(strings.TrimSuffix(tail, licensefile.EndLine)), "")) != 86 || sigEnd < 0 {
			t.Fatalf("unexpected file layout:\n%s", issued)
		}
		const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
		respelled := issued[:sigEnd] + string(alphabet[strings.IndexByte(alphabet, issued[sigEnd])^1]) + issued[sigEnd+1:]
		if _, err := licensefile.Verify([]byte(respelled), pub, licensefile.Options{Now: now}); !errors.Is(err, licensefile.ErrMalformed) {
			t.Fatalf("respelled signature: %v, want ErrMalformed", err)
		}
		entry := waitLog(t, a, appID, "license.file")
		if entry["message"] == "" {
			t.Fatalf("license.file entry: %v", entry)
		}

		// A client signs in with the key on a machine (the app locks HWIDs) and gets its own
		// file, bound to it.
		c := newSDK(t, s, secret)
		c.mustInit()
		expect(t, c.post("license-file", nil, ""), http.StatusUnauthorized, "NOT_LOGGED_IN")
		expectOK(t, c.withNonce("license", map[string]any{"licenseKey": key, "hwid": "machine-1"}), http.StatusOK)
		r = c.post("license-file", nil, "")
		expectOK(t, r, http.StatusOK)
		file := []byte(r.Data()["file"].(string))
		p, err = licensefile.Verify(file, pub, licensefile.Options{Now: s.Clock().Now(), HWID: "machine-1"})
		if err != nil || p.Key != key || p.HWID != "machine-1" || p.ExpiresAt == "" || p.Username == "" {
			t.Fatalf("client file: %+v, %v", p, err)
		}
		if _, err := licensefile.Verify(file, pub, licensefile.Options{Now: s.Clock().Now(), HWID: "machine-2"}); !errors.Is(err, licensefile.ErrWrongHWID) {
			t.Fatalf("on another machine: %v", err)
		}
		exp, _ := time.Parse(time.RFC3339, p.ExpiresAt)
		if _, err := licensefile.Verify(file, pub, licensefile.Options{Now: exp.Add(time.Second)}); !errors.Is(err, licensefile.ErrExpired) {
			t.Fatalf("after expiry: %v", err)
		}

		// Banned: no new file on either route; deleted: not found.
		expectOK(t, a.do("PATCH", "/api/apps/"+appID+"/licenses/"+licID, map[string]any{"banned": true}), http.StatusOK)
		expect(t, a.do("POST", "/api/apps/"+appID+"/licenses/"+licID+"/file", nil), http.StatusForbidden, "BANNED")
		other, _ := createLicenseRecord(a, appID, nil)
		expectOK(t, a.do("DELETE", "/api/apps/"+appID+"/licenses/"+other, nil), http.StatusOK)
		expect(t, a.do("POST", "/api/apps/"+appID+"/licenses/"+other+"/file", nil), http.StatusNotFound, "NOT_FOUND")
		stranger := api{t, s, newOwner(t, s).Token}
		expect(t, stranger.do("POST", "/api/apps/"+appID+"/licenses/"+licID+"/file", nil), http.StatusNotFound, "NOT_FOUND")
	})
}
