package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/keyward/keyward/actors/sockets"
	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/realtime"
	"github.com/keyward/keyward/core/wshooks"
	"github.com/keyward/keyward/transport/ws"
)

// limitUpgrade is SPEC 8's socket upgrade limit, per IP, for both channels.
var limitUpgrade = limitRule{"ws.upgrade", realtime.UpgradesPerMinute, time.Minute}

// wsHandlers serves the two socket channels and the REST helpers (SPEC 4.9, 4.11).
type wsHandlers struct {
	rt      *sockets.Service
	apps    *apps.Service
	auth    Authenticator
	limiter cluster.RateLimiter
	hooks   *wshooks.Service
	audit   auditRecorder // the dashboard socket's changes; nil records nothing
	// auditWritten counts the socket's entries with the REST routes' (nil: not counted).
	auditWritten *prometheus.CounterVec
	log          *slog.Logger
	metrics      *wsMetrics
	// transport upgrades, reads, writes and pings the sockets (transport/ws). Its
	// defaults are the socket timing: control-frame pings every 25 s keep sockets alive
	// and find dead peers (SDKs answer them in their libraries; no SDK sends JSON pings by
	// itself, so their absence never drops a client).
	transport *ws.Transport
}

// wsMetrics count what happens at the socket edge.
type wsMetrics struct {
	closes   *prometheus.CounterVec
	slow     prometheus.Counter
	refusals *prometheus.CounterVec
	panics   prometheus.Counter
	// onClose counts a socket's close, by channel: one function per channel that every
	// socket of it shares (a closure per socket would cost each an allocation).
	onClose map[string]func(code int)
}

func newWSMetrics(reg prometheus.Registerer) *wsMetrics {
	m := &wsMetrics{
		closes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "keyward_ws_closes_total",
			Help: "Sockets this node closed, by channel and close code (1000 after the other side closed or went away)."}, []string{"channel", "code"}),
		slow: prometheus.NewCounter(prometheus.CounterOpts{Name: "keyward_ws_slow_consumer_disconnects_total",
			Help: "Sockets closed (1013) because they did not read their queue fast enough."}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "keyward_ws_admission_refusals_total",
			Help: "Sockets refused at admission, by channel and error code."}, []string{"channel", "code"}),
	}
	m.panics = prometheus.NewCounter(prometheus.CounterOpts{Name: "keyward_ws_message_panics_total",
		Help: "Socket messages whose handling panicked (the socket was closed with 1011)."})
	reg.MustRegister(m.closes, m.slow, m.refusals, m.panics)
	m.onClose = map[string]func(int){"client": m.closed("client"), "dashboard": m.closed("dashboard")}
	return m
}

// closed counts a close of one of channel's sockets, and a slow reader or a failed actor.
func (m *wsMetrics) closed(channel string) func(code int) {
	return func(code int) {
		switch code {
		case websocket.CloseTryAgainLater:
			m.slow.Inc()
		case websocket.CloseInternalServerErr:
			// The socket's actor failed (it logged the app and the socket).
			m.panics.Inc()
		}
		if code == websocket.CloseAbnormalClosure || code == websocket.CloseNormalClosure {
			code = websocket.CloseNormalClosure
		}
		m.closes.WithLabelValues(channel, strconv.Itoa(code)).Inc()
	}
}

func (m *wsMetrics) refused(channel string, err error) {
	m.refusals.WithLabelValues(channel, string(core.CodeOf(err))).Inc()
}

func newWSHandlers(rt *sockets.Service, hk *wshooks.Service, a *apps.Service, auth Authenticator, l cluster.RateLimiter, reg prometheus.Registerer, log *slog.Logger) *wsHandlers {
	return &wsHandlers{rt: rt, hooks: hk, apps: a, auth: auth, limiter: l, log: log, metrics: newWSMetrics(reg),
		transport: ws.New(ws.Config{
			ReadLimit: wire.MaxMessageBytes,
			// Clients are programs that send any Origin or none (CLIENT-SDKS.md §6.1) and
			// authenticate with the token in the URL, not with cookies, so the origin
			// proves nothing and is not checked (the transport's default).
			CheckOrigin: nil,
			Refusal:     refusedUpgrade,
			Log:         log,
		})}
}

