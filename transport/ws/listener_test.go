package ws

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// listenerHarness serves h through a Listener whose socket path is /sock, with
// net/http serving the rest, on a loopback port.
type listenerHarness struct {
	l         *Listener
	srv       *http.Server
	addr      string
	recovered atomic.Int32
	served    chan error
}

func newListenerHarness(t *testing.T, h http.Handler, headTimeout time.Duration) *listenerHarness {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	x := &listenerHarness{addr: ln.Addr().String(), served: make(chan error, 1)}
	x.l = NewListener(ln, ListenerConfig{Handler: h, Match: func(p string) bool { return p == "/sock" }, HeadTimeout: headTimeout,
		Recovered: func(any, []byte) { x.recovered.Add(1) }})
	x.srv = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { x.served <- x.srv.Serve(x.l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = x.srv.Shutdown(ctx)
		_ = x.l.Close()
		if err := x.l.Wait(ctx); err != nil {
			t.Errorf("Wait after Close: %v", err)
		}
	})
	return x
}

// servedBy answers which server a handler's request came through.
func servedBy(w http.ResponseWriter) string {
	if _, ok := w.(*responseWriter); ok {
		return "listener"
	}
	return "net/http"
}

// roundTrip writes raw to a new connection and answers the response read back.
func (x *listenerHarness) roundTrip(t *testing.T, raw string) (*http.Response, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", x.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", raw, err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	return resp, string(body)
}

func echoServedBy() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Served-By", servedBy(w))
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"success":false,"path":"`+r.URL.Path+`","query":"`+r.URL.RawQuery+`","body":"`+string(body)+
			`","remote":"`+r.RemoteAddr+`","big":"`+r.Header.Get("X-Big")[:min(3, len(r.Header.Get("X-Big")))]+`"}`)
	})
}

