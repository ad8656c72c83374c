package storagetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

// Commerce records (issue 23): store connections with sealed secrets, product mappings,
// orders unique per (connection, store order id), and their events unique by id.
var commerceTests = []subtest{
	{"StoreConnectionRoundTrip", testStoreConnectionRoundTrip},
	{"StoreProductPutReplaces", testStoreProductPutReplaces},
	{"OrderOncePerStoreOrder", testOrderOncePerStoreOrder},
	{"OrderUpdateConcurrent", testOrderUpdateConcurrent},
	{"OrderEventsOnce", testOrderEventsOnce},
	{"CommerceDeletedWithApp", testCommerceDeletedWithApp},
}

func fullStoreConnection(appID string) storage.StoreConnection {
	n := seq.Add(1)
	return storage.StoreConnection{ID: fmt.Sprintf("sc-%05d", n), AppID: appID, Provider: "stripe", Name: "Shop " + fmt.Sprint(n),
		ReceiverID: fmt.Sprintf("rcv-%05d", n), Secret: "whsec_" + fmt.Sprint(n), RefundAction: "ban", Enabled: true,
		MailSubject: "Your key", MailBody: "Keys: {{keys}}", Portal: storage.PortalSwitches{HWIDReset: true, Downloads: true}, CreatedAt: ms(time.Duration(n) * time.Millisecond), UpdatedAt: ms(time.Hour)}
}

func mustCreateStoreConnection(t *testing.T, s storage.Store, c storage.StoreConnection) storage.StoreConnection {
	t.Helper()
	if err := s.CreateStoreConnection(t.Context(), c); err != nil {
		t.Fatalf("CreateStoreConnection: %v", err)
	}
	return c
}

func testStoreConnectionRoundTrip(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	c := mustCreateStoreConnection(t, s, fullStoreConnection(app.ID))
	got, err := s.GetStoreConnection(ctx, app.ID, c.ID)
	if err != nil || diff(c, got) != "" {
		t.Fatalf("GetStoreConnection = %+v, %v; differs: %s", got, err, diff(c, got))
	}
	got, err = s.GetStoreConnectionByReceiver(ctx, c.ReceiverID)
	if err != nil || diff(c, got) != "" {
		t.Fatalf("GetStoreConnectionByReceiver: %v %s", err, diff(c, got))
	}
	dup := fullStoreConnection(app.ID)
	dup.ReceiverID = c.ReceiverID
	if err := s.CreateStoreConnection(ctx, dup); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("a taken receiver id: %v, want ErrConflict", err)
	}
	other := mustCreateApp(t, s, fullApp("acc-2", "other"))
	if _, err := s.GetStoreConnection(ctx, other.ID, c.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("another app's connection: %v, want ErrNotFound", err)
	}
	up, err := s.UpdateStoreConnection(ctx, app.ID, c.ID, func(x *storage.StoreConnection) error {
		x.Secret, x.RefundAction, x.ReceiverID = "rotated", "revoke", "changed"
		return nil
	})
	if err != nil || up.Secret != "rotated" || up.RefundAction != "revoke" || up.ReceiverID != c.ReceiverID {
		t.Fatalf("UpdateStoreConnection = %+v, %v (the receiver id stays)", up, err)
	}
	list, err := s.ListStoreConnections(ctx, app.ID)
	if err != nil || len(list) != 1 || list[0].Secret != "rotated" {
		t.Fatalf("ListStoreConnections = %+v, %v", list, err)
	}
	if err := s.DeleteStoreConnection(ctx, app.ID, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetStoreConnectionByReceiver(ctx, c.ReceiverID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

func testStoreProductPutReplaces(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	c := mustCreateStoreConnection(t, s, fullStoreConnection(app.ID))
	p := storage.StoreProduct{ID: uniq("sp-"), AppID: app.ID, ConnectionID: c.ID, ProductID: "prod_1", VariantID: "price_1",
		Level: 3, Duration: 86400, MaxUses: 1, DeviceLimit: 2, MaxSeats: 4, KeyPrefix: "PRO", CreateUser: true,
		Variables: map[string]string{"tier": "pro"}, CreatedAt: ms(0), UpdatedAt: ms(0)}
	first, err := s.PutStoreProduct(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	p2 := p
	p2.ID, p2.Level = uniq("sp-"), 5
	second, err := s.PutStoreProduct(ctx, p2)
	if err != nil || second.ID != first.ID {
		t.Fatalf("a second mapping of the same product and variant: %+v, %v; want it to replace %s", second, err, first.ID)
	}
	p3 := p
	p3.ID, p3.VariantID = uniq("sp-"), ""
	if _, err := s.PutStoreProduct(ctx, p3); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListStoreProducts(ctx, app.ID, c.ID)
	if err != nil || len(list) != 2 {
		t.Fatalf("ListStoreProducts = %+v, %v; want 2", list, err)
	}
	for _, got := range list {
		if got.ID == first.ID && (got.Level != 5 || got.Variables["tier"] != "pro") {
			t.Fatalf("replaced mapping = %+v", got)
		}
	}
	bad := p
	bad.ID, bad.ConnectionID = uniq("sp-"), "no-such"
	if _, err := s.PutStoreProduct(ctx, bad); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a mapping of an unknown connection: %v, want ErrNotFound", err)
	}
	if err := s.DeleteStoreProduct(ctx, app.ID, first.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteStoreConnection(ctx, app.ID, c.ID); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.ListStoreProducts(ctx, app.ID, c.ID); len(list) != 0 {
		t.Fatalf("mappings left after their connection: %+v", list)
	}
}

func newOrder(appID, connID, orderID string) storage.Order {
	return storage.Order{ID: uniq("ord-"), AppID: appID, ConnectionID: connID, OrderID: orderID, SubscriptionID: "sub_" + orderID,
		Status: storage.OrderIssuing, Email: "buyer@example.com", Quantity: 2, Amount: 1999, Currency: "EUR",
		LicenseIDs: []string{"l1", "l2"}, CreatedAt: ms(0), UpdatedAt: ms(0)}
}

func testOrderOncePerStoreOrder(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	// Racing inserts of one store order: exactly one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.CreateOrder(ctx, newOrder(app.ID, "conn-1", "pi_1"))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, storage.ErrConflict):
				t.Errorf("CreateOrder: %v, want nil or ErrConflict", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d inserts of one store order won, want 1", wins)
	}
	// The same store order id on another connection is another order.
	if err := s.CreateOrder(ctx, newOrder(app.ID, "conn-2", "pi_1")); err != nil {
		t.Fatal(err)
	}
	o, err := s.FindOrder(ctx, "conn-1", "pi_1", "")
	if err != nil || o.Amount != 1999 || len(o.LicenseIDs) != 2 {
		t.Fatalf("FindOrder = %+v, %v", o, err)
	}
	bySub, err := s.FindOrder(ctx, "conn-1", "", "sub_pi_1")
	if err != nil || bySub.ID != o.ID {
		t.Fatalf("FindOrder by subscription = %+v, %v", bySub, err)
	}
	if _, err := s.FindOrder(ctx, "conn-1", "pi_none", ""); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown order: %v", err)
	}
	got, err := s.GetOrder(ctx, app.ID, o.ID)
	if err != nil || diff(o, got) != "" {
		t.Fatalf("GetOrder: %v %s", err, diff(o, got))
	}
	list, total, err := s.ListOrders(ctx, app.ID, storage.Page{Limit: 1})
	if err != nil || total != 2 || len(list) != 1 {
		t.Fatalf("ListOrders = %d of %d, %v", len(list), total, err)
	}
}

// testOrderUpdateConcurrent: issuing → paid is a compare-and-swap; of racing updaters
// that each move it only from issuing, one succeeds.
func testOrderUpdateConcurrent(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	o := newOrder(app.ID, "conn-1", "pi_cas")
	if err := s.CreateOrder(ctx, o); err != nil {
		t.Fatal(err)
	}
	errMoved := errors.New("moved already")
	var wg sync.WaitGroup
	var mu sync.Mutex
	moved := 0
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.UpdateOrder(ctx, app.ID, o.ID, func(x *storage.Order) error {
				if x.Status != storage.OrderIssuing {
					return errMoved
				}
				x.Status, x.Keys = storage.OrderPaid, []string{fmt.Sprint("K", i)}
				return nil
			})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				moved++
			} else if !errors.Is(err, errMoved) {
				t.Errorf("UpdateOrder: %v", err)
			}
		}()
	}
	wg.Wait()
	if moved != 1 {
		t.Fatalf("%d updaters moved the order from issuing, want 1", moved)
	}
	got, _ := s.GetOrder(ctx, app.ID, o.ID)
	if got.Status != storage.OrderPaid || len(got.Keys) != 1 || got.OrderID != "pi_cas" {
		t.Fatalf("order = %+v", got)
	}
}

