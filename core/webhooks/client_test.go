package webhooks

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/core/webhooks/webhookstest"
)

// These tests use real sockets on loopback only: an HTTPS receiver on 127.0.0.1 with the
// httptest CA (whose certificate also names example.com and *.example.com), and for the
// rebinding test a fake DNS server on 127.0.0.1.

type received struct {
	path   string
	query  url.Values
	header http.Header
	body   []byte
}

// newReceiver starts an HTTPS receiver; every request is recorded on the channel and then
// answered by h (200 when h is nil).
func newReceiver(t *testing.T, h http.HandlerFunc) (*httptest.Server, *x509.CertPool, chan received) {
	t.Helper()
	got := make(chan received, 16)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- received{r.URL.Path, r.URL.Query(), r.Header.Clone(), body}
		if h != nil {
			h(w, r)
		}
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	if ip := net.ParseIP(srv.Listener.Addr().(*net.TCPAddr).IP.String()); !ip.IsLoopback() {
		t.Fatalf("receiver listens on %v, not loopback", ip)
	}
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return srv, pool, got
}

func privateClient(pool *x509.CertPool) *http.Client {
	return NewClient(Config{AllowPrivate: true, RootCAs: pool, Timeout: 5 * time.Second})
}

func port(srv *httptest.Server) string {
	return strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
}

func mustBuild(t *testing.T, kind, u string, e Event, secret string) *http.Request {
	t.Helper()
	req, err := Build(kind, u, e, secret)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestDeliverEachFormat(t *testing.T) {
	srv, pool, got := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/discord") {
			w.WriteHeader(http.StatusNoContent) // what Discord answers without ?wait=true
			return
		}
		io.WriteString(w, "ok")
	})
	client := privateClient(pool)
	const secret = "whsec_integration"

	cases := []struct {
		kind  string
		path  string
		check func(t *testing.T, r received)
	}{
		{KindDiscord, "/discord/api/webhooks/1/tok", func(t *testing.T, r received) { checkDiscord(t, r.body) }},
		{KindSlack, "/services/T0/B0/XYZ", func(t *testing.T, r received) { checkSlack(t, r.body) }},
		{KindTelegram, "/bot123:ABC/sendMessage?chat_id=-1001234", func(t *testing.T, r received) {
			if r.path != "/bot123:ABC/sendMessage" || r.query.Get("chat_id") != "-1001234" {
				t.Errorf("telegram request to %s?%s", r.path, r.query.Encode())
			}
			checkTelegram(t, r.body, "-1001234")
		}},
		{KindCustom, "/keyward/in", func(t *testing.T, r received) {
			ts, err := strconv.ParseInt(r.header.Get(HeaderTimestamp), 10, 64)
			if err != nil {
				t.Fatalf("timestamp header %q", r.header.Get(HeaderTimestamp))
			}
			sig := r.header.Get(HeaderSignature)
			if !Verify(secret, sig, ts, r.body, time.Now(), time.Minute) {
				t.Errorf("signature %q does not verify", sig)
			}
			if Verify("whsec_other", sig, ts, r.body, time.Now(), time.Minute) {
				t.Error("signature verifies under another secret")
			}
			if r.header.Get(HeaderEvent) != "user.login" || r.header.Get(HeaderDelivery) != "evt_01" ||
				r.header.Get("Content-Type") != "application/json" || r.header.Get("User-Agent") != userAgent {
				t.Errorf("headers %v", r.header)
			}
			var p struct {
				ID, Event, AppID, Timestamp string
				Data                        map[string]any
			}
			if err := json.Unmarshal(r.body, &p); err != nil {
				t.Fatal(err)
			}
			if p.ID != "evt_01" || p.Event != "user.login" || p.AppID != "app_42" ||
				p.Timestamp != "2026-03-04T05:06:07Z" || p.Data["username"] != "alice <admin>" {
				t.Errorf("payload %+v", p)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			req := mustBuild(t, c.kind, srv.URL+c.path, sampleEvent(), secret)
			a := Deliver(context.Background(), client, req)
			if !a.OK() || a.Retryable || a.StatusCode/100 != 2 || a.Latency <= 0 {
				t.Fatalf("attempt %+v", a)
			}
			select {
			case r := <-got:
				c.check(t, r)
			default:
				t.Fatal("the receiver saw no request")
			}
		})
	}
}

// assertRefused checks an attempt was stopped by the address policy before any request.
func assertRefused(t *testing.T, a Attempt, got chan received) {
	t.Helper()
	if a.OK() || a.Retryable || a.StatusCode != 0 || !strings.Contains(a.Err, ErrBlockedAddress.Error()) {
		t.Errorf("attempt %+v, want a permanent refusal by the address policy", a)
	}
	select {
	case r := <-got:
		t.Errorf("the receiver saw a request to %s", r.path)
	default:
	}
}

