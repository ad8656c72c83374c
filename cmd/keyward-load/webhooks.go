package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/integrations"
	"github.com/keyward/keyward/core/webhooks"
	"github.com/keyward/keyward/server"
	"github.com/keyward/keyward/storage"
)

// Webhook latency run (-webhook-latency N): on an otherwise idle node, N events one after
// another, each stored in the durable event log (what a change does before it answers),
// timed until a CUSTOM integration's receiver on loopback has it: the event log's
// consumer, the dispatcher, the delivery queue, its worker and the HTTP request. With
// -webhook-history H the history first holds H finished deliveries, as a node that has
// been delivering for a while under its retention. The node needs
// KEYWARD_WEBHOOKS_ALLOW_PRIVATE (set by this run) to reach the loopback receiver.
var (
	webhookEvents  int
	webhookHistory int
	webhookGap     time.Duration
	// webhookCert is the receiver's self-signed certificate, trusted by the node through
	// KEYWARD_WEBHOOKS_CA_FILE (integrations take https URLs only).
	webhookCert tls.Certificate
)

// webhookReceiverConfig makes the receiver's certificate for 127.0.0.1, writes it where
// the node's KEYWARD_WEBHOOKS_CA_FILE points, and lets the node reach loopback.
func webhookReceiverConfig(dir string, env map[string]string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "keyward-load receiver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "webhook-receiver.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	webhookCert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	env["KEYWARD_WEBHOOKS_CA_FILE"], env["KEYWARD_WEBHOOKS_ALLOW_PRIVATE"] = path, "true"
	return nil
}

func init() {
	flag.IntVar(&webhookEvents, "webhook-latency", 0, "run only the webhook latency run: this many events one after another on an idle node, each timed from its store in the event log to its delivery at a loopback receiver (p50/p99)")
	flag.IntVar(&webhookHistory, "webhook-history", 0, "with -webhook-latency, first store this many finished deliveries (the history a retention keeps)")
	flag.DurationVar(&webhookGap, "webhook-gap", 20*time.Millisecond, "with -webhook-latency, the pause after each delivery before the next event (the node idles between them)")
}

// webhookLatencyRun is the run described above.
func webhookLatencyRun(ctx context.Context, core *server.Core, owner apps.Owner, appID string) error {
	type arrival struct {
		id string
		at time.Time
	}
	got := make(chan arrival, 16)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		select {
		case got <- arrival{r.Header.Get(webhooks.HeaderDelivery), at}:
		default: // a repeat nobody waits for
		}
	})}
	var wg sync.WaitGroup
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{webhookCert}, MinVersion: tls.VersionTLS12}
	wg.Go(func() { _ = srv.ServeTLS(ln, "", "") })
	defer func() { _ = srv.Close(); wg.Wait() }()

	enabled := true
	in, err := core.Integrations.Create(ctx, owner, appID, integrations.Input{Name: "latency", Type: webhooks.KindCustom,
		URL: "https://" + ln.Addr().String() + "/hook", Events: []string{string(events.UserLogin)}, Enabled: &enabled})
	if err != nil {
		return fmt.Errorf("create integration: %w", err)
	}
	if webhookHistory > 0 {
		begun := time.Now()
		if err := seedWebhookHistory(ctx, core.Store, appID, in.ID, webhookHistory); err != nil {
			return err
		}
		fmt.Printf("%d finished deliveries stored first (%v)\n", webhookHistory, time.Since(begun).Round(time.Millisecond))
	}

	// One event first, untimed: connections and caches warm.
	lat := make([]time.Duration, 0, webhookEvents)
	for i := -1; i < webhookEvents; i++ {
		start := time.Now()
		if err := core.Bus.Publish(ctx, events.Event{Name: events.UserLogin, AppID: appID, Username: fmt.Sprint("u", i),
			At: start}); err != nil {
			return fmt.Errorf("publish: %w", err)
		}
		select {
		case a := <-got:
			if i >= 0 {
				lat = append(lat, a.at.Sub(start))
			}
		case <-time.After(30 * time.Second):
			return fmt.Errorf("event %d not delivered within 30 s", i)
		case <-ctx.Done():
			return ctx.Err()
		}
		time.Sleep(webhookGap)
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(float64(len(lat))*p))].Microseconds()) / 1000
	}
	fmt.Printf("event stored → webhook received (idle node, %d events, %v apart, %d finished deliveries in the history):\n"+
		"  p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  max %.2f ms\n",
		len(lat), webhookGap, webhookHistory, pct(0.50), pct(0.90), pct(0.99), pct(1))
	return nil
}

// seedWebhookHistory stores n finished deliveries of the integration, each with an event
// and a sent request of about a kilobyte, in batches.
func seedWebhookHistory(ctx context.Context, st storage.Store, appID, integrationID string, n int) error {
	now := storage.Now()
	payload := []byte(fmt.Sprintf(`{"id":"old","event":"user.login","appId":%q,"message":"%0400d"}`, appID, 0))
	sent := make([]byte, 600)
	for i := 0; i < n; i += 500 {
		ds := make([]storage.Delivery, 0, 500)
		for j := i; j < min(n, i+500); j++ {
			at := now.Add(-time.Duration(n-j) * time.Second)
			ds = append(ds, storage.Delivery{ID: fmt.Sprintf("old-%07d", j), AppID: appID, IntegrationID: integrationID,
				EventID: fmt.Sprintf("old-evt-%07d", j), Event: string(events.UserLogin), Payload: payload,
				State: storage.DeliveryDelivered, Attempts: 1, Sent: sent, CreatedAt: at, UpdatedAt: at})
		}
		if err := st.CreateDeliveries(ctx, ds); err != nil {
			return fmt.Errorf("store finished deliveries: %w", err)
		}
	}
	return nil
}
