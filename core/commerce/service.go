package commerce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/plans"
	"github.com/keyward/keyward/mail"
	"github.com/keyward/keyward/storage"
)

// Store is what the service needs from storage.
type Store interface {
	storage.CommerceStore
	storage.LicenseStore
	GetAppByID(ctx context.Context, id string) (storage.App, error)
	GetAccount(ctx context.Context, id string) (storage.Account, error)
	CreateUser(ctx context.Context, u storage.AppUser) error
	GetUserByUsername(ctx context.Context, appID, username string) (storage.AppUser, error)
	CountUsers(ctx context.Context, appID string) (int, error)
	UpdateUser(ctx context.Context, appID, id string, fn func(*storage.AppUser) error) (storage.AppUser, error)
	DeleteUser(ctx context.Context, appID, id string) error
	CreateVariables(ctx context.Context, vs []storage.Variable) error
}

// Mailer queues the buyer's mail (mail.Queue).
type Mailer interface{ Enqueue(m mail.Message) }

// Sockets tells a user's sockets to log out: the realtime service the owner's ban uses.
type Sockets interface {
	ForceLogout(ctx context.Context, appID, userID, reason string) (bool, error)
}

// Deps are the service's collaborators; Mail and Sockets may be nil.
type Deps struct {
	Store   Store
	Plans   *plans.Catalogue
	Bus     events.Publisher
	Mail    Mailer
	Sockets Sockets
	Now     func() time.Time
	Log     *slog.Logger
	// IssueWait is how long a duplicate delivery waits for the node issuing its order
	// (default 5 s); TakeoverAfter is how old an issuing order must be before another
	// delivery finishes it (default 30 s: its node stopped).
	IssueWait, TakeoverAfter time.Duration
}

// Service turns store notifications into licenses.
type Service struct{ d Deps }

// New builds the service.
func New(d Deps) *Service {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.IssueWait == 0 {
		d.IssueWait = 5 * time.Second
	}
	if d.TakeoverAfter == 0 {
		d.TakeoverAfter = 30 * time.Second
	}
	return &Service{d: d}
}

func (s *Service) now() time.Time { return storage.Truncate(s.d.Now()) }

// MaxQuantity bounds the keys one order issues.
const MaxQuantity = 100

// Refund actions.
const (
	RefundBan    = "ban"
	RefundRevoke = "revoke"
)

// Result is what a receiver answers the store.
type Result struct {
	Provider Provider
	Kind     Kind
	Outcome  string
	Order    storage.Order
	// Keys are the order's keys (SellApp's dynamic delivery answers them in the body).
	Keys []string
	// Duplicate: the delivery was seen before; nothing changed.
	Duplicate bool
}

// namespace derives record ids from store ids (uuid v5): the same sale, on any node and
// at any retry, names the same order and the same licenses.
var namespace = uuid.MustParse("6f1c4c84-3f3e-4bb0-9c43-5a1f0e8f8f23")

// OrderRecordID is the id of the connection's order of the store's order id.
func OrderRecordID(connectionID, orderID string) string {
	return uuid.NewSHA1(namespace, []byte("order\x00"+connectionID+"\x00"+orderID)).String()
}

func licenseID(orderRef string, i int) string {
	return uuid.NewSHA1(namespace, fmt.Appendf(nil, "license\x00%s\x00%d", orderRef, i)).String()
}

func eventRecordID(connectionID, eventID string) string {
	return uuid.NewSHA1(namespace, []byte("event\x00"+connectionID+"\x00"+eventID)).String()
}

