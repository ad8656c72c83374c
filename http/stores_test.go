package httpapi_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/core/commerce"
	"github.com/keyward/keyward/core/commerce/commercetest"
	ts "github.com/keyward/keyward/internal/testserver"
)

// storeShop is an owner's app with a connection to one store.
type storeShop struct {
	s      *ts.Server
	o      owner
	appID  string
	p      commerce.Provider
	secret string
	path   string
	connID string
}

func newStoreApp(t *testing.T, s *ts.Server) (owner, string) {
	t.Helper()
	o := newOwner(t, s)
	r := s.Do(t, ts.Req{Method: "POST", Path: "/api/apps", Token: o.Token, Body: map[string]any{"name": "Shop app"}})
	expectOK(t, r, http.StatusCreated)
	return o, r.Data()["id"].(string)
}

func connectStore(t *testing.T, s *ts.Server, o owner, appID string, p commerce.Provider, refund string) storeShop {
	t.Helper()
	sh := storeShop{s: s, o: o, appID: appID, p: p, secret: "whsec_" + string(p) + "_secret"}
	body := map[string]any{"provider": string(p), "name": "My " + string(p), "refundAction": refund}
	if p != commerce.Gumroad {
		body["secret"] = sh.secret
	}
	r := s.Do(t, ts.Req{Method: "POST", Path: "/api/apps/" + appID + "/stores", Token: o.Token, Body: body})
	expectOK(t, r, http.StatusCreated)
	d := r.Data()
	if d["hasSecret"] != (p != commerce.Gumroad) || strings.Contains(string(r.Raw), sh.secret) {
		t.Fatalf("connection view shows or misreports its secret: %s", r.Raw)
	}
	sh.path, sh.connID = d["receiverPath"].(string), d["id"].(string)
	return sh
}

func (sh storeShop) mapProduct(t *testing.T, body map[string]any) {
	t.Helper()
	r := sh.s.Do(t, ts.Req{Method: "POST", Path: "/api/apps/" + sh.appID + "/stores/" + sh.connID + "/products", Token: sh.o.Token, Body: body})
	expectOK(t, r, http.StatusOK)
}

// deliver sends the sale as the store would, signed now (or with the header given).
func (sh storeShop) deliver(t *testing.T, sale commercetest.Sale, tamper func(h http.Header, body []byte) []byte) (int, []byte) {
	t.Helper()
	body, ct := commercetest.Body(sh.p, sale)
	h := http.Header{}
	h.Set("Content-Type", ct)
	if name, value := commerce.Sign(sh.p, sh.secret, body, sh.s.Clock().Now()); name != "" {
		h.Set(name, value)
	}
	if tamper != nil {
		body = tamper(h, body)
	}
	req, err := http.NewRequest("POST", sh.s.URL+sh.path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

func (sh storeShop) orders(t *testing.T) []map[string]any {
	t.Helper()
	r := sh.s.Do(t, ts.Req{Method: "GET", Path: "/api/apps/" + sh.appID + "/orders?limit=200", Token: sh.o.Token})
	expectOK(t, r, http.StatusOK)
	var out []map[string]any
	for _, o := range r.Data()["orders"].([]any) {
		if m := o.(map[string]any); m["connectionId"] == sh.connID {
			out = append(out, m)
		}
	}
	return out
}

func (sh storeShop) order(t *testing.T, orderID string) map[string]any {
	t.Helper()
	for _, o := range sh.orders(t) {
		if o["orderId"] == orderID {
			return o
		}
	}
	return nil
}

func (sh storeShop) license(t *testing.T, key string) map[string]any {
	t.Helper()
	r := sh.s.Do(t, ts.Req{Method: "POST", Path: "/api/apps/" + sh.appID + "/licenses/verify", Token: sh.o.Token, Body: map[string]any{"key": key}})
	switch {
	case r.Status == http.StatusNotFound:
		return nil
	case r.Code() == "BANNED": // the owner's lookup names a banned key's state
		return map[string]any{"banned": true}
	}
	expectOK(t, r, http.StatusOK)
	return r.Data()
}

func keysOf(o map[string]any) []string {
	var out []string
	for _, k := range o["keys"].([]any) {
		out = append(out, k.(string))
	}
	return out
}

// TestStoreReceivers runs every store's receiver with payloads shaped as it documents them,
// signed as it signs: bad and stale signatures change nothing, a paid order issues its keys
// once (repeats and simultaneous duplicates included) and mails them, refunds ban or revoke,
// renewals extend once per event, cancellations expire at period end, and an unknown
// order's renewal is answered NOT_FOUND.
func TestStoreReceivers(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		for i, p := range commerce.Providers() {
			t.Run(string(p), func(t *testing.T) {
				o, appID := newStoreApp(t, s)
				refund := commerce.RefundBan
				if i%2 == 1 {
					refund = commerce.RefundRevoke
				}
				sh := connectStore(t, s, o, appID, p, refund)
				sh.mapProduct(t, map[string]any{"productId": "42", "level": 3, "duration": 30 * 86400, "keyPrefix": "SHOP",
					"deviceLimit": 2, "variables": map[string]string{"tier": "pro"}})
				storeReceiverFlow(t, sh, refund)
			})
		}
	})
}

