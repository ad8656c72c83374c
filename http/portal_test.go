package httpapi_test

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/core/commerce"
	"github.com/keyward/keyward/core/commerce/commercetest"
	ts "github.com/keyward/keyward/internal/testserver"
)

var portalCodeLine = regexp.MustCompile(`Your code: (\d{8})`)

// portalBuyer is a buyer's browser on an app's portal: its address and its cookie.
type portalBuyer struct {
	s      *ts.Server
	appID  string
	ip     string
	cookie string
}

func (b *portalBuyer) do(t *testing.T, method, path string, body any) ts.Response {
	t.Helper()
	h := map[string]string{}
	if b.cookie != "" {
		h["Cookie"] = b.cookie
	}
	return b.s.Do(t, ts.Req{Method: method, Path: "/portal/" + b.appID + "/api" + path, Body: body, IP: b.ip, Header: h})
}

// mailedCode asks for a code and reads it from the newest portal mail to email.
func (b *portalBuyer) mailedCode(t *testing.T, key, email string) string {
	t.Helper()
	before := len(portalCodes(t, b.s, email))
	expectOK(t, b.do(t, "POST", "/code", map[string]any{"key": key}), http.StatusOK)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if codes := portalCodes(t, b.s, email); len(codes) > before {
			return codes[len(codes)-1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new portal code mailed to %s", email)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func portalCodes(t *testing.T, s *ts.Server, email string) []string {
	var out []string
	for _, m := range s.Mails(t) {
		if strings.Contains(m, "To: <"+email+">") {
			if c := portalCodeLine.FindStringSubmatch(m); c != nil {
				out = append(out, c[1])
			}
		}
	}
	return out
}

// signIn signs in with the key and code and keeps the session cookie.
func (b *portalBuyer) signIn(t *testing.T, key, code string) ts.Response {
	t.Helper()
	r := b.do(t, "POST", "/session", map[string]any{"key": key, "code": code})
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == "keyward_portal" && c.Value != "" {
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/portal/"+b.appID {
				t.Fatalf("portal cookie not HttpOnly, SameSite=Strict and scoped to the portal: %+v", c)
			}
			b.cookie = c.Name + "=" + c.Value
		}
	}
	return r
}