// Receive handles one delivery to the receiver receiverID. Errors are core errors: an
// unknown receiver NOT_FOUND, a bad signature UNAUTHORIZED (nothing is stored), an
// unreadable payload VALIDATION_ERROR, an unmapped product or unknown order NOT_FOUND
// (the store retries: the owner may map it, or the order's paid event may be on its
// way), a plan limit PLAN_LIMIT, our own faults UNAVAILABLE or internal.
func (s *Service) Receive(ctx context.Context, receiverID string, header http.Header, body []byte) (Result, error) {
	conn, err := s.d.Store.GetStoreConnectionByReceiver(ctx, receiverID)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && (!conn.Enabled || !Provider(conn.Provider).Known())) {
		return Result{}, core.E(core.CodeNotFound, "no store connection receives here")
	} else if err != nil {
		return Result{}, fmt.Errorf("commerce: read connection: %w", err)
	}
	p := Provider(conn.Provider)
	if err := Verify(p, conn.Secret, header, body, s.d.Now()); err != nil {
		return Result{}, &core.Error{Code: core.CodeUnauthorized, Message: "the store signature does not verify: " + strings.TrimPrefix(err.Error(), "commerce: "), Cause: err}
	}
	n, err := Parse(p, header.Get("Content-Type"), body)
	if err != nil {
		if errors.Is(err, ErrPayload) {
			return Result{}, core.Invalid("body", "%s", strings.TrimPrefix(err.Error(), "commerce: "))
		}
		return Result{}, err
	}
	res := Result{Provider: p, Kind: n.Kind}
	if n.Kind == KindIgnored {
		res.Outcome = "ignored: " + n.Type + " changes no license"
		return res, nil
	}
	ev := storage.OrderEvent{ID: eventRecordID(conn.ID, n.EventID), AppID: conn.AppID, ConnectionID: conn.ID, EventID: n.EventID,
		Type: n.Type, Kind: string(n.Kind), Payload: body, ReceivedAt: s.now()}
	if err := s.d.Store.AddOrderEvent(ctx, ev); err != nil && !errors.Is(err, storage.ErrConflict) {
		return Result{}, fmt.Errorf("commerce: record event: %w", err)
	}
	// Every kind below is idempotent by the store's order and event ids, so a repeated
	// delivery runs again and changes nothing (and finishes what a stopped node left).
	switch n.Kind {
	case KindPaid:
		res, err = s.paid(ctx, conn, n)
	case KindLink:
		res, err = s.link(ctx, conn, n)
	case KindPayment:
		res, err = s.payment(ctx, conn, n)
	case KindRenewed:
		res, err = s.renewed(ctx, conn, n)
	case KindCanceled:
		res, err = s.canceled(ctx, conn, n)
	case KindRefunded, KindChargeback:
		res, err = s.refunded(ctx, conn, n)
	}
	if err == nil && res.Order.ID != "" && (n.Kind == KindPaid || n.Kind == KindRenewed) {
		err = s.linkPayment(ctx, conn, res.Order, n.PaymentRefs)
	}
	res.Provider, res.Kind = p, n.Kind
	outcome := res.Outcome
	if err != nil {
		outcome = "refused: " + err.Error()
	}
	if oerr := s.d.Store.SetOrderEventOutcome(ctx, conn.AppID, ev.ID, res.Order.ID, outcome); oerr != nil {
		s.d.Log.Warn("commerce: cannot record an event's outcome", "event", ev.ID, "err", oerr)
	}
	return res, err
}

// product finds the mapping of the notice's product: its variant's first, else the
// product's for any variant.
func (s *Service) product(ctx context.Context, conn storage.StoreConnection, n Notice) (storage.StoreProduct, error) {
	ps, err := s.d.Store.ListStoreProducts(ctx, conn.AppID, conn.ID)
	if err != nil {
		return storage.StoreProduct{}, fmt.Errorf("commerce: read products: %w", err)
	}
	var anyVariant *storage.StoreProduct
	for i, p := range ps {
		if p.ProductID != n.ProductID {
			continue
		}
		if p.VariantID != "" && p.VariantID == n.VariantID {
			return p, nil
		}
		if p.VariantID == "" {
			anyVariant = &ps[i]
		}
	}
	if anyVariant != nil {
		return *anyVariant, nil
	}
	return storage.StoreProduct{}, core.E(core.CodeNotFound, "store product %q (variant %q) is not mapped to a license template", n.ProductID, n.VariantID)
}

