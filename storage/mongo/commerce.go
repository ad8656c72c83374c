package mongo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

var _ storage.CommerceStore = (*Store)(nil)

// Collections of the commerce records (issue 23).
const (
	collStoreConnections = "storeConnections"
	collStoreProducts    = "storeProducts"
	collStoreOrders      = "storeOrders"
	collStoreOrderEvents = "storeOrderEvents"
)

// commerceDoc is a commerce record as stored: the record whole as JSON (as in the SQLite
// engine) beside the keys its lookups and unique indexes need. k1/k2/k3 mean, per
// collection: connections k1 = receiver id; products k1 = connection, k2 = product and
// variant; orders k1 = connection, k2 = store order id, k3 = subscription id; events
// k1 = order ref.
type commerceDoc struct {
	ID      string    `bson:"_id"`
	Version int64     `bson:"version"` // see versioned
	AppID   string    `bson:"appId"`
	K1      string    `bson:"k1"`
	K2      string    `bson:"k2"`
	K3      string    `bson:"k3"`
	At      time.Time `bson:"at"`
	Doc     string    `bson:"doc"`
}

func (d commerceDoc) claimKey() (string, int64, string) { return d.ID, d.Version, d.AppID }

func newCommerceDoc(id, appID, k1, k2, k3 string, at time.Time, v any) (commerceDoc, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return commerceDoc{}, fmt.Errorf("encode: %w", err)
	}
	return commerceDoc{ID: id, Version: newVersion(), AppID: appID, K1: k1, K2: k2, K3: k3, At: storage.Truncate(at), Doc: string(b)}, nil
}

func decodeCommerce[T any](d commerceDoc) (T, error) {
	var v T
	if err := json.Unmarshal([]byte(d.Doc), &v); err != nil {
		return v, fmt.Errorf("decode: %w", err)
	}
	return v, nil
}

// commerceIndexes are created at Open with the others (createIndexes).
func (s *Store) commerceIndexes() []struct {
	coll   *mongo.Collection
	models []mongo.IndexModel
} {
	idx := func(name string, unique bool, keys ...string) mongo.IndexModel {
		d := bson.D{}
		for _, k := range keys {
			d = append(d, bson.E{Key: k, Value: 1})
		}
		return mongo.IndexModel{Keys: d, Options: options.Index().SetName(name).SetUnique(unique)}
	}
	db := s.db
	return []struct {
		coll   *mongo.Collection
		models []mongo.IndexModel
	}{
		{db.Collection(collStoreConnections), []mongo.IndexModel{idx("receiver", true, "k1"), idx("appId_at", false, "appId", "at")}},
		{db.Collection(collStoreProducts), []mongo.IndexModel{idx("connection_product", true, "k1", "k2")}},
		// One order per (connection, store order id): two deliveries of a sale insert one.
		{db.Collection(collStoreOrders), []mongo.IndexModel{idx("connection_order", true, "k1", "k2"),
			idx("connection_subscription", false, "k1", "k3"), idx("appId_at", false, "appId", "at")}},
		{db.Collection(collStoreOrderEvents), []mongo.IndexModel{idx("appId_order_at", false, "appId", "k1", "at")}},
	}
}

func (s *Store) storeConnections() *mongo.Collection { return s.db.Collection(collStoreConnections) }
func (s *Store) storeProducts() *mongo.Collection    { return s.db.Collection(collStoreProducts) }
func (s *Store) storeOrders() *mongo.Collection      { return s.db.Collection(collStoreOrders) }
func (s *Store) storeOrderEvents() *mongo.Collection { return s.db.Collection(collStoreOrderEvents) }

func (s *Store) connectionDoc(c storage.StoreConnection, version int64) (commerceDoc, error) {
	if err := storage.SealStoreConnection(s.sealer, &c); err != nil {
		return commerceDoc{}, err
	}
	d, err := newCommerceDoc(c.ID, c.AppID, c.ReceiverID, "", "", c.CreatedAt, c)
	if version != 0 {
		d.Version = version
	}
	return d, err
}