// TestPortal: a buyer signs in to the app's portal with the key of a store order and a
// code mailed to the order's address (once, for 10 minutes), sees the license, resets the
// HWID, releases a seat, downloads a file and has the key mailed again; each action the
// owner switches off is refused, as are wrong, used and expired codes and another app's
// key; bad input gets the envelope; the buyer's actions are in the owner's audit log.
func TestPortal(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		a := api{t, s, o.Token}
		appID, secret := a.createApp("Portal app")
		sh := connectStore(t, s, o, appID, commerce.Sellix, commerce.RefundBan)
		sh.mapProduct(t, map[string]any{"productId": "p1", "maxSeats": 2, "createUser": true, "keyPrefix": "PRT", "duration": 30 * 86400})
		email := "portal-buyer@example.com"
		if st, raw := sh.deliver(t, commercetest.Sale{Kind: commerce.KindPaid, EventID: "pe1", OrderID: "po1", Product: "p1", Email: email,
			Amount: 900, Currency: "usd"}, nil); st != http.StatusOK {
			t.Fatalf("sale: %d %s", st, raw)
		}
		key := keysOf(sh.order(t, "po1"))[0]
		buyer := &portalBuyer{s: s, appID: appID, ip: nextIP()}

		// No portal yet: the page and its routes answer NOT_FOUND.
		expect(t, buyer.do(t, "POST", "/code", map[string]any{"key": key}), http.StatusNotFound, "NOT_FOUND")
		r := a.do("GET", "/api/apps/"+appID+"/portal", nil)
		expectOK(t, r, http.StatusOK)
		if d := r.Data(); d["enabled"] != false || d["hwidReset"] != false || d["path"] != "/portal/"+appID {
			t.Fatalf("a new app's portal: %s", r.Raw)
		}
		// The portal is a setting of the app, no longer a store connection.
		expect(t, a.do("POST", "/api/apps/"+appID+"/stores", map[string]any{"provider": "portal", "name": "Buyers"}),
			http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, a.do("PATCH", "/api/apps/"+appID+"/portal", map[string]any{"enabled": "yes"}), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, a.do("PATCH", "/api/apps/"+appID+"/portal", []any{true}), http.StatusBadRequest, "VALIDATION_ERROR")
		r = a.do("PATCH", "/api/apps/"+appID+"/portal", map[string]any{"enabled": true, "hwidReset": true, "seatRelease": true,
			"downloads": true, "resend": true})
		expectOK(t, r, http.StatusOK)
		if d := r.Data(); d["enabled"] != true || d["hwidReset"] != true || d["resend"] != true {
			t.Fatalf("portal turned on: %s", r.Raw)
		}
		if r = a.do("GET", "/api/apps/"+appID, nil); r.Data()["portal"].(map[string]any)["seatRelease"] != true {
			t.Fatalf("the app does not show its portal: %s", r.Raw)
		}
		// Another owner cannot read or change this app's portal.
		stranger := api{t, s, newOwner(t, s).Token}
		expect(t, stranger.do("PATCH", "/api/apps/"+appID+"/portal", map[string]any{"enabled": false}), http.StatusNotFound, "NOT_FOUND")
		expect(t, stranger.do("GET", "/api/apps/"+appID+"/portal", nil), http.StatusNotFound, "NOT_FOUND")

		resp, err := http.Get(s.URL + "/portal/" + appID)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "Portal app") || resp.Header.Get("Content-Security-Policy") == "" {
			t.Fatalf("page: %d %s", resp.StatusCode, page)
		}

		// Bad input gets the envelope.
		expect(t, buyer.do(t, "POST", "/code", map[string]any{}), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, buyer.do(t, "POST", "/code", map[string]any{"key": 5}), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, buyer.do(t, "POST", "/session", map[string]any{"key": key}), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, buyer.do(t, "GET", "/license", nil), http.StatusUnauthorized, "UNAUTHORIZED")

		// Wrong code refused (and does not use the right one up); the right code works once.
		code := buyer.mailedCode(t, key, email)
		wrong := "00000000"
		if code == wrong {
			wrong = "11111111"
		}
		expect(t, buyer.signIn(t, key, wrong), http.StatusUnauthorized, "UNAUTHORIZED")
		expectOK(t, buyer.signIn(t, strings.ToLower(key), code), http.StatusOK)
		if buyer.cookie == "" {
			t.Fatal("no session cookie")
		}
		other := &portalBuyer{s: s, appID: appID, ip: nextIP()}
		expect(t, other.signIn(t, key, code), http.StatusUnauthorized, "UNAUTHORIZED")

		// An expired code is refused.
		late := buyer.mailedCode(t, key, email)
		s.Clock().Advance(commerce.PortalCodeTTL + time.Minute)
		expect(t, other.signIn(t, key, late), http.StatusUnauthorized, "UNAUTHORIZED")

		// The license as the buyer sees it.
		r = buyer.do(t, "GET", "/license", nil)
		expectOK(t, r, http.StatusOK)
		if d := r.Data(); d["key"] != key || d["status"] != "active" || d["maxSeats"] != float64(2) || d["expiresAt"] == nil {
			t.Fatalf("license: %s", r.Raw)
		}

		// A seat held by a client session, released by the buyer.
		client, lr := seatLogin(t, s, secret, key)
		expectOK(t, lr, http.StatusOK)
		r = buyer.do(t, "GET", "/license", nil)
		seats := r.Data()["seats"].([]any)
		if len(seats) != 1 || r.Data()["seatsUsed"] != float64(1) {
			t.Fatalf("seats: %s", r.Raw)
		}
		seatID := seats[0].(map[string]any)["id"].(string)
		expectOK(t, buyer.do(t, "DELETE", "/seats/"+seatID, nil), http.StatusOK)
		expect(t, client.post("check", nil, ""), http.StatusUnauthorized, "UNAUTHORIZED")
		expect(t, buyer.do(t, "DELETE", "/seats/"+seatID, nil), http.StatusNotFound, "NOT_FOUND")
		// Its event was stored before the answer (one: the refused second release writes none).
		if got := portalEvents(t, a, appID, "seat_release"); len(got) != 1 || got[0]["seatId"] != seatID || got[0]["actor"] != "buyer" {
			t.Fatalf("seat release events: %v", got)
		}

		// HWID reset within the user's limits.
		expectOK(t, buyer.do(t, "POST", "/reset-hwid", nil), http.StatusOK)
		if r = buyer.do(t, "GET", "/license", nil); r.Data()["hwidResets"] != float64(1) || r.Data()["hwidBound"] != false {
			t.Fatalf("after reset: %s", r.Raw)
		}

		// A download of the app's file.
		content := bytes.Repeat([]byte("portal-file\x00"), 100)
		body, ct := multipartBody(t, "tool.bin", content, map[string]string{"version": "1.0"}, nil)
		r = s.Do(t, ts.Req{Method: "POST", Path: "/api/apps/" + appID + "/files", Token: o.Token, Body: body, ContentType: ct})
		expectOK(t, r, http.StatusCreated)
		fileID := r.Data()["id"].(string)
		if r = buyer.do(t, "GET", "/license", nil); len(r.Data()["files"].([]any)) != 1 {
			t.Fatalf("files: %s", r.Raw)
		}
		req, _ := http.NewRequest("GET", s.URL+"/portal/"+appID+"/api/files/"+fileID, nil)
		req.Header.Set("Cookie", buyer.cookie)
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Equal(got, content) {
			t.Fatalf("download: %d, %d bytes", resp.StatusCode, len(got))
		}

		// The key mailed again.
		mails := s.CountMails(t, email)
		expectOK(t, buyer.do(t, "POST", "/resend", nil), http.StatusOK)
		waitFor(t, func() bool { return s.CountMails(t, email) > mails })
		if got := portalEvents(t, a, appID, "key_resend"); len(got) != 1 || got[0]["orderId"] == nil {
			t.Fatalf("resend events: %v", got)
		}

		// The owner switches actions off: each is refused; the whole portal off: NOT_FOUND.
		expectOK(t, a.do("PATCH", "/api/apps/"+appID+"/portal", map[string]any{
			"hwidReset": false, "seatRelease": false, "downloads": false, "resend": false}), http.StatusOK)
		expect(t, buyer.do(t, "POST", "/reset-hwid", nil), http.StatusForbidden, "FORBIDDEN")
		expect(t, buyer.do(t, "DELETE", "/seats/x", nil), http.StatusForbidden, "FORBIDDEN")
		expect(t, buyer.do(t, "GET", "/files/"+fileID, nil), http.StatusForbidden, "FORBIDDEN")
		expect(t, buyer.do(t, "POST", "/resend", nil), http.StatusForbidden, "FORBIDDEN")
		expect(t, a.do("PATCH", "/api/apps/"+appID+"/stores/"+sh.connID, map[string]any{"portal": map[string]any{"resend": true}}),
			http.StatusBadRequest, "VALIDATION_ERROR")
		expectOK(t, a.do("PATCH", "/api/apps/"+appID+"/portal", map[string]any{"enabled": false}), http.StatusOK)
		expect(t, buyer.do(t, "GET", "/license", nil), http.StatusNotFound, "NOT_FOUND")
		expectOK(t, a.do("PATCH", "/api/apps/"+appID+"/portal", map[string]any{"enabled": true}), http.StatusOK)
		// Each change of the settings is an audited update of the app, with its app.update event.
		r = a.do("GET", "/api/audit?appId="+appID+"&recordType=apps&limit=50", nil)
		expectOK(t, r, http.StatusOK)
		if n := strings.Count(string(r.Raw), `"portal":{`); n < 2*4 { // before and after of 4 changes
			t.Fatalf("audit has %d portal members, want the 4 settings changes: %s", n, r.Raw)
		}
		waitFor(t, func() bool {
			r := a.do("GET", "/api/apps/"+appID+"/logs?event=app.update&limit=50", nil)
			return strings.Count(string(r.Raw), `"portal":{`) >= 4
		})

		// Another app's key does not sign in here, even with its own portal's code.
		o2 := newOwner(t, s)
		a2 := api{t, s, o2.Token}
		app2, _ := a2.createApp("Other app")
		sh2 := connectStore(t, s, o2, app2, commerce.Sellix, commerce.RefundBan)
		sh2.mapProduct(t, map[string]any{"productId": "p1", "createUser": true})
		email2 := "portal-other@example.com"
		if st, raw := sh2.deliver(t, commercetest.Sale{Kind: commerce.KindPaid, EventID: "oe1", OrderID: "oo1", Product: "p1", Email: email2}, nil); st != http.StatusOK {
			t.Fatalf("sale 2: %d %s", st, raw)
		}
		expectOK(t, a2.do("PATCH", "/api/apps/"+app2+"/portal", map[string]any{"enabled": true}), http.StatusOK)
		key2 := keysOf(sh2.order(t, "oo1"))[0]
		there := &portalBuyer{s: s, appID: app2, ip: nextIP()}
		code2 := there.mailedCode(t, key2, email2)
		outsider := &portalBuyer{s: s, appID: appID, ip: nextIP()}
		expect(t, outsider.signIn(t, key2, code2), http.StatusUnauthorized, "UNAUTHORIZED")
		expectOK(t, outsider.do(t, "POST", "/code", map[string]any{"key": key2}), http.StatusOK) // same answer, no mail
		// The session of app one's portal is not a session of app two's.
		crossed := &portalBuyer{s: s, appID: app2, ip: nextIP(), cookie: buyer.cookie}
		expect(t, crossed.do(t, "GET", "/license", nil), http.StatusUnauthorized, "UNAUTHORIZED")

		// Tries are limited per key.
		for range 5 {
			outsider.signIn(t, key, "99999999")
		}
		expect(t, outsider.signIn(t, key, "99999999"), http.StatusTooManyRequests, "RATE_LIMITED")

		// The buyer's actions are in the owner's audit log.
		r = a.do("GET", "/api/audit?limit=200", nil)
		expectOK(t, r, http.StatusOK)
		if n := strings.Count(string(r.Raw), `"type":"buyer"`); n < 4 {
			t.Fatalf("audit has %d buyer entries, want sign-in, seat, reset, resend: %s", n, r.Raw)
		}

		// Signing out ends the session.
		expectOK(t, buyer.do(t, "DELETE", "/session", nil), http.StatusOK)
		expect(t, buyer.do(t, "GET", "/license", nil), http.StatusUnauthorized, "UNAUTHORIZED")
	})
}

