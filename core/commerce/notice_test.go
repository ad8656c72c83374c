package commerce_test

import (
	"errors"
	"testing"
	"time"

	"github.com/keyward/keyward/core/commerce"
	"github.com/keyward/keyward/core/commerce/commercetest"
)

// TestParseEachStoresShapes reads each store's documented payload of every kind it sends.
func TestParseEachStoresShapes(t *testing.T) {
	end := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	paid := commercetest.Sale{Kind: commerce.KindPaid, EventID: "evt_1", OrderID: "1001", Subscription: "", Product: "42", Variant: "7",
		Quantity: 3, Email: "buyer@example.com", Amount: 1999, Currency: "eur"}
	for _, p := range commerce.Providers() {
		body, ct := commercetest.Body(p, paid)
		n, err := commerce.Parse(p, ct, body)
		if err != nil {
			t.Fatalf("%s paid: %v", p, err)
		}
		if n.Kind != commerce.KindPaid || n.OrderID != "1001" || n.ProductID != "42" || n.Quantity != 3 || n.Email != "buyer@example.com" ||
			n.Amount != 1999 || n.Currency != "EUR" || n.EventID == "" {
			t.Errorf("%s paid = %+v", p, n)
		}
		if p != commerce.SellApp && p != commerce.Gumroad && n.VariantID != "7" {
			t.Errorf("%s paid variant = %q", p, n.VariantID)
		}
		// Every store but SellApp's delivery reports a refund or a chargeback.
		for _, k := range []commerce.Kind{commerce.KindRefunded, commerce.KindChargeback} {
			if p == commerce.LemonSqueezy && k == commerce.KindChargeback || p == commerce.SellApp && k == commerce.KindRefunded {
				continue
			}
			body, ct := commercetest.Body(p, commercetest.Sale{Kind: k, EventID: "evt_r", OrderID: "1001", Amount: 1999, Currency: "eur", Product: "42"})
			n, err := commerce.Parse(p, ct, body)
			if err != nil || n.Kind != k || n.OrderID != "1001" {
				t.Errorf("%s %s = %+v, %v", p, k, n, err)
			}
		}
		if p == commerce.SellApp {
			continue // one-off deliveries only
		}
		for _, k := range []commerce.Kind{commerce.KindRenewed, commerce.KindCanceled} {
			body, ct := commercetest.Body(p, commercetest.Sale{Kind: k, EventID: "evt_s", OrderID: "1002", Subscription: "555", Amount: 999, PeriodEnd: end, Product: "42"})
			n, err := commerce.Parse(p, ct, body)
			if err != nil || n.Kind != k || n.SubscriptionID != "555" {
				t.Errorf("%s %s = %+v, %v", p, k, n, err)
			}
			if p != commerce.Gumroad && p != commerce.LemonSqueezy && k == commerce.KindRenewed && !n.PeriodEnd.IsZero() && !n.PeriodEnd.Equal(end) {
				t.Errorf("%s renewal period end = %v", p, n.PeriodEnd)
			}
		}
	}
}

func TestParseRefusesWhatItCannotRead(t *testing.T) {
	for _, p := range commerce.Providers() {
		for _, body := range []string{"", "[]", "null", `{"event":"order:paid","data":{"customer_email":"x"}}`, "%zz"} {
			_, err := commerce.Parse(p, "", []byte(body))
			if p == commerce.Gumroad && body == "" {
				continue
			}
			if err != nil && !errors.Is(err, commerce.ErrPayload) {
				t.Errorf("%s %q: %v, want ErrPayload", p, body, err)
			}
		}
	}
	// Events Keyward has no use for are ignored, not refused.
	n, err := commerce.Parse(commerce.Stripe, "", []byte(`{"id":"evt_9","type":"customer.created","data":{"object":{"id":"cus_1"}}}`))
	if err != nil || n.Kind != commerce.KindIgnored {
		t.Errorf("an unused Stripe event = %+v, %v", n, err)
	}
}
