package httpapi

import (
	"encoding/base64"
	"io"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/analytics"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/commerce"
	"github.com/keyward/keyward/storage"
)

// storeHandlers serve the store receivers (public: the store calls them, the signature
// or the receiver path is the credential) and the owner's connections, product mappings
// and orders (issue 23).
type storeHandlers struct {
	svc     *commerce.Service
	owner   *commerce.Owner
	revenue *analytics.Service
	resets  commerce.HWIDResetter
}

// receiverPrefix is where the stores deliver; the connection's receiver id follows.
const receiverPrefix = "/api/stores/receive/"

// maxStoreBody bounds a store notification (Stripe's largest events are well under it).
const maxStoreBody = 512 << 10

var errStoresOff = core.E(core.CodeUnavailable, "store sales are not set up on this server")

func (h *storeHandlers) ready(c *gin.Context) bool {
	if h == nil || h.svc == nil {
		fail(c, errStoresOff)
		return false
	}
	return true
}

// receive takes one store delivery. Its answer's status is what the store acts on: 2xx
// done (repeats too), 401 a bad signature, 400 a payload nobody can read, 404 an unknown
// receiver, an unmapped product or an order not paid yet, 403 a plan limit, 503 our fault:
// a store retries the ones that can change by waiting (404, 403, 503).
func (h *storeHandlers) receive(c *gin.Context) {
	if !h.ready(c) {
		return
	}
	body, err := io.ReadAll(io.LimitReader(c.Request.Body, maxStoreBody+1))
	if err != nil {
		fail(c, err)
		return
	}
	if len(body) > maxStoreBody {
		fail(c, core.E(core.CodeTooLarge, "a store notification is at most %d bytes", maxStoreBody))
		return
	}
	res, err := h.svc.Receive(c.Request.Context(), c.Param("receiverId"), c.Request.Header, body)
	if err != nil {
		fail(c, err)
		return
	}
	if res.Provider == commerce.SellApp && res.Kind == commerce.KindPaid {
		// SellApp's dynamic delivery hands the reply body to the buyer as the product.
		c.Data(http.StatusOK, "text/plain; charset=utf-8", []byte(strings.Join(res.Keys, "\n")))
		return
	}
	ok(c, http.StatusOK, receiptView{Outcome: res.Outcome, Duplicate: res.Duplicate, OrderRef: res.Order.ID, Status: res.Order.Status})
}

type receiptView struct {
	Outcome   string `json:"outcome"`
	Duplicate bool   `json:"duplicate"`
	OrderRef  string `json:"orderRef,omitempty"`
	Status    string `json:"status,omitempty"`
}

type storeConnectionView struct {
	ID       string `json:"id"`
	AppID    string `json:"appId"`
	Provider string `json:"provider"`
	Name     string `json:"name"`
	// ReceiverPath is the path the store delivers to (put the server's public address
	// before it): the receiver id in it is a secret (for Gumroad the only one).
	ReceiverPath string `json:"receiverPath"`
	HasSecret    bool   `json:"hasSecret"`
	RefundAction string `json:"refundAction"`
	Enabled      bool   `json:"enabled"`
	MailSubject  string `json:"mailSubject"`
	MailBody     string `json:"mailBody"`
	// Portal is the switches of a connection of kind portal. Deprecated: the buyer portal's
	// settings are the app's (/api/apps/:appId/portal); shown for one release.
	Portal    storage.PortalSwitches `json:"portal"`
	CreatedAt *string                `json:"createdAt"`
	UpdatedAt *string                `json:"updatedAt"`
}

func storeConnectionOf(s storage.StoreConnection) storeConnectionView {
	path := receiverPrefix + s.ReceiverID
	if commerce.Provider(s.Provider) == commerce.PortalKind {
		path = portalPrefix + s.AppID // the buyers' address, not a receiver
	}
	return storeConnectionView{ID: s.ID, AppID: s.AppID, Provider: s.Provider, Name: s.Name, ReceiverPath: path,
		HasSecret: s.Secret != "", RefundAction: s.RefundAction, Enabled: s.Enabled, MailSubject: s.MailSubject, MailBody: s.MailBody,
		Portal: s.Portal, CreatedAt: stamp(s.CreatedAt), UpdatedAt: stamp(s.UpdatedAt)}
}

type storeProductView struct {
	ID           string            `json:"id"`
	ConnectionID string            `json:"connectionId"`
	ProductID    string            `json:"productId"`
	VariantID    string            `json:"variantId"`
	Level        int               `json:"level"`
	Duration     int64             `json:"duration"`
	MaxUses      int               `json:"maxUses"`
	DeviceLimit  int               `json:"deviceLimit"`
	MaxSeats     int               `json:"maxSeats"`
	KeyPrefix    string            `json:"keyPrefix"`
	CreateUser   bool              `json:"createUser"`
	Variables    map[string]string `json:"variables"`
}

