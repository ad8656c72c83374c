package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/keyward/keyward/storage"
)

var _ storage.CommerceStore = (*Store)(nil)

// Commerce records are stored whole as JSON in a doc column (migration 30).

func encodeDoc(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode: %w", err)
	}
	return string(b), nil
}

func scanDoc[T any](row scanner) (T, error) {
	var raw string
	var v T
	if err := row.Scan(&raw); err != nil {
		return v, err
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return v, fmt.Errorf("decode: %w", err)
	}
	return v, nil
}

// connectionDoc is the stored form: the secret sealed.
func (s *Store) connectionDoc(c storage.StoreConnection) (string, error) {
	if err := storage.SealStoreConnection(s.sealer, &c); err != nil {
		return "", err
	}
	return encodeDoc(c)
}

func (s *Store) scanConnection(row scanner) (storage.StoreConnection, error) {
	c, err := scanDoc[storage.StoreConnection](row)
	if err != nil {
		return c, err
	}
	return c, storage.OpenStoreConnection(s.sealer, &c)
}

func (s *Store) CreateStoreConnection(ctx context.Context, c storage.StoreConnection) error {
	c.CreatedAt, c.UpdatedAt = storage.Truncate(c.CreatedAt), storage.Truncate(c.UpdatedAt)
	d, err := s.connectionDoc(c)
	if err != nil {
		return err
	}
	return s.insertAll(ctx, "create store connection", `INSERT INTO store_connections (id, app_id, receiver_id, created_at, doc)
VALUES (?, ?, ?, ?, ?)`, [][]any{{c.ID, c.AppID, c.ReceiverID, toMillis(c.CreatedAt), d}})
}

func (s *Store) GetStoreConnection(ctx context.Context, appID, id string) (storage.StoreConnection, error) {
	c, err := s.scanConnection(s.r.QueryRowContext(ctx, `SELECT doc FROM store_connections WHERE app_id = ? AND id = ?`, appID, id))
	if err != nil {
		return c, wrap("get store connection", err)
	}
	return c, nil
}

func (s *Store) GetStoreConnectionByReceiver(ctx context.Context, receiverID string) (storage.StoreConnection, error) {
	c, err := s.scanConnection(s.r.QueryRowContext(ctx, `SELECT doc FROM store_connections WHERE receiver_id = ?`, receiverID))
	if err != nil {
		return c, wrap("get store connection by receiver", err)
	}
	return c, nil
}

func (s *Store) ListStoreConnections(ctx context.Context, appID string) ([]storage.StoreConnection, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT doc FROM store_connections WHERE app_id = ? ORDER BY created_at, id`, appID)
	if err != nil {
		return nil, wrap("list store connections", err)
	}
	out, err := scanAll(rows, s.scanConnection)
	return out, wrapIf("list store connections", err)
}

func (s *Store) UpdateStoreConnection(ctx context.Context, appID, id string, fn func(*storage.StoreConnection) error) (storage.StoreConnection, error) {
	return updateRecord(ctx, s, "update store connection",
		func(tx *sql.Tx) (storage.StoreConnection, error) {
			return s.scanConnection(tx.QueryRowContext(ctx, `SELECT doc FROM store_connections WHERE app_id = ? AND id = ?`, appID, id))
		}, fn,
		func(cur storage.StoreConnection, next *storage.StoreConnection) {
			next.ID, next.AppID, next.ReceiverID, next.CreatedAt = cur.ID, cur.AppID, cur.ReceiverID, cur.CreatedAt
			next.UpdatedAt = storage.Truncate(next.UpdatedAt)
		},
		func(tx *sql.Tx, next storage.StoreConnection) error {
			d, err := s.connectionDoc(next)
			if err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `UPDATE store_connections SET doc = ? WHERE id = ?`, d, next.ID)
			return err
		})
}

func (s *Store) DeleteStoreConnection(ctx context.Context, appID, id string) error {
	return s.deleteOne(ctx, "delete store connection", `DELETE FROM store_connections WHERE app_id = ? AND id = ?`, appID, id)
}

func (s *Store) PutStoreProduct(ctx context.Context, p storage.StoreProduct) (storage.StoreProduct, error) {
	p.CreatedAt, p.UpdatedAt = storage.Truncate(p.CreatedAt), storage.Truncate(p.UpdatedAt)
	err := s.inWriteTx(ctx, "put store product", func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM store_connections WHERE app_id = ? AND id = ?`, p.AppID, p.ConnectionID).Scan(&n); err != nil {
			return wrap("put store product", err)
		}
		if n == 0 {
			return wrap("put store product: connection", sql.ErrNoRows)
		}
		cur, err := scanDoc[storage.StoreProduct](tx.QueryRowContext(ctx, `SELECT doc FROM store_products
WHERE connection_id = ? AND product_id = ? AND variant_id = ?`, p.ConnectionID, p.ProductID, p.VariantID))
		switch {
		case err == nil:
			p.ID, p.CreatedAt = cur.ID, cur.CreatedAt
		case err != sql.ErrNoRows:
			return wrap("put store product", err)
		}
		d, err := encodeDoc(p)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO store_products (id, app_id, connection_id, product_id, variant_id, doc)
VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET doc = excluded.doc`, p.ID, p.AppID, p.ConnectionID, p.ProductID, p.VariantID, d)
		return wrapIf("put store product", err)
	})
	return p, err
}

func (s *Store) ListStoreProducts(ctx context.Context, appID, connectionID string) ([]storage.StoreProduct, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT doc FROM store_products WHERE app_id = ? AND connection_id = ?
ORDER BY product_id, variant_id`, appID, connectionID)
	if err != nil {
		return nil, wrap("list store products", err)
	}
	out, err := scanAll(rows, scanDoc[storage.StoreProduct])
	return out, wrapIf("list store products", err)
}

func (s *Store) DeleteStoreProduct(ctx context.Context, appID, id string) error {
	return s.deleteOne(ctx, "delete store product", `DELETE FROM store_products WHERE app_id = ? AND id = ?`, appID, id)
}

func orderArgs(o storage.Order) (string, error) { return encodeDoc(o) }

func (s *Store) CreateOrder(ctx context.Context, o storage.Order) error {
	o.CreatedAt, o.UpdatedAt, o.PeriodEnd = storage.Truncate(o.CreatedAt), storage.Truncate(o.UpdatedAt), storage.Truncate(o.PeriodEnd)
	d, err := orderArgs(o)
	if err != nil {
		return err
	}
	return s.insertAll(ctx, "create order", `INSERT INTO store_orders (id, app_id, connection_id, order_id, subscription_id, created_at, doc)
VALUES (?, ?, ?, ?, ?, ?, ?)`, [][]any{{o.ID, o.AppID, o.ConnectionID, o.OrderID, o.SubscriptionID, toMillis(o.CreatedAt), d}})
}

func (s *Store) GetOrder(ctx context.Context, appID, id string) (storage.Order, error) {
	o, err := scanDoc[storage.Order](s.r.QueryRowContext(ctx, `SELECT doc FROM store_orders WHERE app_id = ? AND id = ?`, appID, id))
	if err != nil {
		return o, wrap("get order", err)
	}
	return o, nil
}

func (s *Store) FindOrder(ctx context.Context, connectionID, orderID, subscriptionID string) (storage.Order, error) {
	var row *sql.Row
	switch {
	case orderID != "":
		row = s.r.QueryRowContext(ctx, `SELECT doc FROM store_orders WHERE connection_id = ? AND order_id = ?`, connectionID, orderID)
	case subscriptionID != "":
		row = s.r.QueryRowContext(ctx, `SELECT doc FROM store_orders WHERE connection_id = ? AND subscription_id = ?
ORDER BY created_at LIMIT 1`, connectionID, subscriptionID)
	default:
		return storage.Order{}, wrap("find order", sql.ErrNoRows)
	}
	o, err := scanDoc[storage.Order](row)
	if err != nil {
		return o, wrap("find order", err)
	}
	return o, nil
}

