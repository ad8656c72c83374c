package commerce

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/storage"
)

// AppAccess checks that the caller owns the app (apps.Service).
type AppAccess interface {
	GetApp(ctx context.Context, o apps.Owner, appID string) (storage.App, error)
}

// Owner is the owner-facing side: connections, product mappings, orders. Every call checks
// the app is the caller's first.
type Owner struct {
	s      *Service
	access AppAccess
}

// Owner answers the owner-facing side of s.
func (s *Service) Owner(access AppAccess) *Owner { return &Owner{s: s, access: access} }

// Limits of the owner's inputs.
const (
	maxName      = 64
	maxSecret    = 512
	maxMailBody  = 4000
	maxStoreID   = 128
	maxVariables = 20
)

var prefixPattern = regexp.MustCompile(`^[A-Za-z0-9]{0,16}$`)

// ConnectionInput creates or changes a connection; nil members stay as they are.
type ConnectionInput struct {
	Provider     *string
	Name         *string
	Secret       *string
	RefundAction *string
	Enabled      *bool
	MailSubject  *string
	MailBody     *string
	// Portal was the buyer portal's switches on a connection of kind portal; they are the
	// app's settings now, so a value is refused with a pointer to where they went.
	Portal *storage.PortalSwitches
}

// errPortalMoved answers the deprecated ways to set up the buyer portal on a connection.
var errPortalMoved = core.Invalid("portal", "the buyer portal is no longer a store connection: it is a setting of the app (PATCH /api/apps/:appId/portal)")

func validText(field string, v *string, limit int) error {
	if v != nil && len(*v) > limit {
		return core.Invalid(field, "%s must be at most %d characters", field, limit)
	}
	return nil
}

func (in ConnectionInput) validate() error {
	if in.Portal != nil || (in.Provider != nil && Provider(*in.Provider) == PortalKind) {
		return errPortalMoved
	}
	if in.Provider != nil && !Provider(*in.Provider).Known() && Provider(*in.Provider) != Discord {
		return core.Invalid("provider", "provider must be one of %v or discord", Providers())
	}
	if in.RefundAction != nil && *in.RefundAction != RefundBan && *in.RefundAction != RefundRevoke {
		return core.Invalid("refundAction", "refundAction must be ban or revoke")
	}
	return core.FirstError(validText("name", in.Name, maxName), validText("secret", in.Secret, maxSecret),
		validText("mailSubject", in.MailSubject, 200), validText("mailBody", in.MailBody, maxMailBody))
}

// CreateConnection makes a connection with a new receiver id.
func (w *Owner) CreateConnection(ctx context.Context, o apps.Owner, appID string, in ConnectionInput) (storage.StoreConnection, error) {
	if _, err := w.access.GetApp(ctx, o, appID); err != nil {
		return storage.StoreConnection{}, err
	}
	if in.Provider == nil {
		return storage.StoreConnection{}, core.Invalid("provider", "provider is required")
	}
	if err := in.validate(); err != nil {
		return storage.StoreConnection{}, err
	}
	p := Provider(*in.Provider)
	if p == Discord {
		if in.Secret == nil {
			return storage.StoreConnection{}, core.Invalid("secret", "secret (the Discord application's public key, hex) is required")
		}
		if b, err := hex.DecodeString(strings.TrimSpace(*in.Secret)); err != nil || len(b) != ed25519.PublicKeySize {
			return storage.StoreConnection{}, core.Invalid("secret", "a Discord public key is 64 hex digits")
		}
	}
	if p != Gumroad && (in.Secret == nil || strings.TrimSpace(*in.Secret) == "") {
		return storage.StoreConnection{}, core.Invalid("secret", "secret (the store's signing secret) is required for %s", p)
	}
	now := w.s.now()
	c := storage.StoreConnection{ID: uuid.NewString(), AppID: appID, Provider: string(p), Name: string(p),
		ReceiverID: secrets.Random(24), RefundAction: RefundBan, Enabled: true, CreatedAt: now, UpdatedAt: now}
	apply(&c, in)
	// The creation's write carries its audit entry (secrets redacted): audit.Own.
	audit.Created(ctx, c)
	if err := w.s.d.Store.CreateStoreConnection(audit.Own(ctx), c); err != nil {
		return c, fmt.Errorf("commerce: create connection: %w", err)
	}
	return c, nil
}

