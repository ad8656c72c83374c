package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/keyward/keyward/core/commerce"
	ts "github.com/keyward/keyward/internal/testserver"
)

// stripeEvent delivers a Stripe event of type typ with data.object obj, signed now.
func (sh storeShop) stripeEvent(t *testing.T, id, typ string, obj map[string]any) (int, []byte) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"id": id, "object": "event", "type": typ, "api_version": "2024-06-20",
		"created": time.Now().Unix(), "livemode": false, "data": map[string]any{"object": obj}})
	name, value := commerce.Sign(commerce.Stripe, sh.secret, body, sh.s.Clock().Now())
	req, _ := http.NewRequest("POST", sh.s.URL+sh.path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(name, value)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

// TestStoreStripeSubscriptionRefunds: a Stripe subscription sold by Checkout (no payment
// intent on the session), its first invoice and a renewal invoice; a refund of either
// invoice's charge names only the invoice's payment (and invoice), and finds the order
// through them: the keys are banned once. A refund of a payment nobody knows is 404.
func TestStoreStripeSubscriptionRefunds(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o, appID := newStoreApp(t, s)
		sh := connectStore(t, s, o, appID, commerce.Stripe, commerce.RefundBan)
		sh.mapProduct(t, map[string]any{"productId": "sub", "duration": 30 * 86400})
		for i, refund := range []struct{ invoice, intent, charge string }{
			{"in_first", "pi_first", "ch_first"}, // the first invoice's payment
			{"in_cycle", "pi_cycle", "ch_cycle"}, // a renewal's
		} {
			sub := "sub_" + refund.invoice
			sess := "cs_" + refund.invoice
			st, raw := sh.stripeEvent(t, "evt_cs_"+sub, "checkout.session.completed", map[string]any{"id": sess, "object": "checkout.session",
				"mode": "subscription", "payment_intent": nil, "subscription": sub, "invoice": "in_first_" + sub, "payment_status": "paid",
				"amount_total": 900, "currency": "usd", "customer_details": map[string]any{"email": "sub@example.com"}, "metadata": map[string]any{"product": "sub"}})
			if st != http.StatusOK {
				t.Fatalf("checkout: %d %s", st, raw)
			}
			// The first invoice: its payment intent is linked to the order.
			st, raw = sh.stripeEvent(t, "evt_in1_"+sub, "invoice.paid", map[string]any{"id": "in_first_" + sub, "object": "invoice",
				"billing_reason": "subscription_create", "subscription": sub, "payment_intent": "pi_first_" + sub, "charge": "ch_first_" + sub,
				"amount_paid": 900, "currency": "usd"})
			if st != http.StatusOK {
				t.Fatalf("first invoice: %d %s", st, raw)
			}
			if i == 1 {
				st, raw = sh.stripeEvent(t, "evt_in2_"+sub, "invoice.paid", map[string]any{"id": refund.invoice + "_" + sub, "object": "invoice",
					"billing_reason": "subscription_cycle", "subscription": sub, "payment_intent": refund.intent + "_" + sub,
					"amount_paid": 900, "currency": "usd", "lines": map[string]any{"data": []any{map[string]any{"period": map[string]any{"end": time.Now().Add(60 * 24 * time.Hour).Unix()}}}}})
				if st != http.StatusOK {
					t.Fatalf("renewal: %d %s", st, raw)
				}
			}
			ord := sh.order(t, sess)
			if ord == nil || ord["status"] != "paid" {
				t.Fatalf("order of %s: %v", sess, ord)
			}
			key := keysOf(ord)[0]
			// The refund's charge names the invoice's payment intent alone (newer API
			// versions drop charge.invoice).
			st, raw = sh.stripeEvent(t, "evt_rf_"+sub, "charge.refunded", map[string]any{"id": refund.charge + "_" + sub, "object": "charge",
				"payment_intent": refund.intent + "_" + sub, "refunded": true, "amount_refunded": 900, "currency": "usd"})
			if st != http.StatusOK {
				t.Fatalf("refund: %d %s", st, raw)
			}
			if got := sh.order(t, sess); got["status"] != "refunded" {
				t.Fatalf("after refund: %v", got)
			}
			if l := sh.license(t, key); l == nil || l["banned"] != true {
				t.Fatalf("refunded subscription's key not banned: %v", l)
			}
		}
		st, raw := sh.stripeEvent(t, "evt_rf_unknown", "charge.refunded", map[string]any{"id": "ch_x", "object": "charge",
			"payment_intent": "pi_nobody", "invoice": "in_nobody", "refunded": true, "amount_refunded": 100, "currency": "usd"})
		if st != http.StatusNotFound {
			t.Fatalf("unknown payment's refund: %d %s", st, raw)
		}
	})
}

// TestStoreSellAppStrictFields: SellApp's payload is read by the invoice model's documented
// names only; a signed body lacking one (or shaped otherwise) is 400 and makes no order.
func TestStoreSellAppStrictFields(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o, appID := newStoreApp(t, s)
		sh := connectStore(t, s, o, appID, commerce.SellApp, commerce.RefundBan)
		sh.mapProduct(t, map[string]any{"productId": "42"})
		good := map[string]any{"id": 7001, "customer_information": map[string]any{"email": "strict@example.com"},
			"product_variants": []any{map[string]any{"id": 9, "product_id": 42, "quantity": 1}},
			"payment":          map[string]any{"full_price": map[string]any{"currency": "EUR", "total": map[string]any{"inclusive": "1999", "exclusive": "1999"}}}}
		send := func(body map[string]any) (int, []byte) {
			raw, _ := json.Marshal(body)
			name, value := commerce.Sign(commerce.SellApp, sh.secret, raw, s.Clock().Now())
			req, _ := http.NewRequest("POST", s.URL+sh.path, bytes.NewReader(raw))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(name, value)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, out
		}
		without := func(drop string) map[string]any {
			b, _ := json.Marshal(good)
			var c map[string]any
			_ = json.Unmarshal(b, &c)
			switch drop {
			case "email":
				delete(c["customer_information"].(map[string]any), "email")
			case "total":
				delete(c["payment"].(map[string]any)["full_price"].(map[string]any), "total")
			case "product":
				delete(c, "product_variants")
				c["product_id"] = 42 // an undocumented name is not read
			case "id":
				delete(c, "id")
				c["invoice_id"] = 7001
			}
			return c
		}
		for _, drop := range []string{"email", "total", "product", "id"} {
			if st, raw := send(without(drop)); st != http.StatusBadRequest || !bytes.Contains(raw, []byte("VALIDATION_ERROR")) {
				t.Fatalf("without %s: %d %s", drop, st, raw)
			}
		}
		if n := len(sh.orders(t)); n != 0 {
			t.Fatalf("%d orders after refused payloads", n)
		}
		if st, raw := send(good); st != http.StatusOK || !bytes.Contains(raw, []byte("-")) {
			t.Fatalf("documented payload: %d %s", st, raw)
		}
		if ord := sh.order(t, "7001"); ord == nil || ord["amount"] != float64(1999) || ord["currency"] != "EUR" || ord["email"] != "strict@example.com" {
			t.Fatalf("order: %v", ord)
		}
	})
}