// plan answers the app's owner's plan.
func (s *Service) plan(ctx context.Context, appID string) (plans.Plan, error) {
	app, err := s.d.Store.GetAppByID(ctx, appID)
	if err != nil {
		return plans.Plan{}, fmt.Errorf("commerce: read app: %w", err)
	}
	acct, err := s.d.Store.GetAccount(ctx, app.AccountID)
	if err != nil {
		return plans.Plan{}, fmt.Errorf("commerce: read owner: %w", err)
	}
	p, ok := s.d.Plans.Get(acct.Plan)
	if !ok {
		return plans.Plan{}, fmt.Errorf("commerce: unknown plan %q", acct.Plan)
	}
	return p, nil
}

func (s *Service) paid(ctx context.Context, conn storage.StoreConnection, n Notice) (Result, error) {
	if n.OrderID == "" {
		return Result{}, core.Invalid("body", "a paid notification without an order id")
	}
	if n.Quantity > MaxQuantity {
		return Result{}, core.Invalid("quantity", "an order issues at most %d keys", MaxQuantity)
	}
	prod, err := s.product(ctx, conn, n)
	if err != nil {
		return Result{}, err
	}
	if prod.CreateUser {
		// Store-issued users count against the plan like any other (checked before the order
		// exists, so a refused sale leaves nothing behind and the store's retry tries again).
		pl, err := s.plan(ctx, conn.AppID)
		if err != nil {
			return Result{}, err
		}
		users, err := s.d.Store.CountUsers(ctx, conn.AppID)
		if err != nil {
			return Result{}, fmt.Errorf("commerce: count users: %w", err)
		}
		if limit := pl.Limits.MaxUsersPerApp; users+n.Quantity > limit {
			return Result{}, core.E(core.CodePlanLimit, "this order's %d user(s) would pass the plan's limit of %d users", n.Quantity, limit)
		}
	}
	now := s.now()
	o := storage.Order{ID: OrderRecordID(conn.ID, n.OrderID), AppID: conn.AppID, ConnectionID: conn.ID, OrderID: n.OrderID,
		SubscriptionID: n.SubscriptionID, ProductRef: prod.ID, Status: storage.OrderIssuing, Email: n.Email, Quantity: n.Quantity,
		Amount: n.Amount, Currency: n.Currency, CreatedAt: now, UpdatedAt: now}
	for i := range n.Quantity {
		o.LicenseIDs = append(o.LicenseIDs, licenseID(o.ID, i))
	}
	if prod.Duration > 0 {
		o.PaidThrough = now.Add(time.Duration(prod.Duration) * time.Second)
	}
	err = s.d.Store.CreateOrder(ctx, o)
	switch {
	case err == nil:
		return s.issue(ctx, conn, prod, o)
	case !errors.Is(err, storage.ErrConflict):
		return Result{}, fmt.Errorf("commerce: create order: %w", err)
	}
	// The order exists: a repeated delivery, or one racing on another node.
	deadline := time.Now().Add(s.d.IssueWait)
	for {
		cur, err := s.d.Store.GetOrder(ctx, conn.AppID, o.ID)
		if err != nil {
			return Result{}, fmt.Errorf("commerce: read order: %w", err)
		}
		if cur.Status != storage.OrderIssuing {
			return Result{Order: cur, Keys: cur.Keys, Duplicate: true, Outcome: "already " + cur.Status}, nil
		}
		if s.d.Now().Sub(cur.UpdatedAt) >= s.d.TakeoverAfter {
			// The issuing node stopped: take the order over (one taker wins the swap).
			taken, err := s.d.Store.UpdateOrder(ctx, conn.AppID, o.ID, func(x *storage.Order) error {
				if x.Status != storage.OrderIssuing || x.Attempt != cur.Attempt {
					return errTaken
				}
				x.Attempt++
				x.UpdatedAt = s.now()
				return nil
			})
			if err == nil {
				return s.issue(ctx, conn, prod, taken)
			} else if !errors.Is(err, errTaken) {
				return Result{}, fmt.Errorf("commerce: take over order: %w", err)
			}
		}
		if time.Now().After(deadline) {
			return Result{}, core.E(core.CodeUnavailable, "order %s is being issued; retry", n.OrderID)
		}
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

var errTaken = errors.New("commerce: the order moved on")

// issue creates the order's licenses (ids derived from the order: a takeover finds what
// the stopped node made), their variables and users, then moves the order to paid.
func (s *Service) issue(ctx context.Context, conn storage.StoreConnection, prod storage.StoreProduct, o storage.Order) (Result, error) {
	now := s.now()
	keys := make([]string, len(o.LicenseIDs))
	var missing []storage.License
	for i, id := range o.LicenseIDs {
		l, err := s.d.Store.GetLicense(ctx, o.AppID, id)
		switch {
		case err == nil:
			keys[i] = l.Key
			continue
		case !errors.Is(err, storage.ErrNotFound):
			return Result{}, fmt.Errorf("commerce: read license: %w", err)
		}
		l = storage.License{ID: id, AppID: o.AppID, Key: apps.NewLicenseKey(prod.KeyPrefix), Level: max(prod.Level, 1), MaxUses: prod.MaxUses,
			Duration: prod.Duration, DeviceLimit: max(prod.DeviceLimit, 1), MaxSeats: prod.MaxSeats, Enabled: true,
			Note: fmt.Sprintf("%s order %s", conn.Provider, o.OrderID), CreatedAt: now, UpdatedAt: now}
		keys[i] = l.Key
		missing = append(missing, l)
	}
	if err := s.d.Store.CreateLicenses(ctx, missing); err != nil {
		return Result{}, fmt.Errorf("commerce: create licenses: %w", err)
	}
	for i, id := range o.LicenseIDs {
		if len(prod.Variables) > 0 {
			var vs []storage.Variable
			for k, v := range prod.Variables {
				vs = append(vs, storage.Variable{ID: uuid.NewSHA1(namespace, []byte(id+"\x00var\x00"+k)).String(), AppID: o.AppID,
					Scope: storage.ScopeLicense, OwnerID: id, Key: k, Value: v, Type: "STRING", CreatedAt: now, UpdatedAt: now})
			}
			if err := s.d.Store.CreateVariables(ctx, vs); err != nil && !errors.Is(err, storage.ErrConflict) {
				return Result{}, fmt.Errorf("commerce: license variables: %w", err)
			}
		}
		if prod.CreateUser {
			u := storage.AppUser{ID: uuid.NewSHA1(namespace, []byte(id+"\x00user")).String(), AppID: o.AppID, Username: keys[i],
				Email: o.Email, Level: max(prod.Level, 1), DeviceLimit: max(prod.DeviceLimit, 1), LicenseID: id, Enabled: true,
				ExpiresAt: o.PaidThrough, CreatedAt: now, UpdatedAt: now}
			if err := s.d.Store.CreateUser(ctx, u); err != nil && !errors.Is(err, storage.ErrConflict) {
				return Result{}, fmt.Errorf("commerce: create user: %w", err)
			}
		}
	}
	// The event is written with the swap (events.Change): only the delivery that wins it
	// writes order.paid, and its id is derived from the order all the same.
	octx, ch := events.Begin(ctx, s.d.Bus)
	paid, err := s.d.Store.UpdateOrder(octx, o.AppID, o.ID, func(x *storage.Order) error {
		if x.Status != storage.OrderIssuing || x.Attempt != o.Attempt {
			ch.Set()
			return errTaken
		}
		x.Status, x.Keys, x.UpdatedAt = storage.OrderPaid, keys, s.now()
		ch.Set(s.orderEvent(*x, events.OrderPaid, "order paid: "+fmt.Sprint(len(keys))+" key(s) issued", map[string]any{"keys": len(keys)}))
		return nil
	})
	if errors.Is(err, errTaken) {
		cur, err := s.d.Store.GetOrder(ctx, o.AppID, o.ID)
		if err != nil {
			return Result{}, fmt.Errorf("commerce: read order: %w", err)
		}
		return Result{Order: cur, Keys: cur.Keys, Duplicate: true, Outcome: "issued by another delivery"}, nil
	} else if err != nil {
		return Result{}, fmt.Errorf("commerce: mark order paid: %w", err)
	}
	if err := ch.Commit(ctx); err != nil {
		return Result{}, err
	}
	s.mailKeys(ctx, conn, paid)
	return Result{Order: paid, Keys: keys, Outcome: fmt.Sprintf("issued %d key(s)", len(keys))}, nil
}

// orderEvent is an order event, written with the order's change (events.Change); its id
// is derived from the order, the name and the store event, so a repeated step writes the
// same event.
func (s *Service) orderEvent(o storage.Order, name events.Type, message string, data map[string]any) events.Event {
	d := map[string]any{"orderId": o.OrderID, "orderRef": o.ID, "connectionId": o.ConnectionID, "productRef": o.ProductRef,
		"amount": o.Amount, "currency": o.Currency, "quantity": o.Quantity, "licenseIds": o.LicenseIDs}
	for k, v := range data {
		d[k] = v
	}
	id := uuid.NewSHA1(namespace, []byte("event\x00"+o.ID+"\x00"+string(name)+"\x00"+fmt.Sprint(data["eventId"]))).String()
	return events.Event{ID: id, Name: name, AppID: o.AppID, Message: message, Data: d}
}

// DefaultMailSubject and DefaultMailBody are the buyer's mail when the connection has none.
const (
	DefaultMailSubject = "Your license key for {{app}}"
	DefaultMailBody    = "Thank you for your order {{order}}.\n\nYour license key(s):\n\n{{keys}}\n\nKeep this mail: the key is what signs you in.\n"
)

func (s *Service) mailKeys(ctx context.Context, conn storage.StoreConnection, o storage.Order) {
	if s.d.Mail == nil || o.Email == "" || len(o.Keys) == 0 {
		return
	}
	appName := o.AppID
	if app, err := s.d.Store.GetAppByID(ctx, o.AppID); err == nil {
		appName = app.Name
	}
	subject, body := cmpOr(conn.MailSubject, DefaultMailSubject), cmpOr(conn.MailBody, DefaultMailBody)
	r := strings.NewReplacer("{{keys}}", strings.Join(o.Keys, "\n"), "{{order}}", o.OrderID, "{{app}}", appName)
	s.d.Mail.Enqueue(mail.Message{To: o.Email, Subject: r.Replace(subject), Text: r.Replace(body)})
}

// ResendKeys mails the order's keys again.
func (s *Service) ResendKeys(ctx context.Context, o storage.Order) error {
	conn, err := s.d.Store.GetStoreConnection(ctx, o.AppID, o.ConnectionID)
	if err != nil {
		return fmt.Errorf("commerce: read connection: %w", err)
	}
	s.mailKeys(ctx, conn, o)
	return nil
}

func cmpOr(a, b string) string {
	if strings.TrimSpace(a) != "" {
		return a
	}
	return b
}

// findOrder reads the notice's order, by order id then subscription.
func (s *Service) findOrder(ctx context.Context, conn storage.StoreConnection, n Notice) (storage.Order, error) {
	var o storage.Order
	err := storage.ErrNotFound
	if n.OrderID != "" {
		o, err = s.d.Store.FindOrder(ctx, conn.ID, n.OrderID, "")
	}
	if errors.Is(err, storage.ErrNotFound) && n.SubscriptionID != "" {
		o, err = s.d.Store.FindOrder(ctx, conn.ID, "", n.SubscriptionID)
	}
	for _, ref := range n.PaymentRefs {
		if !errors.Is(err, storage.ErrNotFound) {
			break
		}
		// A payment of the order (a subscription's invoice): its id points at the order.
		var link storage.OrderEvent
		if link, err = s.d.Store.GetOrderEvent(ctx, conn.AppID, paymentRecordID(conn.ID, ref)); err == nil {
			o, err = s.d.Store.GetOrder(ctx, conn.AppID, link.OrderRef)
		}
	}
	if errors.Is(err, storage.ErrNotFound) {
		return o, core.E(core.CodeNotFound, "%s for an order this connection has not been paid for (order %q, subscription %q): nothing changed; the store may retry once the paid order has arrived",
			n.Type, n.OrderID, n.SubscriptionID)
	} else if err != nil {
		return o, fmt.Errorf("commerce: find order: %w", err)
	}
	if o.Status == storage.OrderIssuing {
		return o, core.E(core.CodeUnavailable, "order %s is being issued; retry", o.OrderID)
	}
	return o, nil
}

func paymentRecordID(connectionID, ref string) string {
	return uuid.NewSHA1(namespace, []byte("payment\x00"+connectionID+"\x00"+ref)).String()
}

// linkPayment keeps each of the payment's ids as an event of the order (one per id, made
// once), so that a refund or dispute naming only the payment finds the order.
func (s *Service) linkPayment(ctx context.Context, conn storage.StoreConnection, o storage.Order, refs []string) error {
	for _, ref := range refs {
		e := storage.OrderEvent{ID: paymentRecordID(conn.ID, ref), AppID: conn.AppID, ConnectionID: conn.ID, OrderRef: o.ID,
			EventID: "payment:" + ref, Type: "payment", Kind: string(KindPayment), Outcome: "payment " + ref + " of this order", ReceivedAt: s.now()}
		if err := s.d.Store.AddOrderEvent(ctx, e); err != nil && !errors.Is(err, storage.ErrConflict) {
			return fmt.Errorf("commerce: link payment: %w", err)
		}
	}
	return nil
}

// payment links a subscription's first invoice (its ids) to the order of the subscription.
func (s *Service) payment(ctx context.Context, conn storage.StoreConnection, n Notice) (Result, error) {
	o, err := s.findOrder(ctx, conn, Notice{Type: n.Type, SubscriptionID: n.SubscriptionID})
	if err != nil {
		return Result{}, err
	}
	if err := s.linkPayment(ctx, conn, o, n.PaymentRefs); err != nil {
		return Result{}, err
	}
	return Result{Order: o, Outcome: fmt.Sprintf("%d payment id(s) linked", len(n.PaymentRefs))}, nil
}

func (s *Service) link(ctx context.Context, conn storage.StoreConnection, n Notice) (Result, error) {
	o, err := s.findOrder(ctx, conn, Notice{Type: n.Type, OrderID: n.OrderID})
	if err != nil {
		return Result{}, err
	}
	o, err = s.d.Store.UpdateOrder(ctx, o.AppID, o.ID, func(x *storage.Order) error {
		x.SubscriptionID = n.SubscriptionID
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("commerce: link subscription: %w", err)
	}
	return Result{Order: o, Outcome: "subscription " + n.SubscriptionID + " linked"}, nil
}

// renewed moves the order's paid time on, once per renewal event, then sets each key's and
// its user's expiry to it (setting, not adding: a repeat changes nothing).
func (s *Service) renewed(ctx context.Context, conn storage.StoreConnection, n Notice) (Result, error) {
	o, err := s.findOrder(ctx, conn, n)
	if err != nil {
		return Result{}, err
	}
	if o.Status != storage.OrderPaid {
		return Result{Order: o, Outcome: "not renewed: the order is " + o.Status}, core.E(core.CodeConflict, "order %s is %s: a renewal does not bring it back", o.OrderID, o.Status)
	}
	var dur int64
	if prods, err := s.d.Store.ListStoreProducts(ctx, conn.AppID, conn.ID); err == nil {
		for _, p := range prods {
			if p.ID == o.ProductRef {
				dur = p.Duration
			}
		}
	}
	now := s.now()
	duplicate := false
	octx, ch := events.Begin(ctx, s.d.Bus)
	o, err = s.d.Store.UpdateOrder(octx, o.AppID, o.ID, func(x *storage.Order) error {
		if slices.Contains(x.Applied, n.EventID) {
			duplicate = true
			ch.Set()
			return nil
		}
		duplicate = false
		next := n.PeriodEnd
		if next.IsZero() {
			from := x.PaidThrough
			if from.Before(now) {
				from = now
			}
			next = from.Add(time.Duration(dur) * time.Second)
		}
		if next.After(x.PaidThrough) {
			x.PaidThrough = next
		}
		x.Applied = append(x.Applied, n.EventID)
		x.Amount += n.Amount
		x.UpdatedAt = now
		ch.Set(s.orderEvent(*x, events.OrderRenewed, "order renewed until "+x.PaidThrough.Format(time.RFC3339),
			map[string]any{"eventId": n.EventID, "paidThrough": x.PaidThrough, "renewalAmount": n.Amount}))
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("commerce: renew order: %w", err)
	}
	if err := ch.Commit(ctx); err != nil {
		return Result{}, err
	}
	if err := s.setExpiry(ctx, o, o.PaidThrough, false); err != nil {
		return Result{}, err
	}
	return Result{Order: o, Keys: o.Keys, Duplicate: duplicate, Outcome: "renewed until " + o.PaidThrough.Format(time.RFC3339)}, nil
}

// setExpiry sets the order's keys and their users to expire at t (onlyEarlier: a later
// expiry is brought in, an earlier one kept).
func (s *Service) setExpiry(ctx context.Context, o storage.Order, t time.Time, onlyEarlier bool) error {
	if t.IsZero() {
		return nil
	}
	for _, id := range o.LicenseIDs {
		l, err := s.d.Store.UpdateLicense(ctx, o.AppID, id, func(l *storage.License) error {
			if !onlyEarlier || l.ExpiresAt.IsZero() || l.ExpiresAt.After(t) {
				l.ExpiresAt = t
			}
			return nil
		})
		if errors.Is(err, storage.ErrNotFound) {
			continue // revoked
		} else if err != nil {
			return fmt.Errorf("commerce: license expiry: %w", err)
		}
		for _, name := range usersOf(l) {
			u, err := s.d.Store.GetUserByUsername(ctx, o.AppID, name)
			if errors.Is(err, storage.ErrNotFound) {
				continue
			} else if err != nil {
				return fmt.Errorf("commerce: read user: %w", err)
			}
			if _, err := s.d.Store.UpdateUser(ctx, o.AppID, u.ID, func(u *storage.AppUser) error {
				if !onlyEarlier || u.ExpiresAt.IsZero() || u.ExpiresAt.After(t) {
					u.ExpiresAt = t
				}
				return nil
			}); err != nil && !errors.Is(err, storage.ErrNotFound) {
				return fmt.Errorf("commerce: user expiry: %w", err)
			}
		}
	}
	return nil
}

// usersOf names the users a license reaches: the one that activated it, and the user named
// by the key (key-only sign-in, or a store-created user).
func usersOf(l storage.License) []string {
	out := []string{l.Key}
	if l.UsedBy != "" && l.UsedBy != l.Key {
		out = append(out, l.UsedBy)
	}
	return out
}

func (s *Service) canceled(ctx context.Context, conn storage.StoreConnection, n Notice) (Result, error) {
	o, err := s.findOrder(ctx, conn, n)
	if err != nil {
		return Result{}, err
	}
	if o.Status != storage.OrderPaid && o.Status != storage.OrderCanceled {
		return Result{Order: o, Duplicate: true, Outcome: "already " + o.Status}, nil
	}
	end := n.PeriodEnd
	if end.IsZero() {
		end = o.PaidThrough
	}
	if end.IsZero() {
		end = s.now()
	}
	first := false
	octx, ch := events.Begin(ctx, s.d.Bus)
	o, err = s.d.Store.UpdateOrder(octx, o.AppID, o.ID, func(x *storage.Order) error {
		first = x.Status == storage.OrderPaid
		x.Status, x.PeriodEnd, x.UpdatedAt = storage.OrderCanceled, end, s.now()
		if first {
			ch.Set(s.orderEvent(*x, events.OrderCanceled, "order canceled: keys expire at "+end.Format(time.RFC3339),
				map[string]any{"periodEnd": end}))
		} else {
			ch.Set()
		}
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("commerce: cancel order: %w", err)
	}
	if err := ch.Commit(ctx); err != nil {
		return Result{}, err
	}
	if err := s.setExpiry(ctx, o, end, true); err != nil {
		return Result{}, err
	}
	return Result{Order: o, Duplicate: !first, Outcome: "keys expire at " + end.Format(time.RFC3339)}, nil
}

// refunded bans or revokes (deletes) the order's keys, bans or expires their users, and
// tells those users' sockets to log out.
func (s *Service) refunded(ctx context.Context, conn storage.StoreConnection, n Notice) (Result, error) {
	o, err := s.findOrder(ctx, conn, n)
	if err != nil {
		return Result{}, err
	}
	status := storage.OrderRefunded
	if n.Kind == KindChargeback {
		status = storage.OrderChargeback
	}
	first := o.Status != storage.OrderRefunded && o.Status != storage.OrderChargeback
	revoke := conn.RefundAction == RefundRevoke
	reason := "order " + o.OrderID + " was " + status
	if first {
		// order.refunded is written with the order's move (events.Change); the keys are
		// banned or revoked after it, by every delivery until one finishes (idempotent).
		octx, ch := events.Begin(ctx, s.d.Bus)
		o, err = s.d.Store.UpdateOrder(octx, o.AppID, o.ID, func(x *storage.Order) error {
			if x.Status == storage.OrderRefunded || x.Status == storage.OrderChargeback {
				first = false
				ch.Set()
				return nil
			}
			first = true
			x.Status, x.UpdatedAt = status, s.now()
			ch.Set(s.orderEvent(*x, events.OrderRefunded, reason, map[string]any{"chargeback": n.Kind == KindChargeback,
				"action": cmpOr(conn.RefundAction, RefundBan), "refundAmount": n.Amount}))
			return nil
		})
		if err != nil {
			return Result{}, fmt.Errorf("commerce: refund order: %w", err)
		}
		if err := ch.Commit(ctx); err != nil {
			return Result{}, err
		}
	}
	var kicked []string
	for _, id := range o.LicenseIDs {
		l, err := s.d.Store.GetLicense(ctx, o.AppID, id)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		} else if err != nil {
			return Result{}, fmt.Errorf("commerce: read license: %w", err)
		}
		if revoke {
			err = s.d.Store.DeleteLicense(ctx, o.AppID, id)
		} else {
			_, err = s.d.Store.UpdateLicense(ctx, o.AppID, id, func(l *storage.License) error { l.Banned = true; return nil })
		}
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return Result{}, fmt.Errorf("commerce: refund license: %w", err)
		}
		for _, name := range usersOf(l) {
			u, err := s.d.Store.GetUserByUsername(ctx, o.AppID, name)
			if errors.Is(err, storage.ErrNotFound) {
				continue
			} else if err != nil {
				return Result{}, fmt.Errorf("commerce: read user: %w", err)
			}
			now := s.now()
			if _, err := s.d.Store.UpdateUser(ctx, o.AppID, u.ID, func(u *storage.AppUser) error {
				if revoke {
					u.ExpiresAt, u.LicenseID = now, ""
				} else {
					u.Banned, u.BanReason = true, reason
				}
				return nil
			}); err != nil && !errors.Is(err, storage.ErrNotFound) {
				return Result{}, fmt.Errorf("commerce: refund user: %w", err)
			}
			kicked = append(kicked, u.ID)
		}
	}
	for _, uid := range kicked {
		if s.d.Sockets == nil {
			break
		}
		if _, err := s.d.Sockets.ForceLogout(ctx, o.AppID, uid, reason); err != nil {
			s.d.Log.Warn("commerce: cannot log a refunded user's sockets out", "user", uid, "err", err)
		}
	}
	verb := "banned"
	if revoke {
		verb = "revoked"
	}
	return Result{Order: o, Duplicate: !first, Outcome: fmt.Sprintf("%s: keys %s, %d user(s) logged out", status, verb, len(kicked))}, nil
}