func (s *Store) openConnection(d commerceDoc, err error) (storage.StoreConnection, error) {
	if err != nil {
		return storage.StoreConnection{}, err
	}
	c, err := decodeCommerce[storage.StoreConnection](d)
	if err != nil {
		return c, err
	}
	return c, storage.OpenStoreConnection(s.sealer, &c)
}

func (s *Store) CreateStoreConnection(ctx context.Context, c storage.StoreConnection) error {
	c.CreatedAt, c.UpdatedAt = storage.Truncate(c.CreatedAt), storage.Truncate(c.UpdatedAt)
	d, err := s.connectionDoc(c, 0)
	if err != nil {
		return err
	}
	return s.insertOwned(ctx, "create store connection", s.storeConnections(), []any{d}, bson.D{{Key: "_id", Value: c.ID}}, s.appParents([]string{c.AppID}))
}

func (s *Store) GetStoreConnection(ctx context.Context, appID, id string) (storage.StoreConnection, error) {
	return s.openConnection(findDoc[commerceDoc](ctx, s.storeConnections(), "get store connection", byApp(appID, id)))
}

func (s *Store) GetStoreConnectionByReceiver(ctx context.Context, receiverID string) (storage.StoreConnection, error) {
	return s.openConnection(findDoc[commerceDoc](ctx, s.storeConnections(), "get store connection by receiver", bson.D{{Key: "k1", Value: receiverID}}))
}