func TestDialRefusesLoopbackByDefault(t *testing.T) {
	srv, pool, got := newReceiver(t, nil)
	client := NewClient(Config{RootCAs: pool, Timeout: 5 * time.Second})
	for _, u := range []string{
		srv.URL + "/hook",                               // https://127.0.0.1:port
		"https://localhost:" + port(srv) + "/",          // a name resolving to 127.0.0.1
		"https://[::ffff:127.0.0.1]:" + port(srv) + "/", // loopback in IPv4-mapped form
	} {
		t.Run(u, func(t *testing.T) {
			a := Deliver(context.Background(), client, mustBuild(t, KindCustom, u, sampleEvent(), "k"))
			assertRefused(t, a, got)
			if !errors.Is(dialErr(t, client, u), ErrBlockedAddress) {
				t.Error("the dial error does not wrap ErrBlockedAddress")
			}
		})
	}
}

func dialErr(t *testing.T, client *http.Client, u string) error {
	t.Helper()
	resp, err := client.Post(u, "application/json", strings.NewReader("{}"))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("POST %s succeeded", u)
	}
	return err
}

// TestDialRefusesRebinding is the DNS-rebinding case: the name resolves to a public
// address when the integration is validated, then to 127.0.0.1 when the delivery dials.
// The dialer must refuse the connection; with AllowPrivate the same setup reaches the
// receiver, which proves the refusal comes from the policy and not from a broken lookup.
func TestDialRefusesRebinding(t *testing.T) {
	srv, pool, got := newReceiver(t, nil)
	u := "https://hooks.example.com:" + port(srv) + "/in"

	validation := &fakeResolver{answers: map[string][]string{"hooks.example.com": {"93.184.216.34"}}}
	if _, err := (Validator{Resolver: validation}).Validate(context.Background(), u); err != nil {
		t.Fatalf("validation: %v", err)
	}

	rebinding, queries := webhookstest.StartFakeDNS(t, netip.MustParseAddr("127.0.0.1"))
	client := NewClient(Config{RootCAs: pool, Resolver: rebinding, Timeout: 5 * time.Second})
	a := Deliver(context.Background(), client, mustBuild(t, KindCustom, u, sampleEvent(), "k"))
	assertRefused(t, a, got)
	if queries.Load() == 0 {
		t.Fatal("the dial did not query the rebinding name server")
	}

	control := NewClient(Config{AllowPrivate: true, RootCAs: pool, Resolver: rebinding, Timeout: 5 * time.Second})
	if a := Deliver(context.Background(), control, mustBuild(t, KindCustom, u, sampleEvent(), "k")); !a.OK() {
		t.Fatalf("with AllowPrivate the rebound name does not reach the receiver: %+v", a)
	}
	if r := <-got; r.path != "/in" {
		t.Errorf("receiver saw %s", r.path)
	}
}

func TestDeliverIgnoresEnvironmentProxy(t *testing.T) {
	srv, pool, got := newReceiver(t, nil)
	// A dead proxy: a client honouring the variable would fail, since the name is not
	// loopback and Go's proxy rules would apply. net/http reads the variables once per
	// process, so this only bites when the test runs alone; the check on the transport
	// below is the one that always holds.
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	t.Setenv("https_proxy", "http://127.0.0.1:1")
	resolver, _ := webhookstest.StartFakeDNS(t, netip.MustParseAddr("127.0.0.1"))
	client := NewClient(Config{AllowPrivate: true, RootCAs: pool, Resolver: resolver, Timeout: 5 * time.Second})
	u := "https://hooks.example.com:" + port(srv) + "/in"
	if a := Deliver(context.Background(), client, mustBuild(t, KindSlack, u, sampleEvent(), "")); !a.OK() {
		t.Fatalf("attempt %+v", a)
	}
	<-got
	if tr := client.Transport.(*guardTransport).base.(*http.Transport); tr.Proxy != nil {
		t.Error("the transport has a proxy function")
	}
}

func TestDeliverTimeoutIsRetryable(t *testing.T) {
	// The receiver answers only when the test is over (not when it sees the client go:
	// a 200 written then could still win the race with the client's timer), so the 1 s
	// timeout must end the attempt (generous, so that a loaded machine's slow TLS
	// handshake is not what times out).
	release := make(chan struct{})
	defer close(release)
	srv, pool, _ := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
	})
	client := NewClient(Config{AllowPrivate: true, RootCAs: pool, Timeout: time.Second})
	a := Deliver(context.Background(), client, mustBuild(t, KindCustom, srv.URL+"/slow", sampleEvent(), "k"))
	if a.OK() || !a.Retryable || a.StatusCode != 0 || !strings.HasPrefix(a.Err, "timeout") {
		t.Fatalf("attempt %+v, want a retryable timeout", a)
	}
}

func TestDeliverContextCancelIsRetryable(t *testing.T) {
	// The handler answers only when the test is over, so the caller's deadline must be what
	// ends the attempt (released before the receiver's cleanup waits for it).
	release := make(chan struct{})
	defer close(release)
	srv, pool, _ := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	a := Deliver(ctx, privateClient(pool), mustBuild(t, KindCustom, srv.URL+"/", sampleEvent(), "k"))
	if a.OK() || !a.Retryable {
		t.Fatalf("attempt %+v, want retryable", a)
	}
}