func storeProductOf(p storage.StoreProduct) storeProductView {
	v := p.Variables
	if v == nil {
		v = map[string]string{}
	}
	return storeProductView{ID: p.ID, ConnectionID: p.ConnectionID, ProductID: p.ProductID, VariantID: p.VariantID, Level: p.Level,
		Duration: p.Duration, MaxUses: p.MaxUses, DeviceLimit: p.DeviceLimit, MaxSeats: p.MaxSeats, KeyPrefix: p.KeyPrefix,
		CreateUser: p.CreateUser, Variables: v}
}

type orderView struct {
	ID             string   `json:"id"`
	ConnectionID   string   `json:"connectionId"`
	OrderID        string   `json:"orderId"`
	SubscriptionID string   `json:"subscriptionId"`
	ProductRef     string   `json:"productRef"`
	Status         string   `json:"status"`
	Email          string   `json:"email"`
	Quantity       int      `json:"quantity"`
	Amount         int64    `json:"amount"`
	Currency       string   `json:"currency"`
	LicenseIDs     []string `json:"licenseIds"`
	Keys           []string `json:"keys"`
	PaidThrough    *string  `json:"paidThrough"`
	PeriodEnd      *string  `json:"periodEnd"`
	CreatedAt      *string  `json:"createdAt"`
	UpdatedAt      *string  `json:"updatedAt"`
}