// TestListenerServesSocketRequests: a bodiless GET of a socket path is served by the
// listener's worker, with the handler's answer written whole (status, headers, length)
// and the connection closed; every other request reaches net/http intact.
func TestListenerServesSocketRequests(t *testing.T) {
	x := newListenerHarness(t, echoServedBy(), 0)
	resp, body := x.roundTrip(t, "GET /sock?token=abc HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Served-By") != "listener" || !resp.Close ||
		resp.ContentLength != int64(len(body)) || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Date") == "" {
		t.Fatalf("socket request: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	if !strings.Contains(body, `"path":"/sock","query":"token=abc"`) || !strings.Contains(body, `"remote":"127.0.0.1:`) {
		t.Fatalf("socket request's body: %s", body)
	}
	// Sent in pieces, the head is still read whole.
	c, err := net.Dial("tcp", x.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, piece := range []string{"GE", "T /sock HTTP/1.1\r\nHo", "st: a\r\n", "\r\n"} {
		_, _ = io.WriteString(c, piece)
		time.Sleep(20 * time.Millisecond)
	}
	resp, err = http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.Header.Get("X-Served-By") != "listener" {
		t.Fatalf("a head in pieces: %v %v", resp, err)
	}

	for name, raw := range map[string]string{
		"another path":           "GET /other HTTP/1.1\r\nHost: a\r\n\r\n",
		"a POST":                 "POST /sock HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi",
		"a GET with a body":      "GET /sock HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi",
		"a chunked GET":          "GET /sock HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
		"a head past 4 KiB":      "GET /sock HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("b", 5000) + "\r\n\r\n",
		"data after the head":    "GET /sock HTTP/1.1\r\nHost: a\r\n\r\nGET /other HTTP/1.1\r\nHost: a\r\n\r\n",
		"a path with a slash":    "GET /sock/ HTTP/1.1\r\nHost: a\r\n\r\n",
		"a head no parser takes": "GET /sock HTTP/1.1\r\nHost: a\r\nbad header line\r\n\r\n",
	} {
		resp, body := x.roundTrip(t, raw)
		if resp.Header.Get("X-Served-By") == "listener" {
			t.Errorf("%s: served by the listener: %d %s", name, resp.StatusCode, body)
		}
		switch name {
		case "a POST", "a GET with a body", "a chunked GET":
			if !strings.Contains(body, `"body":"hi"`) {
				t.Errorf("%s: the body did not reach the handler: %s", name, body)
			}
		case "a head past 4 KiB":
			if !strings.Contains(body, `"big":"bbb"`) {
				t.Errorf("%s: the header did not reach the handler: %s", name, body)
			}
		case "a head no parser takes":
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%s: net/http answered %d, want 400", name, resp.StatusCode)
			}
		}
	}
	// A client of many requests on one connection (keep-alive) is net/http's, unchanged.
	client := &http.Client{Timeout: 5 * time.Second}
	for range 3 {
		resp, err := client.Post("http://"+x.addr+"/other", "text/plain", strings.NewReader("hi"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.Header.Get("X-Served-By") != "net/http" {
			t.Fatalf("keep-alive POST served by %q", resp.Header.Get("X-Served-By"))
		}
	}
}

// TestListenerUpgrades: a WebSocket upgrade served by the listener works end to end
// (the hijacked connection carries frames both ways), and an upgrade of a path it does
// not take still works through net/http.
func TestListenerUpgrades(t *testing.T) {
	var by atomic.Value
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		by.Store(servedBy(w))
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			for {
				kind, msg, err := c.ReadMessage()
				if err != nil {
					return
				}
				_ = c.WriteMessage(kind, append([]byte("echo "), msg...))
			}
		}()
	})
	x := newListenerHarness(t, h, 0)
	for path, want := range map[string]string{"/sock": "listener", "/dash": "net/http"} {
		c, resp, err := websocket.DefaultDialer.Dial("ws://"+x.addr+path, nil)
		if err != nil {
			t.Fatalf("dial %s: %v", path, err)
		}
		if resp.StatusCode != http.StatusSwitchingProtocols || by.Load() != want {
			t.Fatalf("%s: %d, served by %v, want %s", path, resp.StatusCode, by.Load(), want)
		}
		for i := range 3 {
			msg := strings.Repeat("x", 1+i*3000) // past the pooled buffers too
			if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, got, err := c.ReadMessage()
			if err != nil || string(got) != "echo "+msg {
				t.Fatalf("%s: echo %d: %v (%d bytes)", path, i, err, len(got))
			}
		}
		_ = c.Close()
	}
}

// TestListenerRecoversAndEnds: a handler's panic on a worker closes that connection and
// is reported; the listener serves on. A connection that sends no head is closed after
// HeadTimeout. Close ends Accept (net/http's Serve returns) and Wait sees every worker
// end.
func TestListenerRecoversAndEnds(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("panic") != "" {
			panic("on purpose")
		}
		w.Header().Set("X-Served-By", servedBy(w))
	})
	x := newListenerHarness(t, h, 200*time.Millisecond)
	c, err := net.Dial("tcp", x.addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(c, "GET /sock?panic=1 HTTP/1.1\r\nHost: a\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("after a panic: read %d, %v; want the connection closed", n, err)
	}
	_ = c.Close()
	if x.recovered.Load() != 1 {
		t.Fatalf("%d panics reported, want 1", x.recovered.Load())
	}
	if resp, _ := x.roundTrip(t, "GET /sock HTTP/1.1\r\nHost: a\r\n\r\n"); resp.StatusCode != http.StatusOK || resp.Header.Get("X-Served-By") != "listener" {
		t.Fatalf("after the panic: %d %v", resp.StatusCode, resp.Header)
	}

	silent, err := net.Dial("tcp", x.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	_ = silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if n, err := silent.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("a silent connection: read %d, %v; want it closed", n, err)
	}
	if waited := time.Since(start); waited > 4*time.Second {
		t.Fatalf("a silent connection was closed after %v, HeadTimeout is 200ms", waited)
	}

	if err := x.l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-x.served:
		if err == nil {
			t.Fatal("Serve returned nil after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve still runs after Close")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := x.l.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if _, err := x.l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close = %v, want net.ErrClosed", err)
	}
}