// listCommerce answers every document of filter, sorted, decoded by open.
func listCommerce[T any](ctx context.Context, coll *mongo.Collection, op string, filter, sort bson.D, limit int64, open func(commerceDoc) (T, error)) ([]T, error) {
	opts := options.Find().SetSort(sort)
	if limit > 0 {
		opts.SetLimit(limit)
	}
	cur, err := coll.Find(ctx, filter, opts)
	if err != nil {
		return nil, wrap(op, err)
	}
	var docs []commerceDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, wrap(op, err)
	}
	out := make([]T, 0, len(docs))
	for _, d := range docs {
		v, err := open(d)
		if err != nil {
			return nil, fmt.Errorf("mongo: %s: %w", op, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func (s *Store) ListStoreConnections(ctx context.Context, appID string) ([]storage.StoreConnection, error) {
	return listCommerce(ctx, s.storeConnections(), "list store connections", bson.D{{Key: "appId", Value: appID}},
		bson.D{{Key: "at", Value: 1}, {Key: "_id", Value: 1}}, 0, func(d commerceDoc) (storage.StoreConnection, error) { return s.openConnection(d, nil) })
}

func (s *Store) UpdateStoreConnection(ctx context.Context, appID, id string, fn func(*storage.StoreConnection) error) (storage.StoreConnection, error) {
	var out storage.StoreConnection
	_, err := updateDoc(ctx, s, s.storeConnections(), "update store connection", byApp(appID, id), func(cur commerceDoc) (commerceDoc, error) {
		c, err := s.openConnection(cur, nil)
		if err != nil {
			return cur, err
		}
		next := c
		if err := fn(&next); err != nil {
			return cur, err
		}
		next.ID, next.AppID, next.ReceiverID, next.CreatedAt = c.ID, c.AppID, c.ReceiverID, c.CreatedAt
		next.UpdatedAt = storage.Truncate(next.UpdatedAt)
		out = next
		return s.connectionDoc(next, cur.Version+1)
	})
	return out, err
}

func (s *Store) DeleteStoreConnection(ctx context.Context, appID, id string) error {
	// deleteOne: its audit entry is staged and confirmed by the deletion.
	if err := deleteOne(ctx, s, s.storeConnections(), "delete store connection", byApp(appID, id)); err != nil {
		return err
	}
	if _, err := s.storeProducts().DeleteMany(ctx, bson.D{{Key: "appId", Value: appID}, {Key: "k1", Value: id}}); err != nil {
		return wrap("delete store connection: products", err)
	}
	return nil
}

func productKey(p storage.StoreProduct) string { return p.ProductID + "\x00" + p.VariantID }

func (s *Store) PutStoreProduct(ctx context.Context, p storage.StoreProduct) (storage.StoreProduct, error) {
	const op = "put store product"
	p.CreatedAt, p.UpdatedAt = storage.Truncate(p.CreatedAt), storage.Truncate(p.UpdatedAt)
	if _, err := s.GetStoreConnection(ctx, p.AppID, p.ConnectionID); err != nil {
		return p, err
	}
	for attempt := 0; attempt < 5; attempt++ {
		cur, err := findDoc[commerceDoc](ctx, s.storeProducts(), op, bson.D{{Key: "k1", Value: p.ConnectionID}, {Key: "k2", Value: productKey(p)}})
		switch {
		case errors.Is(err, storage.ErrNotFound):
			d, err := newCommerceDoc(p.ID, p.AppID, p.ConnectionID, productKey(p), "", p.CreatedAt, p)
			if err != nil {
				return p, err
			}
			err = s.insertOwned(ctx, op, s.storeProducts(), []any{d}, bson.D{{Key: "_id", Value: p.ID}}, s.appParents([]string{p.AppID}))
			if errors.Is(err, storage.ErrConflict) {
				continue // another writer inserted the same mapping: replace it
			}
			return p, err
		case err != nil:
			return p, err
		}
		p.ID, p.CreatedAt = cur.ID, fromDate(cur.At)
		_, err = updateDoc(ctx, s, s.storeProducts(), op, byApp(p.AppID, p.ID), func(c commerceDoc) (commerceDoc, error) {
			d, err := newCommerceDoc(p.ID, p.AppID, p.ConnectionID, productKey(p), "", p.CreatedAt, p)
			d.Version = c.Version + 1
			return d, err
		})
		return p, err
	}
	return p, wrap(op, storage.ErrConflict)
}

func (s *Store) ListStoreProducts(ctx context.Context, appID, connectionID string) ([]storage.StoreProduct, error) {
	return listCommerce(ctx, s.storeProducts(), "list store products", bson.D{{Key: "appId", Value: appID}, {Key: "k1", Value: connectionID}},
		bson.D{{Key: "k2", Value: 1}}, 0, decodeCommerce[storage.StoreProduct])
}

func (s *Store) DeleteStoreProduct(ctx context.Context, appID, id string) error {
	return deleteOne(ctx, s, s.storeProducts(), "delete store product", byApp(appID, id))
}

func orderDoc(o storage.Order) (commerceDoc, error) {
	return newCommerceDoc(o.ID, o.AppID, o.ConnectionID, o.OrderID, o.SubscriptionID, o.CreatedAt, o)
}

func (s *Store) CreateOrder(ctx context.Context, o storage.Order) error {
	o.CreatedAt, o.UpdatedAt, o.PeriodEnd = storage.Truncate(o.CreatedAt), storage.Truncate(o.UpdatedAt), storage.Truncate(o.PeriodEnd)
	d, err := orderDoc(o)
	if err != nil {
		return err
	}
	return s.insertOwned(ctx, "create order", s.storeOrders(), []any{d}, bson.D{{Key: "_id", Value: o.ID}}, s.appParents([]string{o.AppID}))
}

func (s *Store) openOrder(d commerceDoc, err error) (storage.Order, error) {
	if err != nil {
		return storage.Order{}, err
	}
	return decodeCommerce[storage.Order](d)
}

func (s *Store) GetOrder(ctx context.Context, appID, id string) (storage.Order, error) {
	return s.openOrder(findDoc[commerceDoc](ctx, s.storeOrders(), "get order", byApp(appID, id)))
}

func (s *Store) FindOrder(ctx context.Context, connectionID, orderID, subscriptionID string) (storage.Order, error) {
	switch {
	case orderID != "":
		return s.openOrder(findDoc[commerceDoc](ctx, s.storeOrders(), "find order", bson.D{{Key: "k1", Value: connectionID}, {Key: "k2", Value: orderID}}))
	case subscriptionID != "":
		out, err := listCommerce(ctx, s.storeOrders(), "find order", bson.D{{Key: "k1", Value: connectionID}, {Key: "k3", Value: subscriptionID}},
			bson.D{{Key: "at", Value: 1}}, 1, decodeCommerce[storage.Order])
		if err != nil {
			return storage.Order{}, err
		}
		if len(out) == 1 {
			return out[0], nil
		}
	}
	return storage.Order{}, wrap("find order", mongo.ErrNoDocuments)
}

func (s *Store) ListOrders(ctx context.Context, appID string, page storage.Page) ([]storage.Order, int, error) {
	page = page.Normalize()
	filter := bson.D{{Key: "appId", Value: appID}}
	total, err := s.storeOrders().CountDocuments(ctx, filter)
	if err != nil {
		return nil, 0, wrap("list orders: count", err)
	}
	cur, err := s.storeOrders().Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "at", Value: -1}, {Key: "_id", Value: 1}}).
		SetSkip(int64(page.Offset)).SetLimit(int64(page.Limit)))
	if err != nil {
		return nil, 0, wrap("list orders", err)
	}
	var docs []commerceDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, 0, wrap("list orders", err)
	}
	out := make([]storage.Order, 0, len(docs))
	for _, d := range docs {
		o, err := decodeCommerce[storage.Order](d)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, o)
	}
	return out, int(total), nil
}

