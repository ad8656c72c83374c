package ws

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// served is a socket a test server upgraded through a Transport: its Conn and what it
// read.
type served struct {
	conn *Conn
	got  chan string
}

// serve starts a server whose every request is upgraded through tr and read into a
// served; onRead, when set, runs for each message (it may panic).
func serve(t *testing.T, tr *Transport, onClose func(int), onRead func(string)) (string, <-chan served) {
	t.Helper()
	socks := make(chan served, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := tr.NewConn(onClose)
		if err := tr.Upgrade(w, r, c); err != nil {
			return
		}
		s := served{conn: c, got: make(chan string, 16)}
		c.Read(func(msg []byte) {
			if onRead != nil {
				onRead(string(msg))
			}
			s.got <- string(msg)
		}, func() { close(s.got) })
		socks <- s
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http"), socks
}

func dial(t *testing.T, d *websocket.Dialer, url string) (*websocket.Conn, *http.Response) {
	t.Helper()
	cc, resp, err := d.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc, resp
}

func nextSocket(t *testing.T, socks <-chan served) served {
	t.Helper()
	select {
	case s := <-socks:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("the server opened no socket")
	}
	return served{}
}

// TestUpgradeRefusalIsTheGivenEnvelope: an upgrade request the upgrade refuses (no
// Sec-WebSocket-Key) is answered with the status and the JSON body Config.Refusal gives,
// and no socket opens.
func TestUpgradeRefusalIsTheGivenEnvelope(t *testing.T) {
	tr := New(Config{Refusal: func(status int, reason string) []byte {
		return []byte(`{"success":false,"error":{"code":"VALIDATION_ERROR","message":"` + reason + `"}}`)
	}})
	url, socks := serve(t, tr, nil, nil)
	req, _ := http.NewRequest(http.MethodGet, "http"+strings.TrimPrefix(url, "ws"), nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("refusal: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !bytes.HasPrefix(body, []byte(`{"success":false,"error":{"code":"VALIDATION_ERROR","message":"websocket: `)) {
		t.Fatalf("refusal body: %s", body)
	}
	if v := resp.Header.Get("Sec-Websocket-Version"); v != "13" {
		t.Fatalf("Sec-WebSocket-Version %q", v)
	}
	select {
	case <-socks:
		t.Fatal("a refused upgrade opened a socket")
	default:
	}
}

// TestUpgradeNegotiatesNothing: a client that offers compression and a subprotocol gets
// neither; messages go both ways, and Close sends its code and reason after the frames
// sent before it.
func TestUpgradeNegotiatesNothing(t *testing.T) {
	codes := make(chan int, 1)
	url, socks := serve(t, New(Config{}), func(code int) { codes <- code }, nil)
	d := &websocket.Dialer{EnableCompression: true, Subprotocols: []string{"chat"}}
	cc, resp := dial(t, d, url)
	if ext := resp.Header.Get("Sec-WebSocket-Extensions"); ext != "" {
		t.Fatalf("the upgrade negotiated %q", ext)
	}
	if cc.Subprotocol() != "" {
		t.Fatalf("the upgrade chose the subprotocol %q", cc.Subprotocol())
	}
	s := nextSocket(t, socks)
	if err := cc.WriteMessage(websocket.TextMessage, []byte(`{"type":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	receive(t, s.got, `{"type":"ping"}`)
	s.conn.Send([]byte("one"))
	s.conn.SendFrame(NewFrame([]byte("two")))
	s.conn.Close(4001, "kicked")
	_ = cc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for _, want := range []string{"one", "two"} {
		if _, msg, err := cc.ReadMessage(); err != nil || string(msg) != want {
			t.Fatalf("read %q, %v; want %q", msg, err, want)
		}
	}
	_, _, err := cc.ReadMessage()
	if ce, ok := err.(*websocket.CloseError); !ok || ce.Code != 4001 || ce.Text != "kicked" {
		t.Fatalf("close: %v", err)
	}
	if closed, code := s.conn.Closed(); !closed || code != 4001 {
		t.Fatalf("Closed() = %v, %d", closed, code)
	}
	select {
	case code := <-codes:
		if code != 4001 {
			t.Fatalf("onClose told %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("onClose was not told")
	}
}

// TestReadLimitEndsTheSocket: a message over Config.ReadLimit ends the socket with 1009.
func TestReadLimitEndsTheSocket(t *testing.T) {
	url, socks := serve(t, New(Config{ReadLimit: 1024}), nil, nil)
	cc, _ := dial(t, &websocket.Dialer{}, url)
	s := nextSocket(t, socks)
	if err := cc.WriteMessage(websocket.TextMessage, bytes.Repeat([]byte("x"), 2048)); err != nil {
		t.Fatal(err)
	}
	_ = cc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := cc.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Fatalf("after a message over the limit: %v", err)
	}
	for range s.got { // the reader ends
	}
}

// logBuffer is a log destination safe for the reader's goroutine and the test.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestReaderPanicClosesOnlyItsSocket: a panic in the function a socket's reader hands its
// messages to closes that socket with 1011 and is logged; the process goes on, and
// another socket of the same transport still reads.
func TestReaderPanicClosesOnlyItsSocket(t *testing.T) {
	var logged logBuffer
	codes := make(chan int, 2)
	tr := New(Config{Log: slog.New(slog.NewTextHandler(&logged, nil))})
	url, socks := serve(t, tr, func(code int) { codes <- code }, func(msg string) {
		if msg == "boom" {
			panic("handler bug")
		}
	})
	bad, _ := dial(t, &websocket.Dialer{}, url)
	nextSocket(t, socks)
	good, _ := dial(t, &websocket.Dialer{}, url)
	goodSock := nextSocket(t, socks)
	if err := bad.WriteMessage(websocket.TextMessage, []byte("boom")); err != nil {
		t.Fatal(err)
	}
	_ = bad.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := bad.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseInternalServerErr) {
		t.Fatalf("the panicking socket: %v", err)
	}
	if code := <-codes; code != websocket.CloseInternalServerErr {
		t.Fatalf("onClose told %d", code)
	}
	if s := logged.String(); !strings.Contains(s, "handler bug") || !strings.Contains(s, "in=reader") {
		t.Fatalf("log: %s", s)
	}
	if err := good.WriteMessage(websocket.TextMessage, []byte("still here")); err != nil {
		t.Fatal(err)
	}
	receive(t, goodSock.got, "still here")
}
