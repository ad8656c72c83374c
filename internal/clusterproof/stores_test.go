package clusterproof_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/core/commerce"
	"github.com/keyward/keyward/core/commerce/commercetest"
	"github.com/keyward/keyward/internal/testenv"
)

// TestStoreOrderOnceAcrossNodes: a store that delivers one sale several times at the same
// moment to two processes over one FerretDB and Redis gets one set of keys.
func TestStoreOrderOnceAcrossNodes(t *testing.T) {
	c := newCluster(t, 2, testenv.RedisURL(t))
	appID, _ := c.newApp("shop")
	const secret = "whsec_cluster"
	conn := c.owner(c.nodes[0], "POST", "/api/apps/"+appID+"/stores", map[string]any{"provider": "stripe", "secret": secret}).data(201)
	receiver := conn["receiverPath"].(string)
	c.owner(c.nodes[1], "POST", "/api/apps/"+appID+"/stores/"+conn["id"].(string)+"/products",
		map[string]any{"productId": "pro", "level": 2, "keyPrefix": "NODE"}).data(200)

	for round := range 3 {
		sale := commercetest.Sale{Kind: commerce.KindPaid, EventID: fmt.Sprint("evt_", round), OrderID: fmt.Sprint("pi_cluster_", round),
			Product: "pro", Quantity: 2, Email: "buyer@example.com", Amount: 4900, Currency: "usd"}
		body, ct := commercetest.Body(commerce.Stripe, sale)
		name, value := commerce.Sign(commerce.Stripe, secret, body, time.Now())
		var wg sync.WaitGroup
		statuses := make([]int, 8)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest("POST", c.nodes[i%2].url+receiver, bytes.NewReader(body))
				req.Header.Set("Content-Type", ct)
				req.Header.Set(name, value)
				resp, err := httpClient.Do(req)
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				statuses[i] = resp.StatusCode
			}()
		}
		wg.Wait()
		for _, st := range statuses {
			if st != http.StatusOK {
				t.Fatalf("round %d: simultaneous deliveries answered %v", round, statuses)
			}
		}
		found := c.owner(c.nodes[round%2], "GET", "/api/apps/"+appID+"/licenses?search="+sale.OrderID+"&limit=50", nil).data(200)
		if found["total"] != float64(2) {
			t.Fatalf("round %d: %v licenses for one sale of 2, want 2", round, found["total"])
		}
	}
	orders := c.owner(c.nodes[1], "GET", "/api/apps/"+appID+"/orders", nil).data(200)
	if orders["total"] != float64(3) {
		t.Fatalf("%v orders, want 3", orders["total"])
	}
	for _, o := range orders["orders"].([]any) {
		if m := o.(map[string]any); m["status"] != "paid" || len(m["keys"].([]any)) != 2 {
			t.Fatalf("order = %v", m)
		}
	}
}