func apply(c *storage.StoreConnection, in ConnectionInput) {
	core.Set(&c.Name, in.Name)
	core.Set(&c.Secret, in.Secret)
	core.Set(&c.RefundAction, in.RefundAction)
	core.Set(&c.Enabled, in.Enabled)
	core.Set(&c.MailSubject, in.MailSubject)
	core.Set(&c.MailBody, in.MailBody)
}

func notFound(err error, what string) error {
	if errors.Is(err, storage.ErrNotFound) {
		return core.E(core.CodeNotFound, "%s not found", what)
	}
	return err
}

// Connections lists the app's connections.
func (w *Owner) Connections(ctx context.Context, o apps.Owner, appID string) ([]storage.StoreConnection, error) {
	if _, err := w.access.GetApp(ctx, o, appID); err != nil {
		return nil, err
	}
	return w.s.d.Store.ListStoreConnections(ctx, appID)
}

// Connection reads one connection.
func (w *Owner) Connection(ctx context.Context, o apps.Owner, appID, id string) (storage.StoreConnection, error) {
	if _, err := w.access.GetApp(ctx, o, appID); err != nil {
		return storage.StoreConnection{}, err
	}
	c, err := w.s.d.Store.GetStoreConnection(ctx, appID, id)
	return c, notFound(err, "store connection")
}

// UpdateConnection changes a connection (the provider and receiver stay).
func (w *Owner) UpdateConnection(ctx context.Context, o apps.Owner, appID, id string, in ConnectionInput) (storage.StoreConnection, error) {
	if _, err := w.access.GetApp(ctx, o, appID); err != nil {
		return storage.StoreConnection{}, err
	}
	if in.Provider != nil {
		return storage.StoreConnection{}, core.Invalid("provider", "a connection's provider cannot change: make a new connection")
	}
	if err := in.validate(); err != nil {
		return storage.StoreConnection{}, err
	}
	c, err := w.s.d.Store.UpdateStoreConnection(audit.Own(ctx), appID, id, audit.Track(ctx, func(c *storage.StoreConnection) error {
		apply(c, in)
		c.UpdatedAt = w.s.now()
		return nil
	}))
	return c, notFound(err, "store connection")
}

// DeleteConnection removes a connection and its mappings; its orders stay.
func (w *Owner) DeleteConnection(ctx context.Context, o apps.Owner, appID, id string) error {
	if _, err := w.access.GetApp(ctx, o, appID); err != nil {
		return err
	}
	return notFound(w.s.d.Store.DeleteStoreConnection(audit.Own(ctx), appID, id), "store connection")
}

// ProductInput maps a store product to a license template.
type ProductInput struct {
	ProductID   string
	VariantID   string
	Level       *int
	Duration    *int64
	MaxUses     *int
	DeviceLimit *int
	MaxSeats    *int
	KeyPrefix   string
	CreateUser  bool
	Variables   map[string]string
}

func intIn(field string, v *int, lo, hi int) error {
	if v != nil && (*v < lo || *v > hi) {
		return core.Invalid(field, "%s must be between %d and %d", field, lo, hi)
	}
	return nil
}