func (s *Store) UpdateOrder(ctx context.Context, appID, id string, fn func(*storage.Order) error) (storage.Order, error) {
	var out storage.Order
	_, err := updateDoc(ctx, s, s.storeOrders(), "update order", byApp(appID, id), func(cur commerceDoc) (commerceDoc, error) {
		o, err := decodeCommerce[storage.Order](cur)
		if err != nil {
			return cur, err
		}
		next := o
		if err := fn(&next); err != nil {
			return cur, err
		}
		next.ID, next.AppID, next.ConnectionID, next.OrderID, next.CreatedAt = o.ID, o.AppID, o.ConnectionID, o.OrderID, o.CreatedAt
		next.UpdatedAt, next.PeriodEnd = storage.Truncate(next.UpdatedAt), storage.Truncate(next.PeriodEnd)
		out = next
		d, err := orderDoc(next)
		d.Version = cur.Version + 1
		return d, err
	})
	return out, err
}

func (s *Store) AddOrderEvent(ctx context.Context, e storage.OrderEvent) error {
	e.ReceivedAt = storage.Truncate(e.ReceivedAt)
	d, err := newCommerceDoc(e.ID, e.AppID, e.OrderRef, "", "", e.ReceivedAt, e)
	if err != nil {
		return err
	}
	return s.insertOwned(ctx, "add order event", s.storeOrderEvents(), []any{d}, bson.D{{Key: "_id", Value: e.ID}}, s.appParents([]string{e.AppID}))
}

func (s *Store) GetOrderEvent(ctx context.Context, appID, id string) (storage.OrderEvent, error) {
	d, err := findDoc[commerceDoc](ctx, s.storeOrderEvents(), "get order event", byApp(appID, id))
	if err != nil {
		return storage.OrderEvent{}, err
	}
	return decodeCommerce[storage.OrderEvent](d)
}

func (s *Store) SetOrderEventOutcome(ctx context.Context, appID, id, orderRef, outcome string) error {
	_, err := updateDoc(ctx, s, s.storeOrderEvents(), "set order event outcome", byApp(appID, id), func(cur commerceDoc) (commerceDoc, error) {
		e, err := decodeCommerce[storage.OrderEvent](cur)
		if err != nil {
			return cur, err
		}
		e.OrderRef, e.Outcome = orderRef, outcome
		d, err := newCommerceDoc(e.ID, e.AppID, e.OrderRef, "", "", e.ReceivedAt, e)
		d.Version = cur.Version + 1
		return d, err
	})
	return err
}

func (s *Store) ListOrderEvents(ctx context.Context, appID, orderRef string) ([]storage.OrderEvent, error) {
	sort, limit := bson.D{{Key: "at", Value: 1}, {Key: "_id", Value: 1}}, int64(0)
	if orderRef == "" {
		sort, limit = bson.D{{Key: "at", Value: -1}, {Key: "_id", Value: 1}}, 200
	}
	return listCommerce(ctx, s.storeOrderEvents(), "list order events", bson.D{{Key: "appId", Value: appID}, {Key: "k1", Value: orderRef}},
		sort, limit, decodeCommerce[storage.OrderEvent])
}