func orderOf(o storage.Order) orderView {
	return orderView{ID: o.ID, ConnectionID: o.ConnectionID, OrderID: o.OrderID, SubscriptionID: o.SubscriptionID, ProductRef: o.ProductRef,
		Status: o.Status, Email: o.Email, Quantity: o.Quantity, Amount: o.Amount, Currency: o.Currency,
		LicenseIDs: nonNil(o.LicenseIDs), Keys: nonNil(o.Keys), PaidThrough: stamp(o.PaidThrough), PeriodEnd: stamp(o.PeriodEnd),
		CreatedAt: stamp(o.CreatedAt), UpdatedAt: stamp(o.UpdatedAt)}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

type orderEventView struct {
	ID      string `json:"id"`
	EventID string `json:"eventId"`
	Type    string `json:"type"`
	Kind    string `json:"kind"`
	Outcome string `json:"outcome"`
	// Payload is the raw body as received: text when it is UTF-8, else base64 with
	// PayloadBase64 set.
	Payload       string  `json:"payload"`
	PayloadBase64 bool    `json:"payloadBase64"`
	ReceivedAt    *string `json:"receivedAt"`
}

func orderEventOf(e storage.OrderEvent) orderEventView {
	v := orderEventView{ID: e.ID, EventID: e.EventID, Type: e.Type, Kind: e.Kind, Outcome: e.Outcome, Payload: string(e.Payload), ReceivedAt: stamp(e.ReceivedAt)}
	if !isUTF8(e.Payload) {
		v.Payload, v.PayloadBase64 = base64.StdEncoding.EncodeToString(e.Payload), true
	}
	return v
}

func isUTF8(b []byte) bool { return strings.ToValidUTF8(string(b), "\uFFFD") == string(b) }

type connectionBody struct {
	Provider     *string `json:"provider"`
	Name         *string `json:"name"`
	Secret       *string `json:"secret"`
	RefundAction *string `json:"refundAction"`
	Enabled      *bool   `json:"enabled"`
	MailSubject  *string `json:"mailSubject"`
	MailBody     *string `json:"mailBody"`
	// Portal is refused (400, pointing to /api/apps/:appId/portal): the buyer portal's
	// switches are the app's settings now.
	Portal *storage.PortalSwitches `json:"portal"`
}

func (b connectionBody) input() commerce.ConnectionInput {
	return commerce.ConnectionInput{Provider: b.Provider, Name: b.Name, Secret: b.Secret, RefundAction: b.RefundAction,
		Enabled: b.Enabled, MailSubject: b.MailSubject, MailBody: b.MailBody, Portal: b.Portal}
}

func (h *storeHandlers) listConnections(c *gin.Context) {
	if !h.ready(c) {
		return
	}
	list, err := h.owner.Connections(c.Request.Context(), ownerOf(c), c.Param("appId"))
	reply(c, http.StatusOK, mapSlice(list, storeConnectionOf), err)
}

func (h *storeHandlers) createConnection(c *gin.Context) {
	var in connectionBody
	if !h.ready(c) || !bind(c, &in) {
		return
	}
	s, err := h.owner.CreateConnection(c.Request.Context(), ownerOf(c), c.Param("appId"), in.input())
	reply(c, http.StatusCreated, storeConnectionOf(s), err)
}

func (h *storeHandlers) getConnection(c *gin.Context) {
	if !h.ready(c) {
		return
	}
	s, err := h.owner.Connection(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("storeId"))
	reply(c, http.StatusOK, storeConnectionOf(s), err)
}

func (h *storeHandlers) updateConnection(c *gin.Context) {
	var in connectionBody
	if !h.ready(c) || !bind(c, &in) {
		return
	}
	s, err := h.owner.UpdateConnection(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("storeId"), in.input())
	reply(c, http.StatusOK, storeConnectionOf(s), err)
}

func (h *storeHandlers) deleteConnection(c *gin.Context) {
	if !h.ready(c) {
		return
	}
	err := h.owner.DeleteConnection(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("storeId"))
	reply(c, http.StatusOK, gin.H{"message": "store connection deleted"}, err)
}

func (h *storeHandlers) listProducts(c *gin.Context) {
	if !h.ready(c) {
		return
	}
	list, err := h.owner.Products(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("storeId"))
	reply(c, http.StatusOK, mapSlice(list, storeProductOf), err)
}

func (h *storeHandlers) putProduct(c *gin.Context) {
	var in struct {
		ProductID   string            `json:"productId"`
		VariantID   string            `json:"variantId"`
		Level       *int              `json:"level"`
		Duration    *int64            `json:"duration"`
		MaxUses     *int              `json:"maxUses"`
		DeviceLimit *int              `json:"deviceLimit"`
		MaxSeats    *int              `json:"maxSeats"`
		KeyPrefix   string            `json:"keyPrefix"`
		CreateUser  bool              `json:"createUser"`
		Variables   map[string]string `json:"variables"`
	}
	if !h.ready(c) || !bind(c, &in) {
		return
	}
	p, err := h.owner.PutProduct(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("storeId"), commerce.ProductInput{
		ProductID: in.ProductID, VariantID: in.VariantID, Level: in.Level, Duration: in.Duration, MaxUses: in.MaxUses,
		DeviceLimit: in.DeviceLimit, MaxSeats: in.MaxSeats, KeyPrefix: in.KeyPrefix, CreateUser: in.CreateUser, Variables: in.Variables})
	reply(c, http.StatusOK, storeProductOf(p), err)
}

func (h *storeHandlers) deleteProduct(c *gin.Context) {
	if !h.ready(c) {
		return
	}
	err := h.owner.DeleteProduct(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("productId"))
	reply(c, http.StatusOK, gin.H{"message": "product mapping deleted"}, err)
}

func (h *storeHandlers) listOrders(c *gin.Context) {
	if !h.ready(c) {
		return
	}
	p, err := pageOf(c)
	if err != nil {
		fail(c, err)
		return
	}
	list, total, err := h.owner.Orders(c.Request.Context(), ownerOf(c), c.Param("appId"), p)
	p = p.Normalize()
	reply(c, http.StatusOK, gin.H{"orders": mapSlice(list, orderOf), "total": total, "limit": p.Limit, "offset": p.Offset}, err)
}

func (h *storeHandlers) getOrder(c *gin.Context) {
	if !h.ready(c) {
		return
	}
	o, evs, err := h.owner.Order(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("orderId"))
	var order any
	if o.ID != "" {
		order = orderOf(o)
	}
	reply(c, http.StatusOK, gin.H{"order": order, "events": mapSlice(evs, orderEventOf)}, err)
}

func (h *storeHandlers) resendOrder(c *gin.Context) {
	if !h.ready(c) {
		return
	}
	err := h.owner.ResendOrderKeys(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("orderId"))
	reply(c, http.StatusOK, gin.H{"message": "the keys were mailed to the buyer again"}, err)
}

func newStoreHandlers(svc *commerce.Service, a *apps.Service, revenue *analytics.Service) *storeHandlers {
	if svc == nil {
		return &storeHandlers{revenue: revenue}
	}
	return &storeHandlers{svc: svc, owner: svc.Owner(a), revenue: revenue, resets: a}
}

// discord answers a Discord interaction in Discord's own format (not the envelope: Discord
// reads it); refusals of the request itself (bad signature: 401, as Discord requires) get
// the envelope.
func (h *storeHandlers) discord(c *gin.Context) {
	if !h.ready(c) {
		return
	}
	body, err := io.ReadAll(io.LimitReader(c.Request.Body, maxStoreBody+1))
	if err != nil {
		fail(c, err)
		return
	}
	if len(body) > maxStoreBody {
		fail(c, core.E(core.CodeTooLarge, "an interaction is at most %d bytes", maxStoreBody))
		return
	}
	answer, err := h.svc.Interaction(c.Request.Context(), c.Param("receiverId"), c.Request.Header, body, h.resets)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, answer)
}

type revenueView struct {
	Day        string `json:"day"`
	ProductRef string `json:"productRef"`
	Currency   string `json:"currency"`
	Amount     int64  `json:"amount"`
	Orders     int    `json:"orders"`
	Renewals   int    `json:"renewals"`
	Refunds    int    `json:"refunds"`
}

// revenueOf answers the app's store revenue per day, product and currency (core/analytics).
func (h *storeHandlers) revenueOf(c *gin.Context) {
	rows, err := h.revenue.Revenue(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Query("days"))
	reply(c, http.StatusOK, mapSlice(rows, func(r analytics.RevenueRow) revenueView {
		return revenueView{Day: r.Day, ProductRef: r.ProductRef, Currency: r.Currency, Amount: r.Amount, Orders: r.Orders, Renewals: r.Renewals, Refunds: r.Refunds}
	}), err)
}
