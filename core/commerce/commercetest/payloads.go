// Package commercetest builds store notifications shaped as each store documents them, for
// the receivers' tests and the load run (cmd/keyward-load -stores).
package commercetest

import (
	"encoding/json"
	"net/url"
	"strconv"
	"time"

	"github.com/keyward/keyward/core/commerce"
)

// Sale describes one store event.
type Sale struct {
	Kind         commerce.Kind
	EventID      string
	OrderID      string
	Subscription string
	Product      string
	Variant      string
	Quantity     int
	Email        string
	Amount       int64 // minor units
	Currency     string
	PeriodEnd    time.Time
	// Sent is when the store made the notification, for the stores that put it in the
	// body (Sellix, Shoppy); zero is a fixed time, so one Sale is one body and a repeated
	// delivery is the store's retry of the same notification (those stores send no event
	// id: the body's digest is the event's).
	Sent time.Time
}

func j(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // test data only
	}
	return b
}

type m = map[string]any

func major(minor int64) float64 { return float64(minor) / 100 }

// Body answers the notification of s as store p sends it, and its content type.
func Body(p commerce.Provider, s Sale) ([]byte, string) {
	if s.Quantity == 0 {
		s.Quantity = 1
	}
	if s.Currency == "" {
		s.Currency = "usd"
	}
	switch p {
	case commerce.Stripe:
		return stripe(s), "application/json"
	case commerce.Paddle:
		return paddle(s), "application/json"
	case commerce.LemonSqueezy:
		return lemon(s), "application/json"
	case commerce.Sellix, commerce.Shoppy:
		return sellix(p, s), "application/json"
	case commerce.SellApp:
		return sellapp(s), "application/json"
	case commerce.Gumroad:
		return gumroad(s), "application/x-www-form-urlencoded"
	}
	panic("commercetest: unknown store " + string(p))
}