func storeReceiverFlow(t *testing.T, sh storeShop, refund string) {
	p := sh.p
	email := fmt.Sprintf("buyer-%s@example.com", p)
	paid := commercetest.Sale{Kind: commerce.KindPaid, EventID: "evt_paid_1", OrderID: "1001", Product: "42", Variant: "7", Quantity: 2,
		Email: email, Amount: 1999, Currency: "eur"}

	// Bad signatures (and, for Stripe and Paddle, stale ones) answer 401 and store nothing.
	if p != commerce.Gumroad {
		status, raw := sh.deliver(t, paid, func(h http.Header, body []byte) []byte { return append(body, ' ') })
		if status != http.StatusUnauthorized || !strings.Contains(string(raw), `"UNAUTHORIZED"`) {
			t.Fatalf("altered body: %d %s", status, raw)
		}
		status, _ = sh.deliver(t, paid, func(h http.Header, body []byte) []byte {
			for k := range h {
				if k != "Content-Type" {
					h.Del(k)
				}
			}
			return body
		})
		if status != http.StatusUnauthorized {
			t.Fatalf("no signature: %d", status)
		}
	}
	if p == commerce.Stripe || p == commerce.Paddle {
		status, _ := sh.deliver(t, paid, func(h http.Header, body []byte) []byte {
			name, value := commerce.Sign(p, sh.secret, body, sh.s.Clock().Now().Add(-10*time.Minute))
			h.Set(name, value)
			return body
		})
		if status != http.StatusUnauthorized {
			t.Fatalf("stale signature: %d", status)
		}
	}
	if n := len(sh.orders(t)); n != 0 {
		t.Fatalf("refused deliveries left %d orders", n)
	}
	// A signed body nobody can read: 400 with the envelope (the store should not retry).
	status, raw := sh.deliver(t, paid, func(h http.Header, _ []byte) []byte {
		body := []byte("this is not a store payload")
		if name, value := commerce.Sign(p, sh.secret, body, sh.s.Clock().Now()); name != "" {
			h.Set(name, value)
		}
		return body
	})
	if status != http.StatusBadRequest || !strings.Contains(string(raw), `"success":false`) {
		t.Fatalf("unreadable payload: %d %s", status, raw)
	}

	// Paid: two keys, once.
	status, raw = sh.deliver(t, paid, nil)
	if status != http.StatusOK {
		t.Fatalf("paid: %d %s", status, raw)
	}
	if p == commerce.SellApp {
		if got := strings.Count(string(raw), "SHOP-"); got != 2 {
			t.Fatalf("SellApp's delivery should answer the 2 keys as text, got %q", raw)
		}
	}
	ord := sh.order(t, "1001")
	if ord == nil || ord["status"] != "paid" || len(keysOf(ord)) != 2 || ord["amount"] != float64(1999) || ord["currency"] != "EUR" {
		t.Fatalf("order after paid = %v", ord)
	}
	keys := keysOf(ord)
	for _, k := range keys {
		l := sh.license(t, k)
		if l == nil || l["level"] != float64(3) || !strings.HasPrefix(k, "SHOP-") {
			t.Fatalf("license %s = %v", k, l)
		}
	}
	mail := sh.s.WaitMail(t, email, keys[0])
	if !strings.Contains(mail, keys[1]) {
		t.Fatalf("the buyer's mail lacks the second key:\n%s", mail)
	}
	// The same delivery again: the same keys, nothing new.
	status, raw = sh.deliver(t, paid, nil)
	if status != http.StatusOK || (p != commerce.SellApp && !strings.Contains(string(raw), `"duplicate":true`)) {
		t.Fatalf("repeat: %d %s", status, raw)
	}
	if got := sh.order(t, "1001"); fmt.Sprint(keysOf(got)) != fmt.Sprint(keys) || len(sh.orders(t)) != 1 {
		t.Fatalf("a repeat changed the order: %v", got)
	}

	// Eight simultaneous deliveries of another sale: one set of keys.
	dup := paid
	dup.OrderID, dup.EventID, dup.Quantity = "1002", "evt_paid_2", 1
	var wg sync.WaitGroup
	statuses := make([]int, 8)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i], _ = sh.deliver(t, dup, nil)
		}()
	}
	wg.Wait()
	for _, st := range statuses {
		if st != http.StatusOK {
			t.Fatalf("simultaneous duplicates answered %v", statuses)
		}
	}
	if o := sh.order(t, "1002"); o == nil || len(keysOf(o)) != 1 {
		t.Fatalf("simultaneous duplicates: order = %v", o)
	}
	r := sh.s.Do(t, ts.Req{Method: "GET", Path: "/api/apps/" + sh.appID + "/licenses?search=1002&limit=50", Token: sh.o.Token})
	if n := r.Data()["total"]; n != float64(1) {
		t.Fatalf("simultaneous duplicates made %v licenses, want 1", n)
	}

	// An unmapped product is refused (NOT_FOUND: the store retries once the owner maps it).
	other := paid
	other.OrderID, other.EventID, other.Product = "1003", "evt_paid_3", "999"
	if status, raw := sh.deliver(t, other, nil); status != http.StatusNotFound {
		t.Fatalf("unmapped product: %d %s", status, raw)
	}

	// Refund (or chargeback): the keys are banned or gone.
	kind := commerce.KindRefunded
	if p == commerce.SellApp {
		kind = commerce.KindChargeback
	}
	status, raw = sh.deliver(t, commercetest.Sale{Kind: kind, EventID: "evt_ref_1", OrderID: "1001", Amount: 1999, Currency: "eur", Product: "42"}, nil)
	if status != http.StatusOK {
		t.Fatalf("refund: %d %s", status, raw)
	}
	if got := sh.order(t, "1001"); got["status"] != "refunded" && got["status"] != "chargeback" {
		t.Fatalf("order after refund = %v", got)
	}
	for _, k := range keys {
		l := sh.license(t, k)
		switch refund {
		case commerce.RefundBan:
			if l == nil || l["banned"] != true {
				t.Fatalf("banned refund: license %s = %v", k, l)
			}
		case commerce.RefundRevoke:
			if l != nil {
				t.Fatalf("revoked refund: license %s still exists: %v", k, l)
			}
		}
	}
	// A refund of an order nobody paid: NOT_FOUND, said plainly.
	status, raw = sh.deliver(t, commercetest.Sale{Kind: kind, EventID: "evt_ref_x", OrderID: "nope", Product: "42"}, nil)
	if status != http.StatusNotFound || !strings.Contains(string(raw), "not been paid") {
		t.Fatalf("refund of an unknown order: %d %s", status, raw)
	}
	if p == commerce.SellApp {
		return // SellApp sells one-off deliveries
	}

	// Subscriptions: a renewal of an unknown subscription is NOT_FOUND; a sale with a
	// subscription renews (once per event) and a cancellation expires at period end.
	status, raw = sh.deliver(t, commercetest.Sale{Kind: commerce.KindRenewed, EventID: "evt_ren_x", Subscription: "777", Amount: 999, Product: "42"}, nil)
	if status != http.StatusNotFound || !strings.Contains(string(raw), `"NOT_FOUND"`) {
		t.Fatalf("renewal of an unknown subscription: %d %s", status, raw)
	}
	sub := paid
	sub.OrderID, sub.EventID, sub.Subscription, sub.Quantity = "2001", "evt_paid_sub", "555", 1
	if p == commerce.LemonSqueezy {
		sub.Subscription = "" // Lemon Squeezy links it in a second event
	}
	if status, raw := sh.deliver(t, sub, nil); status != http.StatusOK {
		t.Fatalf("subscription sale: %d %s", status, raw)
	}
	if p == commerce.LemonSqueezy {
		if status, raw := sh.deliver(t, commercetest.Sale{Kind: commerce.KindLink, EventID: "evt_link", OrderID: "2001", Subscription: "555"}, nil); status != http.StatusOK {
			t.Fatalf("subscription_created: %d %s", status, raw)
		}
	}
	first := sh.order(t, "2001")
	subKey := keysOf(first)[0]
	renew := commercetest.Sale{Kind: commerce.KindRenewed, EventID: "evt_ren_1", OrderID: "ren-sale-1", Subscription: "555", Amount: 999, Currency: "eur", Product: "42"}
	for range 2 {
		if status, raw := sh.deliver(t, renew, nil); status != http.StatusOK {
			t.Fatalf("renewal: %d %s", status, raw)
		}
	}
	renewed := sh.order(t, "2001")
	before, _ := time.Parse(time.RFC3339Nano, first["paidThrough"].(string))
	after, _ := time.Parse(time.RFC3339Nano, renewed["paidThrough"].(string))
	if d := after.Sub(before); d < 29*24*time.Hour || d > 31*24*time.Hour {
		t.Fatalf("a renewal delivered twice moved paidThrough by %v, want one period (30 days)", d)
	}
	if l := sh.license(t, subKey); l["expiresAt"] != renewed["paidThrough"] {
		t.Fatalf("renewed key expires %v, want %v", l["expiresAt"], renewed["paidThrough"])
	}
	end := sh.s.Clock().Now().Add(10 * 24 * time.Hour).UTC().Truncate(time.Second)
	if status, raw := sh.deliver(t, commercetest.Sale{Kind: commerce.KindCanceled, EventID: "evt_can_1", OrderID: "can-1", Subscription: "555", PeriodEnd: end, Product: "42"}, nil); status != http.StatusOK {
		t.Fatalf("cancellation: %d %s", status, raw)
	}
	canceled := sh.order(t, "2001")
	if canceled["status"] != "canceled" {
		t.Fatalf("order after cancellation = %v", canceled)
	}
	if l := sh.license(t, subKey); l["expiresAt"] != canceled["periodEnd"] || l["banned"] == true {
		t.Fatalf("canceled key = %v; want it to expire at %v", l, canceled["periodEnd"])
	}
}

