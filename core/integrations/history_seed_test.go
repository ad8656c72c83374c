package integrations_test

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

// seedHistory writes the finished deliveries that KEYWARD_TEST_SLOW_RECEIVER_HISTORY asks
// for (none by default) to the fixture's integration: a store that has been delivering
// for a while, whose retention still keeps what it delivered. Each carries an event and
// a sent request of about a kilobyte, as real ones do. The catch-up figure with and
// without them shows what the history costs the queue.
func seedHistory(t *testing.T, f *fixture, s storage.Store) {
	t.Helper()
	v := os.Getenv("KEYWARD_TEST_SLOW_RECEIVER_HISTORY")
	if v == "" {
		return
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("KEYWARD_TEST_SLOW_RECEIVER_HISTORY=%q: want a count", v)
	}
	seedDeliveries(t, f, s, n)
}

// seedDeliveries writes n finished deliveries of about a kilobyte to the fixture's
// integration, the oldest first.
func seedDeliveries(t *testing.T, f *fixture, s storage.Store, n int) {
	t.Helper()
	begun := time.Now()
	now := storage.Now()
	payload := []byte(`{"id":"evt","event":"user.login","appId":"` + f.appID + `","message":"` + string(bytes.Repeat([]byte("x"), 400)) + `"}`)
	sent := bytes.Repeat([]byte("s"), 600)
	const batch = 500
	for i := 0; i < n; i += batch {
		ds := make([]storage.Delivery, 0, batch)
		for j := i; j < min(n, i+batch); j++ {
			at := now.Add(-time.Duration(n-j) * time.Second)
			ds = append(ds, storage.Delivery{ID: fmt.Sprintf("old-%07d", j), AppID: f.appID, IntegrationID: "int-1",
				EventID: fmt.Sprintf("old-evt-%07d", j), Event: "user.login", Payload: payload, State: storage.DeliveryDelivered,
				Attempts: 1, Sent: sent, CreatedAt: at, UpdatedAt: at})
		}
		if err := s.CreateDeliveries(t.Context(), ds); err != nil {
			t.Fatalf("seed finished deliveries: %v", err)
		}
	}
	t.Logf("%d finished deliveries already stored (seeded in %v)", n, time.Since(begun).Round(time.Millisecond))
}
