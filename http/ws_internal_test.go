package httpapi

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestPanicClosesOnlyItsSocket: a panic while one socket's message is handled closes that
// socket with 1011, counts it and logs the app and the socket; another socket handled by
// the same code is untouched, and the process goes on.
func TestPanicClosesOnlyItsSocket(t *testing.T) {
	var logged lockedBuffer
	h := &wsHandlers{log: slog.New(slog.NewTextHandler(&logged, nil)), metrics: newWSMetrics(prometheus.NewRegistry())}
	bad, good := newPeer(), newPeer()
	handle := func(msg []byte) {
		if string(msg) == "boom" {
			panic("handler bug")
		}
	}
	h.guard("client", "app-1", "sock-bad", bad, handle)([]byte("boom"))
	h.guard("client", "app-1", "sock-good", good, handle)([]byte("fine"))

	bad.mu.Lock()
	badClosed, badCode := bad.closed, bad.code
	bad.mu.Unlock()
	if !badClosed || badCode != wsCloseInternal {
		t.Fatalf("panicking socket: closed %v with %d, want 1011", badClosed, badCode)
	}
	good.mu.Lock()
	goodClosed := good.closed
	good.mu.Unlock()
	if goodClosed {
		t.Fatal("the other socket was closed")
	}
	var m dto.Metric
	if err := h.metrics.panics.Write(&m); err != nil || m.GetCounter().GetValue() != 1 {
		t.Fatalf("panics counted: %v, %v", m.GetCounter().GetValue(), err)
	}
	if s := logged.String(); !strings.Contains(s, "app=app-1") || !strings.Contains(s, "socket=sock-bad") || !strings.Contains(s, "handler bug") {
		t.Fatalf("log line: %s", s)
	}
}