func testOrderEventsOnce(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	e := storage.OrderEvent{ID: uniq("oe-"), AppID: app.ID, ConnectionID: "conn-1", EventID: "evt_1", Type: "checkout.session.completed",
		Kind: "paid", Payload: []byte(`{"id":"evt_1"}`), ReceivedAt: ms(0)}
	if err := s.AddOrderEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := s.AddOrderEvent(ctx, e); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("a repeated event: %v, want ErrConflict", err)
	}
	if unclaimed, err := s.ListOrderEvents(ctx, app.ID, ""); err != nil || len(unclaimed) != 1 {
		t.Fatalf("events with no order = %+v, %v", unclaimed, err)
	}
	if err := s.SetOrderEventOutcome(ctx, app.ID, e.ID, "ord-1", "issued 2 keys"); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListOrderEvents(ctx, app.ID, "ord-1")
	if err != nil || len(list) != 1 || list[0].Outcome != "issued 2 keys" || string(list[0].Payload) != `{"id":"evt_1"}` {
		t.Fatalf("ListOrderEvents = %+v, %v", list, err)
	}
	if unclaimed, _ := s.ListOrderEvents(ctx, app.ID, ""); len(unclaimed) != 0 {
		t.Fatalf("the event still has no order: %+v", unclaimed)
	}
	got, err := s.GetOrderEvent(ctx, app.ID, e.ID)
	if err != nil || got.OrderRef != "ord-1" || got.Outcome != "issued 2 keys" || got.EventID != e.EventID {
		t.Fatalf("GetOrderEvent = %+v, %v", got, err)
	}
	if _, err := s.GetOrderEvent(ctx, app.ID, "no-such-event"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("GetOrderEvent of an unknown id: %v, want ErrNotFound", err)
	}
	if _, err := s.GetOrderEvent(ctx, "another-app", e.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("GetOrderEvent of another app: %v, want ErrNotFound", err)
	}
}

func testCommerceDeletedWithApp(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	c := mustCreateStoreConnection(t, s, fullStoreConnection(app.ID))
	o := newOrder(app.ID, c.ID, "pi_gone")
	if err := s.CreateOrder(ctx, o); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteApp(ctx, app.AccountID, app.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetStoreConnectionByReceiver(ctx, c.ReceiverID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("connection after its app: %v", err)
	}
	if _, err := s.FindOrder(ctx, c.ID, "pi_gone", ""); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("order after its app: %v", err)
	}
}
