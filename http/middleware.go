package httpapi

import (
	"bufio"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/keyward/keyward/core"
)

const ctxRequestID = "keyward.requestId"

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// requestID keeps a sane incoming X-Request-Id (from a proxy) or makes one, and echoes it.
func requestID() gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.GetHeader("X-Request-Id")
		if !requestIDPattern.MatchString(id) {
			id = uuid.NewString()
		}
		c.Set(ctxRequestID, id)
		c.Header("X-Request-Id", id)
		c.Next()
	}
}

// recovery turns a panic into an INTERNAL envelope (logged with its stack), so that no panic
// reaches a client as a dropped connection.
func recovery(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			r := recover()
			if r == nil {
				return
			}
			if r == http.ErrAbortHandler { //nolint:errorlint // sentinel compared as net/http does
				panic(r)
			}
			log.Error("panic in handler", "panic", fmt.Sprint(r), "stack", string(debug.Stack()),
				"method", c.Request.Method, "path", c.Request.URL.Path, "requestId", c.GetString(ctxRequestID))
			if !c.Writer.Written() {
				fail(c, core.E(core.CodeInternal, "internal error"))
			}
			c.Abort()
		}()
		c.Next()
	}
}

// upgradeAwareWriter reports 101 Switching Protocols once the connection was hijacked: the
// WebSocket upgrader writes its 101 on the hijacked connection, past gin's writer, which
// would otherwise still say 200 to the access log and the metrics.
type upgradeAwareWriter struct {
	gin.ResponseWriter
	hijacked bool
}

func (w *upgradeAwareWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := w.ResponseWriter.Hijack()
	if err == nil {
		w.hijacked = true
	}
	return conn, rw, err
}

func (w *upgradeAwareWriter) Status() int {
	if w.hijacked {
		return http.StatusSwitchingProtocols
	}
	return w.ResponseWriter.Status()
}

// Unwrap lets http.ResponseController reach the connection's deadlines.
func (w *upgradeAwareWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// trackUpgrades installs upgradeAwareWriter; it runs before the access log and the metrics.
func trackUpgrades() gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Writer = &upgradeAwareWriter{ResponseWriter: c.Writer}
		c.Next()
	}
}

// accessLog writes one structured line per request.
func accessLog(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		level := slog.LevelInfo
		switch c.Request.URL.Path {
		case "/healthz", "/readyz", "/metrics":
			level = slog.LevelDebug
		}
		log.Log(c.Request.Context(), level, "http request",
			"method", c.Request.Method, "path", c.Request.URL.Path, "route", routeOf(c),
			"status", c.Writer.Status(), "bytes", c.Writer.Size(), "duration", time.Since(start),
			"ip", c.ClientIP(), "requestId", c.GetString(ctxRequestID))
	}
}

func routeOf(c *gin.Context) string {
	if r := c.FullPath(); r != "" {
		return r
	}
	return "unmatched"
}

// httpMetrics counts requests and their latency by route, method and status.
type httpMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keyward_http_requests_total", Help: "HTTP requests by route, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "keyward_http_request_duration_seconds", Help: "HTTP request latency by route, method and status.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method", "status"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

func (m *httpMetrics) middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		labels := prometheus.Labels{"route": routeOf(c), "method": c.Request.Method, "status": strconv.Itoa(c.Writer.Status())}
		m.requests.With(labels).Inc()
		m.latency.With(labels).Observe(time.Since(start).Seconds())
	}
}

// bodyLimit caps request bodies; reading past the cap fails with PAYLOAD_TOO_LARGE. Routes
// named in larger ("METHOD /route/:pattern") get their own cap (file uploads).
func bodyLimit(limit int64, larger map[string]int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		limit := limit
		if l, found := larger[c.Request.Method+" "+c.FullPath()]; found {
			limit = l
		}
		if c.Request.ContentLength > limit {
			fail(c, core.E(core.CodeTooLarge, "request body exceeds %d bytes", limit))
			return
		}
		if c.Request.Body != nil {
			c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, limit)
		}
		c.Next()
	}
}
