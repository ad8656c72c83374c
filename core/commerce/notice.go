package commerce

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Kind is what a store's notification means for an order.
type Kind string

// The kinds. Ignored notifications (events Keyward has no use for) are answered 200.
const (
	KindPaid       Kind = "paid"
	KindRefunded   Kind = "refunded"
	KindChargeback Kind = "chargeback"
	KindRenewed    Kind = "renewed"
	KindCanceled   Kind = "canceled"
	// KindLink ties a subscription id to an order already paid (Lemon Squeezy sends the
	// order and its subscription as two events).
	KindLink Kind = "link"
	// KindPayment links a payment's ids to the order of its subscription (Stripe's first
	// invoice of a subscription: its refund names only the invoice or its payment).
	KindPayment Kind = "payment"
	KindIgnored Kind = "ignored"
)

// Notice is a store's notification in one shape.
type Notice struct {
	Kind Kind
	// Type is the store's own event name, as sent.
	Type string
	// EventID is the store's event id, or a digest of the body when the store sends none
	// (a retry resends the same body).
	EventID string
	// OrderID is the store's order (or transaction, or sale) id; SubscriptionID the
	// subscription it belongs to, when any. Renewals and cancellations may carry only the
	// subscription.
	OrderID        string
	SubscriptionID string
	ProductID      string
	VariantID      string
	Quantity       int
	Email          string
	// Amount is in the currency's minor units, as the store reports the total.
	Amount   int64
	Currency string
	// PeriodEnd is when a renewed period ends, or when a canceled subscription's access ends.
	PeriodEnd time.Time
	// PaymentRefs are the store's ids of one payment (Stripe: the invoice, its payment
	// intent, its charge). A paid or renewed notice links them to its order; a refund or
	// dispute that names no known order finds it by them (a subscription's invoice).
	PaymentRefs []string
}

// ErrPayload refuses a verified notification Keyward cannot read (400: the store should not
// retry it).
var ErrPayload = errors.New("commerce: payload not understood")

func payloadErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrPayload, fmt.Sprintf(format, args...))
}

// doc is a decoded JSON object with path getters.
type doc map[string]any

