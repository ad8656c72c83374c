package integrations_test

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/integrations"
	"github.com/keyward/keyward/core/webhooks"
	"github.com/keyward/keyward/core/webhooks/webhookstest"
	"github.com/keyward/keyward/internal/testtls"
	"github.com/keyward/keyward/storage"
)

// TestRebindingAtDeliveryIsAFailedDelivery: the integration's host passed the URL check
// when it was saved, then its name server answers 127.0.0.1 when the queue delivers (DNS
// rebinding). The worker's client (webhooks.NewClient with a resolver given through
// Config, a fake name server on loopback) refuses the connection; the delivery ends
// failed at once (no retry would help), its attempt and the delivery say why in words an
// owner understands, and the receiver sees nothing.
func TestRebindingAtDeliveryIsAFailedDelivery(t *testing.T) {
	f := newFixture(t)
	s := f.open(t)
	defer s.Close()
	ctx := t.Context()
	i, err := s.UpdateIntegration(ctx, f.appID, "int-1", func(i *storage.Integration) error {
		u, err := url.Parse(i.URL)
		if err != nil {
			return err
		}
		u.Host = "hooks.example.com:" + u.Port() // validated as public when it was saved
		i.URL = u.String()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	resolver, queries := webhookstest.StartFakeDNS(t, netip.MustParseAddr("127.0.0.1"))
	client := webhooks.NewClient(webhooks.Config{RootCAs: testtls.NewCA(t).Pool(), Resolver: resolver, Timeout: 5 * time.Second})

	integrations.NewDispatcher(s, nil, quiet(), nil).Handle(events.Event{Name: "user.login", AppID: f.appID, Username: "alice", At: time.Now()})
	w := integrations.NewWorker(s, integrations.WorkerConfig{Client: client, Log: quiet()})
	if n, err := w.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("claimed %d, %v; want the 1 queued delivery", n, err)
	}
	if queries.Load() == 0 {
		t.Fatal("the delivery did not resolve the name at dial time")
	}
	if got := f.received(); len(got) != 0 {
		t.Fatalf("the receiver on loopback got %v", got)
	}
	attempts, total, err := s.ListDeliveryAttempts(ctx, f.appID, i.ID, storage.Page{})
	if err != nil || total != 1 {
		t.Fatalf("attempts %+v total %d err %v", attempts, total, err)
	}
	a := attempts[0]
	for _, want := range []string{"refused at delivery", "not public", "127.0.0.1", "KEYWARD_WEBHOOKS_ALLOW_PRIVATE"} {
		if a.Success || !strings.Contains(a.Error, want) {
			t.Errorf("attempt error %q lacks %q (success %v)", a.Error, want, a.Success)
		}
	}
	if strings.Contains(a.Error, "hooks.example.com") {
		t.Errorf("attempt error names the URL: %q", a.Error)
	}
	d := readDelivery(t, s, a.DeliveryID)
	if d.State != storage.DeliveryFailed || d.LastError != a.Error || d.Sent != nil {
		t.Fatalf("delivery %+v: want failed for good with the attempt's reason and nothing sent", d)
	}
	if n, _ := w.RunOnce(ctx); n != 0 {
		t.Fatalf("a refused delivery was claimed again (%d)", n)
	}
}

// readDelivery reads a delivery through an aborted update (the store has no getter).
func readDelivery(t *testing.T, s storage.Store, id string) storage.Delivery {
	t.Helper()
	var got storage.Delivery
	stop := errStop{}
	if _, err := s.UpdateDelivery(t.Context(), id, func(d *storage.Delivery) error {
		got = *d
		return stop
	}); err != stop {
		t.Fatalf("read delivery %s: %v", id, err)
	}
	return got
}

type errStop struct{}

func (errStop) Error() string { return "stop" }