// refusedUpgrade is the error envelope of an upgrade request the transport refused (a
// missing or wrong Sec-WebSocket-Key or version, a method other than GET).
func refusedUpgrade(status int, reason string) []byte {
	code := core.CodeValidation
	switch status {
	case http.StatusMethodNotAllowed:
		code = core.CodeNoMethod
	case http.StatusForbidden:
		code = core.CodeForbidden
	}
	body, _ := json.Marshal(errorBody{Error: errorObject{Code: code, Message: reason}})
	return append(body, '\n')
}

// gate admits the REST helpers: the owner's app on a plan with WebSocket access.
func (h *wsHandlers) gate(c *gin.Context) {
	if _, err := h.apps.WebSocketApp(c.Request.Context(), ownerOf(c), c.Param("appId")); err != nil {
		fail(c, err)
		c.Abort()
		return
	}
	c.Next()
}

// client admits and upgrades a client socket. The socket is admitted (and registered, with
// its queue) before the upgrade is answered, so that a program holding its 101 receives
// every delivery made after it. Refusals are sent after the upgrade, as force_logout with
// the reason, then the socket closes: SDKs cannot read the body of a refused upgrade
// (CLIENT-SDKS.md §6.1). Only the upgrade limit, a missing token and a request that is
// not an upgrade are refused before.
func (h *wsHandlers) client(c *gin.Context, ch *clientHandlers) {
	token, ok := h.admitUpgrade(c, "sessionToken")
	if !ok || !h.isUpgrade(c) {
		return
	}
	conn := h.newConn("client")
	admit, cancelAdmit := context.WithTimeout(context.Background(), 10*time.Second)
	// The socket keeps its token for its whole life: a copy of its own, not a piece of
	// the request's line, which it would keep whole.
	sock, refused := h.rt.ConnectClient(admit, ch.caller(c), strings.Clone(token), socketPeer{conn})
	cancelAdmit()
	if err := h.transport.Upgrade(c.Writer, c.Request, conn); err != nil {
		// The transport answered the request; the socket never opened.
		if refused == nil {
			conn.Close(websocket.CloseAbnormalClosure, "")
			h.rt.DisconnectClient(sock)
		}
		return
	}
	if refused != nil {
		h.metrics.refused("client", refused)
		msg, closing := sockets.Refusal(refused)
		conn.Send(msg)
		socketPeer{conn}.Close(closing)
		conn.Wait()
		return
	}
	// The socket's SessionActor (a child of its app's actor) handles what happens to it;
	// the app's actor renews its lease and checks its session with the other sockets of
	// its app: the socket has no timer of its own. The handler returns; the reader
	// goroutine hands each frame to the actor, and the writer drains the queue. The
	// reader itself waits for each of its frames (bounded in realtime), so when it ends
	// nothing is left to cancel: the socket needs no context of its own.
	conn.Read(func(msg []byte) { h.rt.ClientMessage(context.Background(), sock, msg) },
		func() { h.rt.DisconnectClient(sock) })
}

// dashboard upgrades an owner's socket: the JWT in ?token, the owner's app, the plan.
// These are refused before the upgrade with the error envelope, as REST calls are.
func (h *wsHandlers) dashboard(c *gin.Context) {
	p, recheckAuth, err, ok := h.dashboardCaller(c)
	if !ok {
		return
	}
	if err != nil {
		h.metrics.refused("dashboard", err)
		fail(c, err)
		return
	}
	if _, err := h.apps.WebSocketApp(c.Request.Context(), apps.Owner{AccountID: p.Account.ID, Plan: p.Account.Plan}, c.Param("appId")); err != nil {
		h.metrics.refused("dashboard", err)
		fail(c, err)
		return
	}
	conn, ok := h.upgrade(c, "dashboard")
	if !ok {
		return
	}
	peer := socketPeer{conn}
	ctx, cancel := context.WithCancel(context.Background())
	// The owner's token may be revoked (logout, password change) while the socket is
	// open: the socket's DashboardActor checks it again on its timer.
	recheck := sockets.WithRecheck(recheckAuth)
	opts := []sockets.DashboardOption{recheck}
	if h.audit != nil {
		// What the socket audits is the socket's from its connection on.
		opts = append(opts, sockets.WithAudit(socketAuditor(h.audit, h.log, h.auditWritten, c, p)))
	}
	d, err := h.rt.ConnectDashboard(ctx, c.Param("appId"), peer, opts...)
	if err != nil {
		cancel()
		h.log.Warn("cannot open a dashboard socket", "app", c.Param("appId"), "err", err)
		msg, closing := sockets.DashboardRefusal(err)
		peer.Send(msg)
		peer.Close(closing)
		conn.Wait()
		return
	}
	conn.Read(func(msg []byte) { h.rt.DashboardMessage(ctx, d, msg) }, func() {
		h.rt.DisconnectDashboard(d)
		cancel()
	})
}

