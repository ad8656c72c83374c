package httpapi

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/keyward/keyward/internal/testenv"
)

// TestAccessLogShowsUpgradeStatus upgrades a real socket and checks the access log line
// says 101, not the 200 gin's writer holds after the upgrader hijacked the connection.
func TestAccessLogShowsUpgradeStatus(t *testing.T) {
	var logs testenv.LogBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	r := gin.New()
	r.Use(requestID(), trackUpgrades(), recovery(log), accessLog(log))
	upgrader := websocket.Upgrader{}
	r.GET("/ws", func(c *gin.Context) {
		conn, err := upgrader.Upgrade(c.Writer, c.Request, nil)
		if err != nil {
			return
		}
		_ = conn.WriteMessage(websocket.TextMessage, []byte("hi"))
		_ = conn.Close()
	})
	r.GET("/plain", func(c *gin.Context) { ok(c, http.StatusOK, nil) })
	srv := httptest.NewServer(r)
	defer srv.Close()

	conn, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade answered %d", resp.StatusCode)
	}
	_, _, _ = conn.ReadMessage()
	_ = conn.Close()
	// A refused upgrade (no WebSocket headers) keeps the status the upgrader answered.
	if r, err := http.Get(srv.URL + "/ws"); err == nil {
		r.Body.Close()
	}
	if r, err := http.Get(srv.URL + "/plain"); err == nil {
		r.Body.Close()
	}
	want := []string{"path=/ws route=/ws status=101", "path=/ws route=/ws status=400", "path=/plain route=/plain status=200"}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := logs.String()
		missing := ""
		for _, w := range want {
			if !strings.Contains(got, w) {
				missing = w
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("access log lacks %q:\n%s", missing, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestUpgradesLeaveTheLatencyHistogram: an upgraded socket is counted as a request with
// status 101 but stays out of the latency histogram, however long it lives; a refused
// upgrade and a plain request are timed.
func TestUpgradesLeaveTheLatencyHistogram(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newHTTPMetrics(reg)
	r := gin.New()
	r.Use(trackUpgrades(), m.middleware())
	upgrader := websocket.Upgrader{}
	r.GET("/ws", func(c *gin.Context) {
		conn, err := upgrader.Upgrade(c.Writer, c.Request, nil)
		if err != nil {
			return
		}
		_, _, _ = conn.ReadMessage() // lives until the client leaves
		_ = conn.Close()
	})
	srv := httptest.NewServer(r)
	defer srv.Close()
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	_ = conn.Close()
	if r, err := http.Get(srv.URL + "/ws"); err == nil { // refused: no WebSocket headers
		r.Body.Close()
	}
	samples := func(status string) (requests float64, timed uint64) {
		var c, h dto.Metric
		labels := prometheus.Labels{"route": "/ws", "method": "GET", "status": status}
		_ = m.requests.With(labels).Write(&c)
		_ = m.latency.With(labels).(prometheus.Histogram).Write(&h)
		return c.GetCounter().GetValue(), h.GetHistogram().GetSampleCount()
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if n, _ := samples("101"); n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the upgrade was not counted within 30 s")
		}
	}
	if _, timed := samples("101"); timed != 0 {
		t.Fatalf("an upgraded socket is in the latency histogram (%d samples)", timed)
	}
	if n, timed := samples("400"); n != 1 || timed != 1 {
		t.Fatalf("a refused upgrade: %v requests, %d timed; want 1 and 1", n, timed)
	}
}