// stripe: https://docs.stripe.com/api/events/object with a Checkout Session, an
// invoice, a charge, a dispute or a subscription as data.object.
func stripe(s Sale) []byte {
	ev := m{"id": s.EventID, "object": "event", "api_version": "2025-09-30", "created": time.Now().Unix(), "livemode": false}
	switch s.Kind {
	case commerce.KindPaid:
		ev["type"] = "checkout.session.completed"
		ev["data"] = m{"object": m{"id": "cs_test_" + s.OrderID, "object": "checkout.session", "mode": "payment",
			"payment_intent": s.OrderID, "subscription": nilIfEmpty(s.Subscription), "payment_status": "paid", "status": "complete",
			"amount_total": s.Amount, "currency": s.Currency, "payment_link": "plink_x",
			"customer_details": m{"email": s.Email, "name": "Buyer"},
			"metadata":         m{"product": s.Product, "variant": s.Variant, "quantity": strconv.Itoa(s.Quantity)}}}
	case commerce.KindRenewed:
		ev["type"] = "invoice.paid"
		ev["data"] = m{"object": m{"id": "in_" + s.EventID, "object": "invoice", "billing_reason": "subscription_cycle",
			"subscription": s.Subscription, "amount_paid": s.Amount, "currency": s.Currency,
			"lines": m{"data": []any{m{"period": m{"start": time.Now().Unix(), "end": unixOrZero(s.PeriodEnd)}}}}}}
	case commerce.KindRefunded:
		ev["type"] = "charge.refunded"
		ev["data"] = m{"object": m{"id": "ch_" + s.OrderID, "object": "charge", "payment_intent": s.OrderID, "refunded": true,
			"amount_refunded": s.Amount, "currency": s.Currency}}
	case commerce.KindChargeback:
		ev["type"] = "charge.dispute.created"
		ev["data"] = m{"object": m{"id": "dp_" + s.OrderID, "object": "dispute", "payment_intent": s.OrderID, "reason": "fraudulent"}}
	case commerce.KindCanceled:
		ev["type"] = "customer.subscription.updated"
		ev["data"] = m{"object": m{"id": s.Subscription, "object": "subscription", "cancel_at_period_end": true,
			"cancel_at": unixOrZero(s.PeriodEnd), "status": "active"}}
	}
	return j(ev)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func unixOrZero(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.Unix()
}

// paddle: Paddle Billing notifications (event_id, event_type, occurred_at, data).
func paddle(s Sale) []byte {
	ev := m{"event_id": s.EventID, "notification_id": "ntf_" + s.EventID, "occurred_at": time.Now().UTC().Format(time.RFC3339Nano)}
	totals := m{"total": strconv.FormatInt(s.Amount, 10), "currency_code": s.Currency}
	switch s.Kind {
	case commerce.KindPaid, commerce.KindRenewed:
		origin := "web"
		if s.Kind == commerce.KindRenewed {
			origin = "subscription_recurring"
		}
		ev["event_type"] = "transaction.completed"
		ev["data"] = m{"id": s.OrderID, "status": "completed", "origin": origin, "subscription_id": nilIfEmpty(s.Subscription),
			"currency_code": s.Currency, "customer_id": "ctm_1", "custom_data": m{"email": s.Email},
			"items":   []any{m{"price": m{"id": s.Variant, "product_id": s.Product}, "quantity": s.Quantity}},
			"details": m{"totals": totals}, "billing_period": m{"ends_at": rfcOrNil(s.PeriodEnd)}}
	case commerce.KindRefunded, commerce.KindChargeback:
		action := "refund"
		if s.Kind == commerce.KindChargeback {
			action = "chargeback"
		}
		ev["event_type"] = "adjustment.created"
		ev["data"] = m{"id": "adj_" + s.EventID, "action": action, "status": "approved", "transaction_id": s.OrderID,
			"subscription_id": nilIfEmpty(s.Subscription), "currency_code": s.Currency, "totals": totals}
	case commerce.KindCanceled:
		ev["event_type"] = "subscription.canceled"
		ev["data"] = m{"id": s.Subscription, "status": "canceled", "current_billing_period": m{"ends_at": rfcOrNil(s.PeriodEnd)}}
	}
	return j(ev)
}

func rfcOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

// lemon: Lemon Squeezy's meta + JSON:API data.
func lemon(s Sale) []byte {
	ev := m{"meta": m{"test_mode": true, "webhook_id": "wh_" + s.EventID}}
	meta := ev["meta"].(m)
	switch s.Kind {
	case commerce.KindPaid:
		meta["event_name"] = "order_created"
		ev["data"] = m{"type": "orders", "id": s.OrderID, "attributes": m{"store_id": 1, "identifier": "id-" + s.OrderID,
			"user_email": s.Email, "currency": s.Currency, "total": s.Amount, "status": "paid", "refunded": false,
			"first_order_item": m{"product_id": json.Number(s.Product), "variant_id": json.Number(s.Variant), "quantity": s.Quantity}}}
	case commerce.KindRefunded:
		meta["event_name"] = "order_refunded"
		ev["data"] = m{"type": "orders", "id": s.OrderID, "attributes": m{"status": "refunded", "refunded": true, "refunded_amount": s.Amount, "currency": s.Currency}}
	case commerce.KindLink:
		meta["event_name"] = "subscription_created"
		ev["data"] = m{"type": "subscriptions", "id": s.Subscription, "attributes": m{"order_id": json.Number(s.OrderID), "status": "active"}}
	case commerce.KindRenewed:
		meta["event_name"] = "subscription_payment_success"
		ev["data"] = m{"type": "subscription-invoices", "id": s.EventID, "attributes": m{"subscription_id": json.Number(s.Subscription),
			"billing_reason": "renewal", "status": "paid", "total": s.Amount, "currency": s.Currency}}
	case commerce.KindCanceled:
		meta["event_name"] = "subscription_cancelled"
		ev["data"] = m{"type": "subscriptions", "id": s.Subscription, "attributes": m{"status": "cancelled", "ends_at": rfcOrNil(s.PeriodEnd)}}
	}
	return j(ev)
}

// sellix: {"event":"order:paid","data":{…}} (Shoppy/Shoppex sends the same envelope).
func sellix(p commerce.Provider, s Sale) []byte {
	data := m{"uniqid": s.OrderID, "customer_email": s.Email, "total": major(s.Amount), "currency": s.Currency,
		"product_id": s.Product, "quantity": s.Quantity, "status": "COMPLETED", "gateway": "STRIPE"}
	if s.Variant != "" {
		data["variant_id"] = s.Variant
	}
	event := map[commerce.Kind]string{commerce.KindPaid: "order:paid", commerce.KindChargeback: "order:disputed",
		commerce.KindRefunded: "order:refunded", commerce.KindRenewed: "subscription:renewed", commerce.KindCanceled: "subscription:cancelled"}[s.Kind]
	if s.Kind == commerce.KindRenewed || s.Kind == commerce.KindCanceled {
		data = m{"uniqid": s.Subscription, "current_period_end": unixOrZero(s.PeriodEnd)}
	}
	if s.Subscription != "" && s.Kind == commerce.KindPaid {
		data["subscription_id"] = s.Subscription
	}
	sent := s.Sent
	if sent.IsZero() {
		sent = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return j(m{"event": event, "data": data, "created_at": sent.Unix()})
}

// sellapp: the dynamic delivery call carries the order alone; the webhook wraps it in
// {"event":"order.completed","data":…,"store":…}.
func sellapp(s Sale) []byte {
	amount := strconv.FormatInt(s.Amount, 10) // minor units, as the invoice model shows them
	order := m{"id": s.OrderID, "store_id": 1, "customer_information": m{"email": s.Email, "country": "NL"},
		"product_variants": []any{m{"id": s.Variant, "product_id": s.Product, "quantity": s.Quantity}},
		"payment": m{"full_price": m{"base": amount, "currency": s.Currency, "units": s.Quantity, "vat": 0,
			"total": m{"exclusive": amount, "inclusive": amount}}}}
	switch s.Kind {
	case commerce.KindChargeback:
		return j(m{"event": "order.disputed", "data": m{"id": s.OrderID}, "store": 1})
	}
	if s.Subscription == "webhook" {
		return j(m{"event": "order.completed", "data": order, "store": 1})
	}
	return j(order)
}

// gumroad: the Ping, form-encoded.
func gumroad(s Sale) []byte {
	f := url.Values{"seller_id": {"sel_1"}, "product_id": {s.Product}, "product_permalink": {"perma"}, "email": {s.Email},
		"price": {strconv.FormatInt(s.Amount, 10)}, "currency": {s.Currency}, "quantity": {strconv.Itoa(s.Quantity)},
		"sale_id": {s.OrderID}, "sale_timestamp": {time.Now().UTC().Format(time.RFC3339)}, "test": {"true"}}
	if s.Variant != "" {
		f.Set("variants", s.Variant)
	}
	if s.Subscription != "" {
		f.Set("subscription_id", s.Subscription)
	}
	switch s.Kind {
	case commerce.KindRefunded:
		f.Set("refunded", "true")
	case commerce.KindChargeback:
		f.Set("disputed", "true")
	case commerce.KindRenewed:
		f.Set("is_recurring_charge", "true")
	case commerce.KindCanceled:
		f.Set("cancelled", "true")
		f.Set("resource_name", "cancellation")
		if !s.PeriodEnd.IsZero() {
			f.Set("ended_at", s.PeriodEnd.UTC().Format(time.RFC3339))
		}
	}
	return []byte(f.Encode())
}
