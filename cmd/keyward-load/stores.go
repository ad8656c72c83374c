package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/commerce"
	"github.com/keyward/keyward/core/commerce/commercetest"
	"github.com/keyward/keyward/server"
)

// storesOnly runs only the store sales run (-stores).
var storesOnly bool

// storesRun sends signed Stripe sales (each its own order, one key, a buyer to mail) from
// conc workers to one node's receiver for d: paid orders per second and the time from the
// store's event to its keys issued and the buyer's mail queued (the answer waits for both;
// the mail's delivery to SMTP or the outbox follows off the request path). The first
// answer's duplicates are measured too: each order is delivered twice.
func storesRun(ctx context.Context, core *server.Core, addr string, owner apps.Owner, appID string, c *client, conc int, d time.Duration) error {
	w := core.Commerce.Owner(core.Apps)
	provider := string(commerce.Stripe)
	const secret = "whsec_load"
	conn, err := w.CreateConnection(ctx, owner, appID, commerce.ConnectionInput{Provider: &provider, Secret: ptr(secret)})
	if err != nil {
		return err
	}
	level := 2
	if _, err := w.PutProduct(ctx, owner, appID, conn.ID, commerce.ProductInput{ProductID: "load", Level: &level, KeyPrefix: "LOAD"}); err != nil {
		return err
	}
	url := "http://" + addr + "/api/stores/receive/" + conn.ReceiverID
	deliver := func(sale commercetest.Sale) (time.Duration, error) {
		body, ct := commercetest.Body(commerce.Stripe, sale)
		name, value := commerce.Sign(commerce.Stripe, secret, body, time.Now())
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		req.Header.Set(name, value)
		start := time.Now()
		resp, err := c.http.Do(req)
		if err != nil {
			return 0, err
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("status %d: %s", resp.StatusCode, raw)
		}
		return time.Since(start), nil
	}
	sale := func(i int) commercetest.Sale {
		return commercetest.Sale{Kind: commerce.KindPaid, EventID: fmt.Sprint("evt_load_", i), OrderID: fmt.Sprint("pi_load_", i),
			Product: "load", Quantity: 1, Email: fmt.Sprintf("buyer%d@example.com", i), Amount: 990, Currency: "usd"}
	}
	paid := load("store sale → keys + mail queued", conc, d, func(_, i int) (time.Duration, error) { return deliver(sale(i)) })
	fmt.Println(paid)
	n := paid.ops
	again := load("store sale repeated (no-op)", conc, d, func(_, i int) (time.Duration, error) {
		if n == 0 {
			return 0, errExhausted
		}
		return deliver(sale(i % n))
	})
	fmt.Println(again)
	return nil
}

func ptr[T any](v T) *T { return &v }
