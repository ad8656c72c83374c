package httpapi

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/keyward/keyward/actors"
	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/cluster/memory"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/core/realtime"
	"github.com/keyward/keyward/internal/testenv"
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
type panicky struct{ *peer }

func (p panicky) Send(msg []byte) bool {
	if strings.Contains(string(msg), `"pong"`) {
		panic("handler bug")
	}
	return p.peer.Send(msg)
}

// serverConn answers the server side of a real socket on loopback.
func serverConn(t *testing.T) *websocket.Conn {
	t.Helper()
	sc, cc, _ := loopbackSocket(t, false)
	go readUntilClosed(cc)
	return sc
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
	h := &wsHandlers{log: log, metrics: newWSMetrics(prometheus.NewRegistry())}
	engine := memory.New(memory.Config{})
	t.Cleanup(func() { engine.Close() })
	dir := actors.NewApps(func(context.Context, string) (struct{}, error) { return struct{}{}, nil }, actors.AppsConfig{Log: log})
	t.Cleanup(dir.Close)
	rt := realtime.New(realtime.Deps{Engine: engine, Sessions: knownSessions{"tok-bad": "bad", "tok-good": "good"}, Registry: dir, Log: log})
	if err := rt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)

	bad, good := h.newPeer("client"), h.newPeer("client")
	ctx := t.Context()
	badSock, err := rt.ConnectClient(ctx, client.Caller{IP: "192.0.2.1"}, "tok-bad", panicky{bad})
	if err != nil {
		t.Fatal(err)
	}
	goodSock, err := rt.ConnectClient(ctx, client.Caller{IP: "192.0.2.2"}, "tok-good", good)
	if err != nil {
		t.Fatal(err)
	}
	bad.start(serverConn(t))
	good.start(serverConn(t))

	rt.ClientMessage(ctx, badSock, []byte(`{"type":"ping"}`))
	select {
	case <-bad.finished():
	case <-time.After(5 * time.Second):
		t.Fatal("the panicking socket was not closed")
	}
	bad.mu.Lock()
	badCode := bad.code
	bad.mu.Unlock()
	if badCode != websocket.CloseInternalServerErr {
		t.Fatalf("panicking socket closed with %d, want 1011", badCode)
	}

	// The other socket of the app still answers.
	rt.ClientMessage(ctx, goodSock, []byte(`{"type":"ping"}`))
	good.mu.Lock()
	goodClosed := good.closed
	good.mu.Unlock()
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

// TestPingerPingsStartedSockets: the node's pinger holds a started socket in its slot,
// pings it when the slot's timer runs (run here by hand: the period is 25 s), and lets go
// of it, and of the slot, once the socket ends.
func TestPingerPingsStartedSockets(t *testing.T) {
	sc, cc, _ := loopbackSocket(t, false)
	pinged := make(chan struct{}, 1)
	cc.SetPingHandler(func(string) error {
		select {
		case pinged <- struct{}{}:
		default:
		}
		return nil
	})
	go readUntilClosed(cc)

	g := &pinger{}
	p := newPeer()
	p.clocks = &socketClocks{pinger: g}
	p.start(sc)
	slot := func() (int, bool) {
		p.mu.Lock()
		i := int(p.slot)
		p.mu.Unlock()
		g.mu.Lock()
		defer g.mu.Unlock()
		_, held := g.slots[i].peers[p]
		return i, held && g.slots[i].timer != nil
	}
	i, held := slot()
	if !held {
		t.Fatal("a started socket is not in its ping slot")
	}
	g.ping(i)
	select {
	case <-pinged:
	case <-time.After(5 * time.Second):
		t.Fatal("the slot's run sent no ping")
	}
	p.Close(wire.Normal(""))
	<-p.finished()
	if _, held := slot(); held {
		t.Fatal("an ended socket is still in its ping slot")
	}
	g.ping(i)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.slots[i].peers != nil || g.slots[i].timer != nil {
		t.Fatal("an empty slot keeps its map or its timer")
	}
}

// TestPeerSize: every socket holds a peer; it stays in the 96-byte size class (no timer
// of its own, its flags packed).
func TestPeerSize(t *testing.T) {
	if n := unsafe.Sizeof(peer{}); n > 96 {
		t.Fatalf("a peer is %d bytes, more than the 96-byte size class", n)
	}
}