// PutProduct creates or replaces the mapping of (product, variant).
func (w *Owner) PutProduct(ctx context.Context, o apps.Owner, appID, connectionID string, in ProductInput) (storage.StoreProduct, error) {
	if _, err := w.access.GetApp(ctx, o, appID); err != nil {
		return storage.StoreProduct{}, err
	}
	if strings.TrimSpace(in.ProductID) == "" {
		return storage.StoreProduct{}, core.Invalid("productId", "productId is required")
	}
	var dur error
	if in.Duration != nil && (*in.Duration < 0 || *in.Duration > 100*365*86400) {
		dur = core.Invalid("duration", "duration must be between 0 and 100 years in seconds")
	}
	if err := core.FirstError(validText("productId", &in.ProductID, maxStoreID), validText("variantId", &in.VariantID, maxStoreID),
		intIn("level", in.Level, 1, 1000), intIn("maxUses", in.MaxUses, 0, 1_000_000), intIn("deviceLimit", in.DeviceLimit, 1, 1000),
		intIn("maxSeats", in.MaxSeats, 0, 10_000), dur); err != nil {
		return storage.StoreProduct{}, err
	}
	if !prefixPattern.MatchString(in.KeyPrefix) {
		return storage.StoreProduct{}, core.Invalid("keyPrefix", "keyPrefix must be at most 16 letters or digits")
	}
	if len(in.Variables) > maxVariables {
		return storage.StoreProduct{}, core.Invalid("variables", "at most %d variables", maxVariables)
	}
	for k, v := range in.Variables {
		if k == "" || len(k) > 64 || len(v) > 1000 {
			return storage.StoreProduct{}, core.Invalid("variables", "a variable's key is 1 to 64 characters and its value at most 1000")
		}
	}
	now := w.s.now()
	p := storage.StoreProduct{ID: uuid.NewString(), AppID: appID, ConnectionID: connectionID, ProductID: in.ProductID, VariantID: in.VariantID,
		Level: 1, DeviceLimit: 1, KeyPrefix: in.KeyPrefix, CreateUser: in.CreateUser, Variables: in.Variables, CreatedAt: now, UpdatedAt: now}
	core.Set(&p.Level, in.Level)
	core.Set(&p.Duration, in.Duration)
	core.Set(&p.MaxUses, in.MaxUses)
	core.Set(&p.DeviceLimit, in.DeviceLimit)
	core.Set(&p.MaxSeats, in.MaxSeats)
	out, err := w.s.d.Store.PutStoreProduct(audit.Own(ctx), p)
	return out, notFound(err, "store connection")
}

// Products lists a connection's mappings.
func (w *Owner) Products(ctx context.Context, o apps.Owner, appID, connectionID string) ([]storage.StoreProduct, error) {
	if _, err := w.access.GetApp(ctx, o, appID); err != nil {
		return nil, err
	}
	return w.s.d.Store.ListStoreProducts(ctx, appID, connectionID)
}

// DeleteProduct removes a mapping.
func (w *Owner) DeleteProduct(ctx context.Context, o apps.Owner, appID, id string) error {
	if _, err := w.access.GetApp(ctx, o, appID); err != nil {
		return err
	}
	return notFound(w.s.d.Store.DeleteStoreProduct(audit.Own(ctx), appID, id), "product mapping")
}

// Orders lists the app's orders, newest first.
func (w *Owner) Orders(ctx context.Context, o apps.Owner, appID string, page storage.Page) ([]storage.Order, int, error) {
	if _, err := w.access.GetApp(ctx, o, appID); err != nil {
		return nil, 0, err
	}
	return w.s.d.Store.ListOrders(ctx, appID, page)
}

// Order reads an order with its events and their raw payloads (orderRef "unmatched": the
// events no order took).
func (w *Owner) Order(ctx context.Context, o apps.Owner, appID, id string) (storage.Order, []storage.OrderEvent, error) {
	if _, err := w.access.GetApp(ctx, o, appID); err != nil {
		return storage.Order{}, nil, err
	}
	if id == "unmatched" {
		evs, err := w.s.d.Store.ListOrderEvents(ctx, appID, "")
		return storage.Order{}, evs, err
	}
	ord, err := w.s.d.Store.GetOrder(ctx, appID, id)
	if err != nil {
		return ord, nil, notFound(err, "order")
	}
	evs, err := w.s.d.Store.ListOrderEvents(ctx, appID, id)
	return ord, evs, err
}

// ResendOrderKeys mails the order's keys to its buyer again.
func (w *Owner) ResendOrderKeys(ctx context.Context, o apps.Owner, appID, id string) error {
	if _, err := w.access.GetApp(ctx, o, appID); err != nil {
		return err
	}
	ord, err := w.s.d.Store.GetOrder(ctx, appID, id)
	if err != nil {
		return notFound(err, "order")
	}
	if ord.Email == "" || len(ord.Keys) == 0 {
		return core.E(core.CodeConflict, "this order has no buyer email or no keys")
	}
	return w.s.ResendKeys(ctx, ord)
}