func (s *Store) ListOrders(ctx context.Context, appID string, page storage.Page) ([]storage.Order, int, error) {
	page = page.Normalize()
	total, err := s.countWhere(ctx, "list orders", "store_orders", "app_id = ?", appID)
	if err != nil {
		return nil, 0, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT doc FROM store_orders WHERE app_id = ? ORDER BY created_at DESC, id
LIMIT ? OFFSET ?`, appID, page.Limit, page.Offset)
	if err != nil {
		return nil, 0, wrap("list orders", err)
	}
	out, err := scanAll(rows, scanDoc[storage.Order])
	return out, total, wrapIf("list orders", err)
}

func (s *Store) UpdateOrder(ctx context.Context, appID, id string, fn func(*storage.Order) error) (storage.Order, error) {
	return updateRecord(ctx, s, "update order",
		func(tx *sql.Tx) (storage.Order, error) {
			return scanDoc[storage.Order](tx.QueryRowContext(ctx, `SELECT doc FROM store_orders WHERE app_id = ? AND id = ?`, appID, id))
		}, fn,
		func(cur storage.Order, next *storage.Order) {
			next.ID, next.AppID, next.ConnectionID, next.OrderID, next.CreatedAt = cur.ID, cur.AppID, cur.ConnectionID, cur.OrderID, cur.CreatedAt
			next.UpdatedAt, next.PeriodEnd = storage.Truncate(next.UpdatedAt), storage.Truncate(next.PeriodEnd)
		},
		func(tx *sql.Tx, next storage.Order) error {
			d, err := orderArgs(next)
			if err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `UPDATE store_orders SET subscription_id = ?, doc = ? WHERE id = ?`, next.SubscriptionID, d, next.ID)
			return err
		})
}

func (s *Store) AddOrderEvent(ctx context.Context, e storage.OrderEvent) error {
	e.ReceivedAt = storage.Truncate(e.ReceivedAt)
	d, err := encodeDoc(e)
	if err != nil {
		return err
	}
	return s.insertAll(ctx, "add order event", `INSERT INTO store_order_events (id, app_id, order_ref, received_at, doc)
VALUES (?, ?, ?, ?, ?)`, [][]any{{e.ID, e.AppID, e.OrderRef, toMillis(e.ReceivedAt), d}})
}

func (s *Store) GetOrderEvent(ctx context.Context, appID, id string) (storage.OrderEvent, error) {
	e, err := scanDoc[storage.OrderEvent](s.r.QueryRowContext(ctx, `SELECT doc FROM store_order_events WHERE app_id = ? AND id = ?`, appID, id))
	if err != nil {
		return e, wrap("get order event", err)
	}
	return e, nil
}

func (s *Store) SetOrderEventOutcome(ctx context.Context, appID, id, orderRef, outcome string) error {
	return s.inWriteTx(ctx, "set order event outcome", func(tx *sql.Tx) error {
		e, err := scanDoc[storage.OrderEvent](tx.QueryRowContext(ctx, `SELECT doc FROM store_order_events WHERE app_id = ? AND id = ?`, appID, id))
		if err != nil {
			return wrap("set order event outcome", err)
		}
		e.OrderRef, e.Outcome = orderRef, outcome
		d, err := encodeDoc(e)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE store_order_events SET order_ref = ?, doc = ? WHERE id = ?`, orderRef, d, id)
		return wrapIf("set order event outcome", err)
	})
}

func (s *Store) ListOrderEvents(ctx context.Context, appID, orderRef string) ([]storage.OrderEvent, error) {
	q := `SELECT doc FROM store_order_events WHERE app_id = ? AND order_ref = ? ORDER BY received_at, id`
	if orderRef == "" {
		q = `SELECT doc FROM store_order_events WHERE app_id = ? AND order_ref = ? ORDER BY received_at DESC, id LIMIT 200`
	}
	rows, err := s.r.QueryContext(ctx, q, appID, orderRef)
	if err != nil {
		return nil, wrap("list order events", err)
	}
	out, err := scanAll(rows, scanDoc[storage.OrderEvent])
	return out, wrapIf("list order events", err)
}

// wrapIf wraps a non-nil error.
func wrapIf(op string, err error) error {
	if err == nil {
		return nil
	}
	return wrap(op, err)
}