// TestPortalAcrossNodes: on two nodes sharing MongoDB and Redis, a code one node mailed
// signs in on the other, the session works on both, and of two simultaneous sign-ins with
// one code (one per node) exactly one succeeds.
func TestPortalAcrossNodes(t *testing.T) {
	env := ts.Env(t, ts.Engines{Name: "mongo+redis", Mongo: true, Redis: true})
	a := ts.StartEnv(t, env)
	b := ts.StartEnv(t, env)
	o := newOwner(t, a)
	owner := api{t, a, o.Token}
	appID, _ := owner.createApp("Cluster shop")
	sh := connectStore(t, a, o, appID, commerce.Sellix, commerce.RefundBan)
	sh.mapProduct(t, map[string]any{"productId": "p1", "createUser": true})
	email := "cluster-buyer@example.com"
	if st, raw := sh.deliver(t, commercetest.Sale{Kind: commerce.KindPaid, EventID: "ce1", OrderID: "co1", Product: "p1", Email: email}, nil); st != http.StatusOK {
		t.Fatalf("sale: %d %s", st, raw)
	}
	expectOK(t, owner.do("PATCH", "/api/apps/"+appID+"/portal", map[string]any{"enabled": true}), http.StatusOK)
	// The setting is the app's: the other node serves the portal at once.
	waitFor(t, func() bool {
		return (&portalBuyer{s: b, appID: appID, ip: nextIP()}).do(t, "POST", "/code", map[string]any{"key": "NONE"}).Status == http.StatusOK
	})
	key := keysOf(sh.order(t, "co1"))[0]

	onA := &portalBuyer{s: a, appID: appID, ip: nextIP()}
	onB := &portalBuyer{s: b, appID: appID, ip: nextIP()}
	code := onA.mailedCode(t, key, email)
	expectOK(t, onB.signIn(t, key, code), http.StatusOK)
	onA.cookie = onB.cookie
	expectOK(t, onA.do(t, "GET", "/license", nil), http.StatusOK)
	expectOK(t, onB.do(t, "GET", "/license", nil), http.StatusOK)

	for round := range 2 { // codes are limited to 3 per key in 15 minutes
		code := onA.mailedCode(t, key, email)
		results := make(chan int, 2)
		for _, node := range []*ts.Server{a, b} {
			go func() {
				p := &portalBuyer{s: node, appID: appID, ip: nextIP()}
				results <- p.do(t, "POST", "/session", map[string]any{"key": key, "code": code}).Status
			}()
		}
		ok := 0
		for range 2 {
			if <-results == http.StatusOK {
				ok++
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d sign-ins with one code, want 1", round, ok)
		}
	}
}

// portalEvents answers the data of the app's license.update log entries written for the
// buyer's action (data.action), newest first.
func portalEvents(t *testing.T, a api, appID, action string) []map[string]any {
	t.Helper()
	var out []map[string]any
	waitFor(t, func() bool {
		out = nil
		r := a.do("GET", "/api/apps/"+appID+"/logs?event=license.update&limit=100", nil)
		for _, e := range r.Data()["logs"].([]any) {
			if d, ok := e.(map[string]any)["data"].(map[string]any); ok && d["action"] == action {
				out = append(out, d)
			}
		}
		return len(out) > 0
	})
	return out
}