// admitUpgrade applies what is checked of both channels before an upgrade, answering with
// the error envelope: the upgrade limit per IP and the token in the URL (what names it).
func (h *wsHandlers) admitUpgrade(c *gin.Context, what string) (string, bool) {
	if err := rateLimit(c, h.limiter, limitUpgrade, c.ClientIP()); err != nil {
		fail(c, err)
		return "", false
	}
	token := queryValue(c.Request.URL.RawQuery, "token")
	if token == "" {
		fail(c, core.E(core.CodeUnauthorized, "the socket needs ?token=<%s>", what))
		return "", false
	}
	return token, true
}

// isUpgrade answers whether the request asks for a socket; if not, it is answered with
// the envelope.
func (h *wsHandlers) isUpgrade(c *gin.Context) bool {
	if !ws.IsUpgrade(c.Request) {
		fail(c, core.Invalid("Upgrade", "this is a WebSocket endpoint: send an upgrade request"))
		return false
	}
	return true
}

// upgrade turns the request into a started socket; false when the request is not an
// upgrade (answered with the envelope) or the upgrade failed (the transport answered).
func (h *wsHandlers) upgrade(c *gin.Context, channel string) (*ws.Conn, bool) {
	if !h.isUpgrade(c) {
		return nil, false
	}
	conn := h.newConn(channel)
	if err := h.transport.Upgrade(c.Writer, c.Request, conn); err != nil {
		return nil, false
	}
	return conn, true
}

// newConn makes a socket's connection that counts its close and a slow reader.
func (h *wsHandlers) newConn(channel string) *ws.Conn {
	return h.transport.NewConn(h.metrics.onClose[channel])
}

// socketPeer is a socket's transport connection as realtime sends to it and closes it
// (wire.Peer). A struct of one pointer: it goes into the interface without an
// allocation of its own.
type socketPeer struct{ *ws.Conn }

var _ wire.Peer = socketPeer{}

// SendShared sends a broadcast's frame, encoded once for every socket that gets it.
func (p socketPeer) SendShared(f *wire.Shared) bool {
	frame, _ := f.Prepared(prepareFrame).(*ws.Frame)
	return p.SendFrame(frame)
}

func prepareFrame(msg []byte) any { return ws.NewFrame(msg) }

// Close closes the socket with the disconnect's code and reason.
func (p socketPeer) Close(d wire.Disconnect) { p.Conn.Close(d.Code, d.FrameReason()) }

// SocketPath reports whether path is a socket route's (the table's rows whose operation
// is a socket: the program's and an app's dashboard socket). The server's listener serves
// those requests off net/http's connection machinery (transport/ws.Listener), through
// the same router.
func SocketPath(path string) bool {
	for _, pattern := range socketPatterns {
		if matchPattern(pattern, path) {
			return true
		}
	}
	return false
}

// socketPatterns are the socket routes' paths, read from the route table.
var socketPatterns = func() [][]string {
	var out [][]string
	for _, r := range routeIndex.sorted {
		if r.op.sock != "" && r.method == http.MethodGet {
			out = append(out, strings.Split(r.path, "/"))
		}
	}
	return out
}()

// matchPattern reports whether path matches a route's path split at its slashes (a
// ":param" segment matches any non-empty segment).
func matchPattern(pattern []string, path string) bool {
	more := true
	for _, seg := range pattern {
		if !more {
			return false
		}
		var got string
		got, path, more = strings.Cut(path, "/")
		if got != seg && (!strings.HasPrefix(seg, ":") || got == "") {
			return false
		}
	}
	return !more
}

// clientSocketPath is the program's socket route.
const clientSocketPath = "/api/client/ws"
