package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/actors/sockets"
	"github.com/keyward/keyward/cluster/memory"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/transport/ws"
)

// knownSessions admits the tokens it knows as users of app "app-1".
type knownSessions map[string]string

func (k knownSessions) CheckSocket(_ context.Context, c client.Caller, token string) (client.SocketUser, error) {
	id, ok := k[token]
	if !ok {
		return client.SocketUser{}, core.E(core.CodeUnauthorized, "unknown session")
	}
	return client.SocketUser{AppID: "app-1", UserID: id, Username: id, IP: c.IP, Token: token}, nil
}

func (k knownSessions) CheckSockets(context.Context, string, []client.SocketCheck) []error {
	return nil
}

// panicky is a socket writer whose Send panics on a pong: handling a ping panics in the
// socket's actor.
type panicky struct{ socketPeer }

func (p panicky) Send(msg []byte) bool {
	if strings.Contains(string(msg), `"pong"`) {
		panic("handler bug")
	}
	return p.socketPeer.Send(msg)
}

// startOnLoopback starts conn on a real loopback socket upgraded through tr; the client
// side reads until the socket closes.
func startOnLoopback(t *testing.T, tr *ws.Transport, conn *ws.Conn) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = tr.Upgrade(w, r, conn)
	}))
	t.Cleanup(srv.Close)
	cc, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	go readUntilClosed(cc)
}

// readUntilClosed reads c's messages until its socket closes (a client that keeps up).
func readUntilClosed(c *websocket.Conn) {
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			return
		}
	}
}

// TestPanicClosesOnlyItsSocket: a panic while one socket's SessionActor handles a message
// closes that socket with 1011, counts it and logs the app and the socket; another socket
// of the same app is untouched, and the process goes on.
func TestPanicClosesOnlyItsSocket(t *testing.T) {
	var logged testenv.LogBuffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	h := &wsHandlers{log: log, metrics: newWSMetrics(prometheus.NewRegistry()), transport: ws.New(ws.Config{Log: log})}
	engine := memory.New(memory.Config{})
	t.Cleanup(func() { engine.Close() })
	dir := app.NewApps(func(context.Context, string) (struct{}, error) { return struct{}{}, nil }, app.AppsConfig{Log: log})
	t.Cleanup(dir.Close)
	rt := sockets.New(sockets.Deps{Engine: engine, Sessions: knownSessions{"tok-bad": "bad", "tok-good": "good"}, Registry: dir, Log: log})
	if err := rt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)

	bad, good := h.newConn("client"), h.newConn("client")
	ctx := t.Context()
	badSock, err := rt.ConnectClient(ctx, client.Caller{IP: "192.0.2.1"}, "tok-bad", panicky{socketPeer{bad}})
	if err != nil {
		t.Fatal(err)
	}
	goodSock, err := rt.ConnectClient(ctx, client.Caller{IP: "192.0.2.2"}, "tok-good", socketPeer{good})
	if err != nil {
		t.Fatal(err)
	}
	startOnLoopback(t, h.transport, bad)
	startOnLoopback(t, h.transport, good)

	rt.ClientMessage(ctx, badSock, []byte(`{"type":"ping"}`))
	select {
	case <-bad.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the panicking socket was not closed")
	}
	_, badCode := bad.Closed()
	if badCode != websocket.CloseInternalServerErr {
		t.Fatalf("panicking socket closed with %d, want 1011", badCode)
	}

	// The other socket of the app still answers.
	rt.ClientMessage(ctx, goodSock, []byte(`{"type":"ping"}`))
	goodClosed, _ := good.Closed()
	if goodClosed {
		t.Fatal("the other socket was closed")
	}
	if n, err := rt.Online(ctx, "app-1"); err != nil || n != 2 {
		t.Fatalf("online after the panic: %d %v", n, err)
	}
	var m dto.Metric
	if err := h.metrics.panics.Write(&m); err != nil || m.GetCounter().GetValue() != 1 {
		t.Fatalf("panics counted: %v, %v", m.GetCounter().GetValue(), err)
	}
	if s := logged.String(); !strings.Contains(s, "app=app-1") || !strings.Contains(s, "socket="+badSock.ID) || !strings.Contains(s, "handler bug") {
		t.Fatalf("log line: %s", s)
	}
	rt.DisconnectClient(badSock)
	rt.DisconnectClient(goodSock)
}
