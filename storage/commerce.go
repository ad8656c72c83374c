package storage

import (
	"context"
	"time"
)

// StoreConnection is an app's link to a store (issue 23): where the store's notifications
// arrive (ReceiverID, the unguessable last part of the receiver URL) and the secret they are
// signed with (sealed at rest).
type StoreConnection struct {
	ID    string
	AppID string
	// Provider is a core/commerce store name (stripe, paddle, …).
	Provider string
	Name     string
	// ReceiverID is unique over every app: the receiver URL names the connection alone.
	ReceiverID string `audit:"receiverId,secret"`
	// Secret is the store's signing secret, sealed by the engine (clear in memory).
	Secret string `audit:"secret,secret"`
	// RefundAction is what a refund or chargeback does to the order's keys: "ban" or "revoke".
	RefundAction string
	Enabled      bool
	// MailSubject and MailBody are the buyer's mail ("" = the default); {{keys}},
	// {{order}} and {{app}} are replaced.
	MailSubject string
	MailBody    string
	// Portal holds the switches of a connection of kind "portal", where the buyer portal's
	// settings lived before they moved to the app (App.Portal). Deprecated: kept readable
	// for one release so an upgrade can copy them (SQLite migration 34, MongoDB at Open).
	Portal    PortalSwitches
	CreatedAt time.Time `audit:"-"`
	UpdatedAt time.Time `audit:"-"`
}

// PortalSwitches turn the buyer portal's actions on or off per app (the license's status
// is shown whenever the portal is on): App.Portal.
type PortalSwitches struct {
	HWIDReset   bool `json:"hwidReset"`
	SeatRelease bool `json:"seatRelease"`
	Downloads   bool `json:"downloads"`
	Resend      bool `json:"resend"`
}

// StoreProduct maps a store's product (and variant or price, "" for any) to the licenses a
// paid order of it issues, one per unit bought.
type StoreProduct struct {
	ID           string
	AppID        string
	ConnectionID string
	ProductID    string
	VariantID    string
	Level        int
	// Duration is each key's access after activation in seconds (0 = no limit).
	Duration    int64
	MaxUses     int
	DeviceLimit int
	MaxSeats    int
	KeyPrefix   string
	// CreateUser makes a client user per key (username the key, for key-only sign-in), under
	// the plan's user limit.
	CreateUser bool
	// Variables are set on each issued license.
	Variables map[string]string
	CreatedAt time.Time `audit:"-"`
	UpdatedAt time.Time `audit:"-"`
}

// Order statuses.
const (
	OrderIssuing    = "issuing"
	OrderPaid       = "paid"
	OrderRefunded   = "refunded"
	OrderChargeback = "chargeback"
	OrderCanceled   = "canceled"
)

// Order is one sale of a connection, unique by (ConnectionID, OrderID).
type Order struct {
	// ID is derived from the connection and the store's order id (core/commerce).
	ID             string
	AppID          string
	ConnectionID   string
	OrderID        string
	SubscriptionID string
	// ProductRef is the StoreProduct that issued the keys.
	ProductRef string
	Status     string
	Email      string
	Quantity   int
	Amount     int64
	Currency   string
	LicenseIDs []string
	Keys       []string `audit:"keys,secret"`
	// PeriodEnd is when access ends after a cancellation (zero otherwise).
	PeriodEnd time.Time
	// PaidThrough is when the paid time of a subscription ends (zero: no end); renewals move it.
	PaidThrough time.Time
	// Applied are the ids of the renewals already applied (a repeated one changes nothing).
	Applied []string
	// Attempt counts takeovers of an issuing order left by a node that stopped.
	Attempt   int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// OrderEvent is a store notification as received, kept with its raw payload.
type OrderEvent struct {
	// ID is derived from the connection and the store's event id: a repeated delivery
	// has the same ID.
	ID           string
	AppID        string
	ConnectionID string
	// OrderRef is the Order's ID ("" when the notification named no known order).
	OrderRef   string
	EventID    string
	Type       string
	Kind       string
	Outcome    string
	Payload    []byte
	ReceivedAt time.Time
}

// CommerceStore persists store connections, product mappings, orders and their events.
type CommerceStore interface {
	// CreateStoreConnection inserts c: ErrConflict on a taken id or receiver id.
	CreateStoreConnection(ctx context.Context, c StoreConnection) error
	GetStoreConnection(ctx context.Context, appID, id string) (StoreConnection, error)
	GetStoreConnectionByReceiver(ctx context.Context, receiverID string) (StoreConnection, error)
	ListStoreConnections(ctx context.Context, appID string) ([]StoreConnection, error)
	// UpdateStoreConnection applies fn atomically (see UpdateAccount); id, app and receiver stay.
	UpdateStoreConnection(ctx context.Context, appID, id string, fn func(*StoreConnection) error) (StoreConnection, error)
	// DeleteStoreConnection removes the connection and its product mappings (orders stay).
	DeleteStoreConnection(ctx context.Context, appID, id string) error

	// PutStoreProduct inserts p, or replaces the mapping of the same (connection, product,
	// variant) keeping its id.
	PutStoreProduct(ctx context.Context, p StoreProduct) (StoreProduct, error)
	ListStoreProducts(ctx context.Context, appID, connectionID string) ([]StoreProduct, error)
	DeleteStoreProduct(ctx context.Context, appID, id string) error

	// CreateOrder inserts o: ErrConflict when its id or (connection, order id) exists.
	CreateOrder(ctx context.Context, o Order) error
	GetOrder(ctx context.Context, appID, id string) (Order, error)
	// FindOrder reads the connection's order by the store's order id, or by subscription
	// id when orderID is "": ErrNotFound when none.
	FindOrder(ctx context.Context, connectionID, orderID, subscriptionID string) (Order, error)
	ListOrders(ctx context.Context, appID string, page Page) ([]Order, int, error)
	// UpdateOrder applies fn atomically (compare-and-swap): id, app, connection and order
	// id stay.
	UpdateOrder(ctx context.Context, appID, id string, fn func(*Order) error) (Order, error)

	// AddOrderEvent inserts e: ErrConflict when its id exists (a repeated delivery).
	AddOrderEvent(ctx context.Context, e OrderEvent) error
	// GetOrderEvent reads one event of the app by its id (ErrNotFound when there is none):
	// core/commerce also keeps a store's payment ids as events pointing at their order.
	GetOrderEvent(ctx context.Context, appID, id string) (OrderEvent, error)
	// SetOrderEventOutcome records what came of e.
	SetOrderEventOutcome(ctx context.Context, appID, id, orderRef, outcome string) error
	// ListOrderEvents answers the order's events oldest first (orderRef "" = the app's
	// events no order took, newest 200).
	ListOrderEvents(ctx context.Context, appID, orderRef string) ([]OrderEvent, error)
}
