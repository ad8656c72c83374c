package webhooks

import (
	"bytes"
	"context"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/core/webhooks/webhookstest"
)

// TestDeliverRecordsTheSentRequest: the Attempt's Sent holds what the receiver got, byte
// for byte: every header the receiver saw (signature and event id included) with its
// value, and the body. The URL path (credentials for chat platforms) is not in it.
func TestDeliverRecordsTheSentRequest(t *testing.T) {
	srv, pool, got := newReceiver(t, nil)
	req := mustBuild(t, KindCustom, srv.URL+"/secret-token-path", sampleEvent(), "whsec_k")
	a := Deliver(context.Background(), privateClient(pool), req)
	if !a.OK() || a.Sent == nil {
		t.Fatalf("attempt %+v, want success with the sent request", a)
	}
	r := <-got
	if !bytes.Equal(a.Sent.Body, r.body) {
		t.Errorf("sent body %q, receiver got %q", a.Sent.Body, r.body)
	}
	if a.Sent.Method != http.MethodPost {
		t.Errorf("method %q", a.Sent.Method)
	}
	sent := http.Header{}
	for _, h := range a.Sent.Headers {
		sent.Add(h.Name, h.Value)
	}
	for _, name := range []string{HeaderSignature, HeaderDelivery, HeaderEvent, HeaderTimestamp, "Content-Type", "User-Agent", "Content-Length"} {
		if want := r.header.Get(name); want == "" || sent.Get(name) != want {
			t.Errorf("header %s: sent record %q, receiver got %q", name, sent.Get(name), want)
		}
	}
	if sent.Get(HeaderDelivery) != "evt_01" {
		t.Errorf("event id header %q", sent.Get(HeaderDelivery))
	}
	ts, _ := strconv.ParseInt(sent.Get(HeaderTimestamp), 10, 64)
	if !Verify("whsec_k", sent.Get(HeaderSignature), ts, a.Sent.Body, time.Now(), 0) {
		t.Error("the recorded signature does not verify over the recorded body")
	}
	enc := a.Sent.Encode()
	if strings.Contains(string(enc), "secret-token-path") {
		t.Errorf("the stored record holds the URL path: %s", enc)
	}
	back := DecodeSent(enc)
	if back == nil || !bytes.Equal(back.Body, a.Sent.Body) || len(back.Headers) != len(a.Sent.Headers) {
		t.Errorf("decoded %+v, want %+v", back, a.Sent)
	}
}

// TestRefusedDeliverySendsNothing: a destination refused at dial time (a name rebound to
// loopback) records no sent request and says why in words an owner understands.
func TestRefusedDeliverySendsNothing(t *testing.T) {
	srv, pool, got := newReceiver(t, nil)
	resolver, _ := webhookstest.StartFakeDNS(t, netip.MustParseAddr("127.0.0.1"))
	client := NewClient(Config{RootCAs: pool, Resolver: resolver, Timeout: 5 * time.Second})
	a := Deliver(context.Background(), client, mustBuild(t, KindCustom, "https://hooks.example.com:"+port(srv)+"/in", sampleEvent(), "k"))
	assertRefused(t, a, got)
	if a.Sent != nil {
		t.Errorf("a refused attempt recorded a sent request: %+v", a.Sent)
	}
	for _, want := range []string{"refused at delivery", "127.0.0.1", "KEYWARD_WEBHOOKS_ALLOW_PRIVATE"} {
		if !strings.Contains(a.Err, want) {
			t.Errorf("reason %q lacks %q", a.Err, want)
		}
	}
}

// TestSentRequestOverHTTP2: chat platforms answer over HTTP/2, whose pseudo-header
// ":path" carries the URL's path (the webhook token): it is recorded masked, and the
// other fields as written (lower-case names, the signature among them).
func TestSentRequestOverHTTP2(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			w.WriteHeader(http.StatusHTTPVersionNotSupported)
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	a := Deliver(context.Background(), privateClient(pool), mustBuild(t, KindCustom, srv.URL+"/bot123:SECRET/x", sampleEvent(), "k"))
	if !a.OK() || a.Sent == nil {
		t.Fatalf("attempt %+v, want an HTTP/2 success with the sent request", a)
	}
	got := map[string]string{}
	for _, h := range a.Sent.Headers {
		got[h.Name] = h.Value
	}
	if got[":path"] != maskedPath || got[":method"] != "POST" || !strings.HasPrefix(got[strings.ToLower(HeaderSignature)], "sha256=") {
		t.Errorf("HTTP/2 fields %v", got)
	}
	if strings.Contains(string(a.Sent.Encode()), "SECRET") {
		t.Errorf("the record holds the URL's token: %s", a.Sent.Encode())
	}
}
