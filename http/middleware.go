package httpapi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
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

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// requestID keeps a sane incoming X-Request-Id (from a proxy) or makes one, and echoes it.
func requestID() gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.GetHeader("X-Request-Id")
		if !requestIDPattern.MatchString(id) {
			id = uuid.NewString()
		}
		c.Header("X-Request-Id", id)
		c.Next()
	}
}

// requestIDOf is the request's id, as requestID put it in the answer's headers (and not
// in the context's keys too: their map would be made for every request, every socket's
// upgrade among them, that sets no other key). It holds while no handler removes or
// replaces the answer's headers (none does).
func requestIDOf(c *gin.Context) string { return c.Writer.Header().Get("X-Request-Id") }

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
				"method", c.Request.Method, "path", c.Request.URL.Path, "requestId", requestIDOf(c))
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
		if !log.Enabled(c.Request.Context(), level) {
			return // not even the line's attributes (a dozen allocations a request)
		}
		log.Log(c.Request.Context(), level, "http request",
			"method", c.Request.Method, "path", c.Request.URL.Path, "route", routeOf(c),
			"status", c.Writer.Status(), "bytes", c.Writer.Size(), "duration", time.Since(start),
			"ip", c.ClientIP(), "requestId", requestIDOf(c))
	}
}

func routeOf(c *gin.Context) string {
	if r := c.FullPath(); r != "" {
		return r
	}
	return "unmatched"
}

// httpMetrics counts requests and their latency by route, method and status (WebSocket
// upgrades are counted, not timed).
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

// middleware counts every request; an upgraded WebSocket (101) stays out of the latency
// histogram: a socket's life is not a request's latency (the ws metrics cover sockets).
func (m *httpMetrics) middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		status := c.Writer.Status()
		// By values in the vectors' label order: no map a request (every socket's
		// upgrade passes here).
		route, method, code := routeOf(c), c.Request.Method, statusLabel(status)
		m.requests.WithLabelValues(route, method, code).Inc()
		if status != http.StatusSwitchingProtocols {
			m.latency.WithLabelValues(route, method, code).Observe(time.Since(start).Seconds())
		}
	}
}

// statusLabel is a status code's label value; the common ones are not formatted again.
func statusLabel(status int) string {
	switch status {
	case http.StatusSwitchingProtocols:
		return "101"
	case http.StatusOK:
		return "200"
	case http.StatusCreated:
		return "201"
	case http.StatusNoContent:
		return "204"
	}
	return strconv.Itoa(status)
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

// codeRequestTimeout refuses a request whose body did not arrive in time (bodyDeadline).
const codeRequestTimeout core.Code = "REQUEST_TIMEOUT"

// errBodyTimeout is what reading a body past its deadline answers.
var errBodyTimeout = core.E(codeRequestTimeout, "the request body did not arrive in time")

// bodyDeadline bounds the time a request body may take to arrive, so that a client sending
// headers and then nothing (or a trickle) cannot hold a connection and a handler open: the
// body must arrive within timeout, plus one second for every minRate bytes received, so
// that a large upload on a slow but live link is bounded by a rate floor rather than a
// total time. Past the deadline a read fails with REQUEST_TIMEOUT (408), the answer is sent
// and the connection closed. Requests without a body (WebSocket upgrades among them) are
// left alone.
func bodyDeadline(timeout time.Duration, minRate int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		r := c.Request
		if timeout <= 0 || r.Body == nil || r.Body == http.NoBody || (r.ContentLength == 0 && len(r.TransferEncoding) == 0) {
			c.Next()
			return
		}
		rc := http.NewResponseController(c.Writer)
		start := time.Now()
		if err := rc.SetReadDeadline(start.Add(timeout)); err != nil {
			// Not on a real connection (a handler test); nothing to bound.
			c.Next()
			return
		}
		r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, start: start, timeout: timeout, minRate: minRate}
		c.Next()
	}
}

// deadlineBody moves the connection's read deadline as the body arrives and lifts it at
// the body's end: net/http then reads the connection in the background to notice a client
// that goes away, and a deadline left in place would cancel the request when it passed.
type deadlineBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	start    time.Time
	timeout  time.Duration
	minRate  int64
	received int64
	ended    bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.received += int64(n)
	switch {
	case errors.Is(err, io.EOF):
		if !b.ended {
			b.ended = true
			_ = b.rc.SetReadDeadline(time.Time{})
		}
	case err != nil:
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			return n, errBodyTimeout
		}
	case n > 0 && b.minRate > 0:
		grace := time.Duration(float64(b.received) / float64(b.minRate) * float64(time.Second))
		_ = b.rc.SetReadDeadline(b.start.Add(b.timeout + grace))
	}
	return n, err
}
