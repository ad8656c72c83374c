package webhooks

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// DefaultTimeout bounds one delivery attempt, connection to last byte read.
const DefaultTimeout = 10 * time.Second

// MaxResponseBody is how much of a receiver's response is ever read. Receivers only need to
// answer with a status; the bound keeps a hostile endpoint from streaming into memory.
const MaxResponseBody = 64 << 10

// Config configures the delivery client.
type Config struct {
	// AllowPrivate lets deliveries reach private, loopback and other non-public addresses.
	// Off by default; for tests and installations with private integrations.
	AllowPrivate bool
	// Timeout bounds each request; zero means DefaultTimeout.
	Timeout time.Duration
	// RootCAs replaces the system roots, for tests with a test CA; nil uses the system pool.
	RootCAs *x509.CertPool
	// Resolver resolves names at dial time; nil uses the system resolver.
	Resolver *net.Resolver
}

// NewClient returns the HTTP client deliveries must use. Its dialer checks the address
// actually being connected to, after DNS, so a name that passed ValidateURL and later
// resolves to a private address (DNS rebinding) is refused at connection time. It ignores
// proxy settings from the environment (a proxy would connect for us and hide the real
// destination), does not follow redirects (a redirect could point anywhere), sends only
// https and never reads more than MaxResponseBody of a response.
func NewClient(cfg Config) *http.Client {
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	dialer := &net.Dialer{
		Timeout:   timeout,
		KeepAlive: 30 * time.Second,
		Resolver:  cfg.Resolver,
	}
	if !cfg.AllowPrivate {
		dialer.Control = controlPublicOnly
	}
	transport := &http.Transport{
		Proxy:       nil, // never from the environment: a proxy would hide the destination
		DialContext: dialer.DialContext,
		TLSClientConfig: &tls.Config{
			RootCAs:    cfg.RootCAs,
			MinVersion: tls.VersionTLS12,
		},
		// A custom DialContext turns HTTP/2 off unless asked for; chat platforms speak it.
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		// Headers get the same 64 KiB bound as bodies; the default 1 MiB is far more than
		// any receiver needs.
		MaxResponseHeaderBytes: MaxResponseBody,
	}
	return &http.Client{
		Transport: &guardTransport{base: transport},
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// controlPublicOnly runs after DNS, on the exact address of each connection attempt.
func controlPublicOnly(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return fmt.Errorf("webhook dial over %s: %w", network, ErrBlockedAddress)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook dial to %q: %w", address, ErrBlockedAddress)
	}
	if !IsPublicAddr(ap.Addr()) {
		return fmt.Errorf("webhook dial to %s: %w", ap.Addr(), ErrBlockedAddress)
	}
	return nil
}

// guardTransport refuses anything but https and caps response bodies, so every user of
// the client (deliveries, the dashboard's "test integration") gets the same limits.
type guardTransport struct {
	base http.RoundTripper
}

// errNotHTTPS refuses a plain-http request; the URL policy should have stopped it already.
var errNotHTTPS = errors.New("webhooks are only delivered over https")

func (t *guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil || req.URL.Scheme != "https" {
		if req.Body != nil {
			req.Body.Close() // RoundTrip must close the body, even on error
		}
		return nil, errNotHTTPS
	}
	resp, err := t.base.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		resp.Body = &limitedBody{r: io.LimitReader(resp.Body, MaxResponseBody), c: resp.Body}
	}
	return resp, err
}

func (t *guardTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

type limitedBody struct {
	r io.Reader
	c io.Closer
}

func (b *limitedBody) Read(p []byte) (int, error) { return b.r.Read(p) }
func (b *limitedBody) Close() error               { return b.c.Close() }