func TestDeliverDoesNotFollowRedirects(t *testing.T) {
	var targetHits atomic.Int32
	srv, pool, _ := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/target" {
			targetHits.Add(1)
			return
		}
		http.Redirect(w, r, "/target", http.StatusTemporaryRedirect)
	})
	for _, kind := range []string{KindCustom, KindSlack} {
		a := Deliver(context.Background(), privateClient(pool), mustBuild(t, kind, srv.URL+"/start", sampleEvent(), "k"))
		if a.OK() || a.Retryable || a.StatusCode != http.StatusTemporaryRedirect || !strings.Contains(a.Err, "redirect") {
			t.Errorf("%s: attempt %+v, want a permanent failure on the redirect", kind, a)
		}
	}
	if n := targetHits.Load(); n != 0 {
		t.Errorf("the redirect target was requested %d times", n)
	}
}

func TestDeliverStatusesOverTheWire(t *testing.T) {
	srv, pool, _ := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		if ra := r.URL.Query().Get("ra"); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		w.WriteHeader(code)
		io.WriteString(w, `{"error":"status `+strconv.Itoa(code)+`"}`)
	})
	client := privateClient(pool)
	cases := []struct {
		path       string
		retryable  bool
		retryAfter time.Duration
	}{
		{"/404", false, 0},
		{"/400", false, 0},
		{"/410", false, 0},
		{"/408", true, 0},
		{"/425", true, 0},
		{"/429?ra=7", true, 7 * time.Second},
		{"/503?ra=120", true, 2 * time.Minute},
		{"/503?ra=" + url.QueryEscape(time.Now().Add(10*time.Minute).UTC().Format(http.TimeFormat)), true, 10 * time.Minute},
		{"/429?ra=999999", true, MaxRetryAfter},
		{"/500?ra=60", true, 0},
		{"/502", true, 0},
	}
	for _, c := range cases {
		a := Deliver(context.Background(), client, mustBuild(t, KindCustom, srv.URL+c.path, sampleEvent(), "k"))
		wantCode, _ := strconv.Atoi(strings.TrimPrefix(strings.SplitN(c.path, "?", 2)[0], "/"))
		if a.OK() || a.StatusCode != wantCode || a.Retryable != c.retryable {
			t.Errorf("%s: attempt %+v, want retryable=%v", c.path, a, c.retryable)
		}
		// An HTTP date has one-second resolution and the request takes time.
		if d := a.RetryAfter - c.retryAfter; d > time.Second || d < -2*time.Second {
			t.Errorf("%s: RetryAfter %v, want %v", c.path, a.RetryAfter, c.retryAfter)
		}
		if !strings.Contains(a.Response, "status") {
			t.Errorf("%s: response %q not kept", c.path, a.Response)
		}
	}
}

func TestDeliverNetworkErrorIsRetryable(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	u := "https://" + addr + "/bot123:SECRETTOKEN/sendMessage?chat_id=1"
	a := Deliver(context.Background(), NewClient(Config{AllowPrivate: true, Timeout: 2 * time.Second}),
		mustBuild(t, KindTelegram, u, sampleEvent(), ""))
	if a.OK() || !a.Retryable || a.StatusCode != 0 {
		t.Fatalf("attempt %+v, want a retryable network error", a)
	}
	if strings.Contains(a.Err, "SECRETTOKEN") {
		t.Errorf("the error shows the URL's token: %q", a.Err)
	}
}

func TestDeliverRefusesPlainHTTP(t *testing.T) {
	var hits atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer plain.Close()
	a := Deliver(context.Background(), NewClient(Config{AllowPrivate: true}),
		mustBuild(t, KindCustom, plain.URL+"/", sampleEvent(), "k"))
	if a.OK() || a.Retryable || !strings.Contains(a.Err, "https") || hits.Load() != 0 {
		t.Fatalf("attempt %+v (hits %d), want a permanent refusal before any request", a, hits.Load())
	}
}

func TestResponseBodyIsCapped(t *testing.T) {
	srv, pool, _ := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 32<<10))
		for range 32 { // 1 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	client := privateClient(pool)
	resp, err := client.Post(srv.URL+"/big", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n != MaxResponseBody {
		t.Errorf("read %d bytes (%v), want exactly %d", n, err, MaxResponseBody)
	}
	a := Deliver(context.Background(), client, mustBuild(t, KindCustom, srv.URL+"/big", sampleEvent(), "k"))
	if !a.OK() || len(a.Response) > maxAttemptResponse {
		t.Errorf("attempt status %d err %q, response of %d bytes", a.StatusCode, a.Err, len(a.Response))
	}
}

func TestNilClientUsesThePolicy(t *testing.T) {
	srv, _, got := newReceiver(t, nil)
	a := Deliver(context.Background(), nil, mustBuild(t, KindCustom, srv.URL+"/", sampleEvent(), "k"))
	assertRefused(t, a, got)
}