func (d doc) get(path string) any {
	var cur any = map[string]any(d)
	for _, k := range strings.Split(path, ".") {
		switch m := cur.(type) {
		case map[string]any:
			cur = m[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(m) {
				return nil
			}
			cur = m[i]
		default:
			return nil
		}
	}
	return cur
}

// str answers the first path holding a string or a number, as text.
func (d doc) str(paths ...string) string {
	for _, p := range paths {
		switch v := d.get(p).(type) {
		case string:
			if v != "" {
				return v
			}
		case float64:
			return strconv.FormatFloat(v, 'f', -1, 64)
		case json.Number:
			return v.String()
		}
	}
	return ""
}

func (d doc) boolean(path string) bool {
	switch v := d.get(path).(type) {
	case bool:
		return v
	case string:
		return v == "true"
	}
	return false
}

// minor reads an amount already in minor units (Stripe, Paddle, Lemon Squeezy, Gumroad).
func (d doc) minor(paths ...string) int64 {
	n, _ := strconv.ParseFloat(d.str(paths...), 64)
	return int64(math.Round(n))
}

// major reads an amount in major units (Sellix, Shoppy, SellApp: 9.99) as minor units.
func (d doc) major(paths ...string) int64 {
	n, _ := strconv.ParseFloat(d.str(paths...), 64)
	return int64(math.Round(n * 100))
}

func (d doc) count(paths ...string) int {
	n, err := strconv.Atoi(d.str(paths...))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// unix reads seconds since the epoch or an RFC 3339 time.
func (d doc) time(paths ...string) time.Time {
	s := d.str(paths...)
	if s == "" {
		return time.Time{}
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0).UTC()
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC()
	}
	return time.Time{}
}

func digest(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// Parse reads a verified notification of store p.
func Parse(p Provider, contentType string, body []byte) (Notice, error) {
	if p == Gumroad {
		return parseGumroad(body)
	}
	var d doc
	if err := json.Unmarshal(body, &d); err != nil || d == nil {
		return Notice{}, payloadErr("the body is not a JSON object")
	}
	var n Notice
	var err error
	switch p {
	case Stripe:
		n, err = parseStripe(d)
	case Paddle:
		n, err = parsePaddle(d)
	case LemonSqueezy:
		n, err = parseLemon(d)
	case Sellix, Shoppy:
		n, err = parseSellixShoppy(d)
	case SellApp:
		n, err = parseSellApp(d)
	default:
		return Notice{}, fmt.Errorf("commerce: unknown store %q", p)
	}
	if err != nil {
		return Notice{}, err
	}
	if n.EventID == "" {
		n.EventID = digest(body)
	}
	n.Currency = strings.ToUpper(n.Currency)
	if n.Quantity < 1 {
		n.Quantity = 1
	}
	if n.Kind != KindIgnored && n.OrderID == "" && n.SubscriptionID == "" {
		return Notice{}, payloadErr("%s: no order id", n.Type)
	}
	return n, nil
}

// parseStripe reads a Stripe event (https://docs.stripe.com/api/events/object). One-off
// sales are Checkout Sessions: the order id is the payment intent (what refunds and disputes
// name), or the session for subscriptions; the product is the session's metadata "product"
// or its Payment Link id.
func parseStripe(d doc) (Notice, error) {
	n := Notice{Type: d.str("type"), EventID: d.str("id"), Kind: KindIgnored}
	o := doc{}
	if m, ok := d.get("data.object").(map[string]any); ok {
		o = m
	} else {
		return n, payloadErr("stripe: no data.object")
	}
	switch n.Type {
	case "checkout.session.completed", "checkout.session.async_payment_succeeded":
		if s := o.str("payment_status"); s != "paid" && s != "no_payment_required" {
			return n, nil // paid later: async_payment_succeeded follows
		}
		n.Kind = KindPaid
		n.SubscriptionID = o.str("subscription")
		n.OrderID = o.str("payment_intent", "id")
		n.PaymentRefs = refs(o.str("invoice"))
		n.ProductID = o.str("metadata.product", "payment_link")
		n.VariantID = o.str("metadata.variant")
		n.Quantity = o.count("metadata.quantity")
		n.Email = o.str("customer_details.email", "customer_email")
		n.Amount = o.minor("amount_total")
		n.Currency = o.str("currency")
	case "invoice.paid":
		n.SubscriptionID = o.str("subscription", "parent.subscription_details.subscription")
		n.PaymentRefs = refs(o.str("id"), o.str("payment_intent", "payments.data.0.payment.payment_intent"), o.str("charge"))
		if o.str("billing_reason") != "subscription_cycle" {
			if o.str("billing_reason") == "subscription_create" && n.SubscriptionID != "" {
				n.Kind = KindPayment // the checkout's sale: only its payment's ids are new
			}
			return n, nil
		}
		n.Kind = KindRenewed
		n.Amount = o.minor("amount_paid")
		n.Currency = o.str("currency")
		n.PeriodEnd = o.time("lines.data.0.period.end", "period_end")
	case "charge.refunded":
		n.Kind = KindRefunded
		n.OrderID = o.str("payment_intent")
		n.PaymentRefs = refs(o.str("payment_intent"), o.str("invoice"), o.str("id"))
		n.Amount = o.minor("amount_refunded")
		n.Currency = o.str("currency")
	case "charge.dispute.created":
		n.Kind = KindChargeback
		n.OrderID = o.str("payment_intent")
		n.PaymentRefs = refs(o.str("payment_intent"), o.str("charge"))
	case "customer.subscription.deleted":
		n.Kind = KindCanceled
		n.SubscriptionID = o.str("id")
		n.PeriodEnd = o.time("ended_at", "canceled_at")
	case "customer.subscription.updated":
		if !o.boolean("cancel_at_period_end") {
			return n, nil
		}
		n.Kind = KindCanceled
		n.SubscriptionID = o.str("id")
		n.PeriodEnd = o.time("cancel_at", "current_period_end", "items.data.0.current_period_end")
	}
	return n, nil
}

// parsePaddle reads a Paddle Billing notification (event_id, event_type, data). Paddle
// sends no buyer email in a transaction: the checkout's customData "email" is read.
func parsePaddle(d doc) (Notice, error) {
	n := Notice{Type: d.str("event_type"), EventID: d.str("event_id", "notification_id"), Kind: KindIgnored}
	o := doc{}
	if m, ok := d.get("data").(map[string]any); ok {
		o = m
	} else {
		return n, payloadErr("paddle: no data")
	}
	switch n.Type {
	case "transaction.completed":
		n.SubscriptionID = o.str("subscription_id")
		n.Amount = o.minor("details.totals.total", "details.totals.grand_total")
		n.Currency = o.str("currency_code", "details.totals.currency_code")
		if o.str("origin") == "subscription_recurring" {
			n.Kind = KindRenewed
			n.PeriodEnd = o.time("billing_period.ends_at")
			return n, nil
		}
		n.Kind = KindPaid
		n.OrderID = o.str("id")
		n.ProductID = o.str("items.0.price.product_id", "items.0.product.id")
		n.VariantID = o.str("items.0.price.id", "items.0.price_id")
		n.Quantity = o.count("items.0.quantity")
		n.Email = o.str("custom_data.email", "customer.email")
	case "adjustment.created", "adjustment.updated":
		if o.str("status") != "approved" {
			return n, nil
		}
		switch o.str("action") {
		case "refund":
			n.Kind = KindRefunded
		case "chargeback":
			n.Kind = KindChargeback
		default:
			return n, nil
		}
		n.OrderID = o.str("transaction_id")
		n.Amount = o.minor("totals.total")
		n.Currency = o.str("currency_code", "totals.currency_code")
	case "subscription.canceled":
		n.Kind = KindCanceled
		n.SubscriptionID = o.str("id")
		n.PeriodEnd = o.time("current_billing_period.ends_at", "canceled_at")
	}
	return n, nil
}

// parseLemon reads a Lemon Squeezy notification (meta.event_name, data.attributes). It
// sends no event id: the body's digest stands for it.
func parseLemon(d doc) (Notice, error) {
	n := Notice{Type: d.str("meta.event_name"), Kind: KindIgnored}
	a := doc{}
	if m, ok := d.get("data.attributes").(map[string]any); ok {
		a = m
	} else {
		return n, payloadErr("lemonsqueezy: no data.attributes")
	}
	id := d.str("data.id")
	switch n.Type {
	case "order_created":
		if a.str("status") != "paid" {
			return n, nil
		}
		n.Kind = KindPaid
		n.OrderID = id
		n.ProductID = a.str("first_order_item.product_id")
		n.VariantID = a.str("first_order_item.variant_id")
		n.Quantity = a.count("first_order_item.quantity")
		n.Email = a.str("user_email")
		n.Amount = a.minor("total")
		n.Currency = a.str("currency")
	case "order_refunded":
		n.Kind = KindRefunded
		n.OrderID = id
		n.Amount = a.minor("refunded_amount", "total")
		n.Currency = a.str("currency")
	case "subscription_created":
		n.Kind = KindLink
		n.OrderID = a.str("order_id")
		n.SubscriptionID = id
	case "subscription_payment_success":
		if a.str("billing_reason") != "renewal" {
			return n, nil
		}
		n.Kind = KindRenewed
		n.SubscriptionID = a.str("subscription_id")
		n.Amount = a.minor("total")
		n.Currency = a.str("currency")
	case "subscription_cancelled":
		n.Kind = KindCanceled
		n.SubscriptionID = id
		n.PeriodEnd = a.time("ends_at", "renews_at")
	}
	return n, nil
}

// parseSellixShoppy reads Sellix's and Shoppy's (Shoppex's) notifications: event and data,
// amounts in major units. Shoppy's older shape nests the order under data.order.
func parseSellixShoppy(d doc) (Notice, error) {
	n := Notice{Type: d.str("event"), Kind: KindIgnored}
	o := doc{}
	if m, ok := d.get("data.order").(map[string]any); ok {
		o = m
	} else if m, ok := d.get("data").(map[string]any); ok {
		o = m
	} else {
		return n, payloadErr("%s: no data", n.Type)
	}
	id := o.str("uniqid", "id")
	switch n.Type {
	case "order:paid", "order:paid:product":
		n.Kind = KindPaid
		n.OrderID = id
		n.SubscriptionID = o.str("subscription_id")
		n.ProductID = o.str("product_id", "product.uniqid", "product.id")
		n.VariantID = o.str("variant_id", "product_variant_id")
		n.Quantity = o.count("quantity")
		n.Email = o.str("customer_email", "email")
		n.Amount = o.major("total", "total_display", "price")
		n.Currency = o.str("currency")
	case "order:disputed", "order:dispute":
		n.Kind = KindChargeback
		n.OrderID = id
	case "order:refunded", "order:refund":
		n.Kind = KindRefunded
		n.OrderID = id
	case "subscription:renewed":
		n.Kind = KindRenewed
		n.SubscriptionID = o.str("subscription_id", "uniqid", "id")
		n.PeriodEnd = o.time("current_period_end", "next_payment_date")
	case "subscription:cancelled", "subscription:canceled":
		n.Kind = KindCanceled
		n.SubscriptionID = o.str("subscription_id", "uniqid", "id")
		n.PeriodEnd = o.time("current_period_end", "next_payment_date")
	}
	return n, nil
}

// parseSellApp reads SellApp's webhook ({"event":"order.completed","data":{…}}) or its
// dynamic delivery call (the order alone, no event): both are a paid order whose keys
// are answered in the body. The member names of the order are read loosely (SellApp
// documents the envelope, not every member).
func parseSellApp(d doc) (Notice, error) {
	n := Notice{Type: d.str("event"), Kind: KindIgnored}
	o := d
	if n.Type != "" {
		// A webhook: {"event":…, "data": the invoice, "store":…}.
		m, ok := d.get("data").(map[string]any)
		if !ok {
			return n, payloadErr("sellapp: a webhook without data")
		}
		o = m
	}
	// Only the invoice model's documented names are read; a payload that lacks one is
	// refused whole (400: nothing changes, and a body nobody can read is not retried).
	need := func(path string) (string, error) {
		v := o.str(path)
		if v == "" {
			return "", payloadErr("sellapp: the invoice lacks %s", path)
		}
		return v, nil
	}
	switch n.Type {
	case "", "order.completed":
		if n.Type == "" {
			n.Type = "dynamic_delivery"
		}
		var errs [5]error
		n.OrderID, errs[0] = need("id")
		n.Email, errs[1] = need("customer_information.email")
		n.Currency, errs[2] = need("payment.full_price.currency")
		var total string
		total, errs[3] = need("payment.full_price.total.inclusive")
		n.ProductID, errs[4] = need("product_variants.0.product_id")
		if err := errors.Join(errs[:]...); err != nil {
			return n, err
		}
		amount, err := strconv.ParseInt(total, 10, 64)
		if err != nil || amount < 0 {
			return n, payloadErr("sellapp: payment.full_price.total.inclusive is not an amount in minor units")
		}
		n.Kind, n.Amount = KindPaid, amount
		n.VariantID = o.str("product_variants.0.id")
		n.Quantity = o.count("product_variants.0.quantity")
	case "order.disputed":
		id, err := need("id")
		if err != nil {
			return n, err
		}
		n.Kind, n.OrderID = KindChargeback, id
	}
	return n, nil
}

// parseGumroad reads Gumroad's Ping (form-encoded sale) and its resource subscriptions
// (refund, dispute, cancellation, recurring charge).
func parseGumroad(body []byte) (Notice, error) {
	f, err := url.ParseQuery(string(body))
	if err != nil {
		return Notice{}, payloadErr("gumroad: the body is not a form")
	}
	yes := func(k string) bool { return f.Get(k) == "true" }
	n := Notice{Type: f.Get("resource_name"), OrderID: f.Get("sale_id"), SubscriptionID: f.Get("subscription_id"),
		ProductID: f.Get("product_id"), VariantID: f.Get("variants"), Email: f.Get("email"), Currency: f.Get("currency")}
	if n.ProductID == "" {
		n.ProductID = f.Get("product_permalink")
	}
	price, _ := strconv.ParseInt(f.Get("price"), 10, 64)
	n.Amount = price
	n.Quantity, _ = strconv.Atoi(f.Get("quantity"))
	switch {
	case yes("disputed") || n.Type == "dispute":
		n.Kind = KindChargeback
	case yes("refunded") || n.Type == "refund":
		n.Kind = KindRefunded
	case yes("cancelled") || n.Type == "cancellation":
		n.Kind = KindCanceled
		n.OrderID = ""
		if t, err := time.Parse(time.RFC3339, f.Get("ended_at")); err == nil {
			n.PeriodEnd = t
		}
	case yes("is_recurring_charge"):
		n.Kind = KindRenewed
		n.OrderID = ""
	default:
		n.Kind = KindPaid
	}
	if n.Type == "" {
		n.Type = "sale"
	}
	n.EventID = "gumroad:" + string(n.Kind) + ":" + f.Get("sale_id") + ":" + f.Get("subscription_id")
	if n.Quantity < 1 {
		n.Quantity = 1
	}
	n.Currency = strings.ToUpper(n.Currency)
	if n.OrderID == "" && n.SubscriptionID == "" {
		return Notice{}, payloadErr("gumroad: no sale_id")
	}
	return n, nil
}

// refs keeps the ids given.
func refs(ids ...string) []string {
	var out []string
	for _, id := range ids {
		if id != "" {
			out = append(out, id)
		}
	}
	return out
}