// TestStoreOrderDetailAndLimits: the order page shows its events with their raw payloads,
// store-created users respect the plan's user limit, and an unknown receiver is 404.
func TestStoreOrderDetailAndLimits(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o, appID := newStoreApp(t, s)
		sh := connectStore(t, s, o, appID, commerce.Sellix, commerce.RefundBan)
		sh.mapProduct(t, map[string]any{"productId": "users", "createUser": true, "level": 2})
		// The free plan allows 15 users per app: 16 store users are refused, nothing is made.
		big := commercetest.Sale{Kind: commerce.KindPaid, EventID: "e1", OrderID: "big", Product: "users", Quantity: 16, Email: "b@example.com", Amount: 100, Currency: "usd"}
		if status, raw := sh.deliver(t, big, nil); status != http.StatusForbidden || !strings.Contains(string(raw), "PLAN_LIMIT") {
			t.Fatalf("over the user limit: %d %s", status, raw)
		}
		if len(sh.orders(t)) != 0 {
			t.Fatal("a refused sale left an order")
		}
		small := big
		small.OrderID, small.EventID, small.Quantity = "small", "e2", 2
		if status, raw := sh.deliver(t, small, nil); status != http.StatusOK {
			t.Fatalf("within the limit: %d %s", status, raw)
		}
		ord := sh.order(t, "small")
		r := s.Do(t, ts.Req{Method: "GET", Path: "/api/apps/" + appID + "/users?search=" + keysOf(ord)[0], Token: o.Token})
		if r.Data()["total"] != float64(1) {
			t.Fatalf("store-created user not found: %s", r.Raw)
		}
		r = s.Do(t, ts.Req{Method: "GET", Path: "/api/apps/" + appID + "/orders/" + ord["id"].(string), Token: o.Token})
		expectOK(t, r, http.StatusOK)
		evs := r.Data()["events"].([]any)
		if len(evs) != 1 || !strings.Contains(evs[0].(map[string]any)["payload"].(string), `"order:paid"`) {
			t.Fatalf("order events = %s", r.Raw)
		}
		r = s.Do(t, ts.Req{Method: "POST", Path: "/api/apps/" + appID + "/orders/" + ord["id"].(string) + "/resend", Token: o.Token})
		expectOK(t, r, http.StatusOK)
		// order.paid reaches the app's log through the event log, and the revenue through
		// core/analytics (the log's consumer runs after the answer: poll, bounded).
		deadline := time.Now().Add(30 * time.Second)
		for {
			r = s.Do(t, ts.Req{Method: "GET", Path: "/api/apps/" + appID + "/analytics/revenue?days=7", Token: o.Token})
			expectOK(t, r, http.StatusOK)
			rows, _ := r.Body["data"].([]any)
			if len(rows) == 1 {
				row := rows[0].(map[string]any)
				if row["amount"] != float64(100) || row["currency"] != "USD" || row["orders"] != float64(1) || row["productRef"] == "" {
					t.Fatalf("revenue = %s", r.Raw)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no revenue row after 10 s: %s", r.Raw)
			}
			time.Sleep(50 * time.Millisecond)
		}
		r = s.Do(t, ts.Req{Method: "GET", Path: "/api/apps/" + appID + "/logs?event=order.paid", Token: o.Token})
		if r.Data()["total"] != float64(1) {
			t.Fatalf("order.paid log entries: %s", r.Raw)
		}
		r = s.Do(t, ts.Req{Method: "GET", Path: "/api/apps/" + appID + "/analytics/revenue?days=0", Token: o.Token})
		expect(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
		r = s.Do(t, ts.Req{Method: "POST", Path: "/api/stores/receive/nosuchreceiver", Body: map[string]any{}})
		expect(t, r, http.StatusNotFound, "NOT_FOUND")
		// Bad owner input gets the envelope and changes nothing.
		r = s.Do(t, ts.Req{Method: "POST", Path: "/api/apps/" + appID + "/stores", Token: o.Token, Body: map[string]any{"provider": "ebay", "secret": "x"}})
		expect(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
		r = s.Do(t, ts.Req{Method: "POST", Path: "/api/apps/" + appID + "/stores", Token: o.Token, Body: map[string]any{"provider": "stripe"}})
		expect(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
		r = s.Do(t, ts.Req{Method: "POST", Path: "/api/apps/" + appID + "/stores/" + sh.connID + "/products", Token: o.Token, Body: map[string]any{"productId": "x", "keyPrefix": "no-dash!"}})
		expect(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
	})
}

// TestStoreRefundLogsSocketsOut: a buyer signed in with a store-issued key has a socket
// open; the order's refund bans the key and its user and the socket hears force_logout.
func TestStoreRefundLogsSocketsOut(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		setPlan(t, s, o.Username, "business")
		appID, secret := api{t, s, o.Token}.createApp("Shop sockets")
		sh := connectStore(t, s, o, appID, commerce.Sellix, commerce.RefundBan)
		sh.mapProduct(t, map[string]any{"productId": "42", "level": 1})
		sale := commercetest.Sale{Kind: commerce.KindPaid, EventID: "p1", OrderID: "sock-1", Product: "42", Email: "sock@example.com", Amount: 500, Currency: "usd"}
		if status, raw := sh.deliver(t, sale, nil); status != http.StatusOK {
			t.Fatalf("paid: %d %s", status, raw)
		}
		key := keysOf(sh.order(t, "sock-1"))[0]
		c := newSDK(t, s, secret)
		c.mustInit()
		expectOK(t, c.withNonce("license", map[string]any{"licenseKey": key}), http.StatusOK)
		sock := mustDialWS(t, s, "/api/client/ws?token="+c.token, c.ip)
		sock.send(map[string]any{"type": "ping"})
		sock.expectType("pong")
		if status, raw := sh.deliver(t, commercetest.Sale{Kind: commerce.KindChargeback, EventID: "cb1", OrderID: "sock-1"}, nil); status != http.StatusOK {
			t.Fatalf("chargeback: %d %s", status, raw)
		}
		msg := sock.expectType("force_logout", "banned")
		if !strings.Contains(fmt.Sprint(msg), "sock-1") {
			t.Fatalf("force_logout = %v; want the order named", msg)
		}
	})
}

// TestDiscordInteractions: Discord's calls are verified with the app's public key (Ed25519
// over timestamp and body; a key pair this test makes); PING, /redeem, /license and
// /reset-hwid within the user's reset limit.
func TestDiscordInteractions(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		appID, secret := api{t, s, o.Token}.createApp("Discord app")
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		r := s.Do(t, ts.Req{Method: "POST", Path: "/api/apps/" + appID + "/stores", Token: o.Token,
			Body: map[string]any{"provider": "discord", "secret": hex.EncodeToString(pub)}})
		expectOK(t, r, http.StatusCreated)
		path := strings.Replace(r.Data()["receiverPath"].(string), "/api/stores/receive/", "/api/discord/interactions/", 1)
		call := func(body map[string]any, signer ed25519.PrivateKey) (int, map[string]any) {
			raw, _ := json.Marshal(body)
			stamp := fmt.Sprint(time.Now().Unix())
			sig := ed25519.Sign(signer, append([]byte(stamp), raw...))
			res := s.Do(t, ts.Req{Method: "POST", Path: path, Body: raw, Header: map[string]string{
				"X-Signature-Ed25519": hex.EncodeToString(sig), "X-Signature-Timestamp": stamp}})
			return res.Status, res.Body
		}
		if status, body := call(map[string]any{"type": 1}, priv); status != http.StatusOK || body["type"] != float64(1) {
			t.Fatalf("PING: %d %v", status, body)
		}
		_, other, _ := ed25519.GenerateKey(rand.Reader)
		if status, _ := call(map[string]any{"type": 1}, other); status != http.StatusUnauthorized {
			t.Fatalf("another key's signature: %d, want 401", status)
		}
		// A buyer's key, signed in once (a user with a hardware id), allowed one reset.
		sh := connectStore(t, s, o, appID, commerce.Sellix, commerce.RefundBan)
		sh.mapProduct(t, map[string]any{"productId": "42"})
		if status, raw := sh.deliver(t, commercetest.Sale{Kind: commerce.KindPaid, EventID: "d1", OrderID: "disc-1", Product: "42", Email: "d@example.com", Amount: 1, Currency: "usd"}, nil); status != http.StatusOK {
			t.Fatalf("paid: %d %s", status, raw)
		}
		key := keysOf(sh.order(t, "disc-1"))[0]
		c := newSDK(t, s, secret)
		c.mustInit()
		expectOK(t, c.withNonce("license", map[string]any{"licenseKey": key, "hwid": "HW-1"}), http.StatusOK)
		users := s.Do(t, ts.Req{Method: "GET", Path: "/api/apps/" + appID + "/users?search=" + key, Token: o.Token})
		userID := users.Data()["users"].([]any)[0].(map[string]any)["id"].(string)
		expectOK(t, s.Do(t, ts.Req{Method: "PATCH", Path: "/api/apps/" + appID + "/users/" + userID, Token: o.Token,
			Body: map[string]any{"hwidResetMax": 1}}), http.StatusOK)

		command := func(name, user string) string {
			status, body := call(map[string]any{"type": 2, "member": map[string]any{"user": map[string]any{"id": user}},
				"data": map[string]any{"name": name, "options": []any{map[string]any{"name": "key", "value": key}}}}, priv)
			if status != http.StatusOK || body["type"] != float64(4) {
				t.Fatalf("/%s: %d %v", name, status, body)
			}
			return body["data"].(map[string]any)["content"].(string)
		}
		if got := command("license", "111"); !strings.Contains(got, "Redeem the key first") {
			t.Fatalf("/license before /redeem: %q", got)
		}
		if got := command("redeem", "111"); !strings.Contains(got, "yours") {
			t.Fatalf("/redeem: %q", got)
		}
		if got := command("redeem", "222"); !strings.Contains(got, "another Discord account") {
			t.Fatalf("/redeem by another account: %q", got)
		}
		if got := command("license", "111"); !strings.Contains(got, "active") {
			t.Fatalf("/license: %q", got)
		}
		if got := command("reset-hwid", "111"); !strings.Contains(got, "reset") {
			t.Fatalf("/reset-hwid: %q", got)
		}
		u := s.Do(t, ts.Req{Method: "GET", Path: "/api/apps/" + appID + "/users/" + userID, Token: o.Token})
		if u.Data()["hwid"] != "" || u.Data()["hwidResets"] != float64(1) {
			t.Fatalf("user after the reset: %s", u.Raw)
		}
		if got := command("reset-hwid", "111"); !strings.Contains(got, "Not now") {
			t.Fatalf("a reset past the user's limit: %q", got)
		}
	})
}
