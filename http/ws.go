package httpapi

import (
	"bufio"
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/realtime"
	"github.com/keyward/keyward/core/wshooks"
)

// limitUpgrade is SPEC 8's socket upgrade limit, per IP, for both channels.
var limitUpgrade = limitRule{"ws.upgrade", realtime.UpgradesPerMinute, time.Minute}

// Socket timing: control-frame pings keep sockets alive and find dead peers (SDKs answer
// them in their libraries; no SDK sends JSON pings by itself, so their absence never drops
// a client).
const (
	wsPingEvery = 25 * time.Second
	wsPongWait  = 60 * time.Second
	wsWriteWait = 10 * time.Second
	wsQueue     = 256
)

// wsHandlers serves the two socket channels and the REST helpers (SPEC 4.9, 4.11).
type wsHandlers struct {
	rt       *realtime.Service
	apps     *apps.Service
	auth     Authenticator
	limiter  cluster.RateLimiter
	hooks    *wshooks.Service
	audit    auditRecorder // the dashboard socket's changes; nil records nothing
	log      *slog.Logger
	metrics  *wsMetrics
	upgrader websocket.Upgrader
	clocks   *socketClocks // the node's pinger and writers' linger clock
}

// wsMetrics count what happens at the socket edge.
type wsMetrics struct {
	closes   *prometheus.CounterVec
	slow     prometheus.Counter
	refusals *prometheus.CounterVec
	panics   prometheus.Counter
	// onClose counts a socket's close, by channel: one function per channel that every
	// peer of it shares (a closure per peer would cost each socket an allocation).
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

func newWSHandlers(rt *realtime.Service, hk *wshooks.Service, a *apps.Service, auth Authenticator, l cluster.RateLimiter, reg prometheus.Registerer, log *slog.Logger) *wsHandlers {
	return &wsHandlers{rt: rt, hooks: hk, apps: a, auth: auth, limiter: l, log: log, metrics: newWSMetrics(reg),
		clocks: &socketClocks{pinger: &pinger{}, linger: &lingerClock{}},
		upgrader: websocket.Upgrader{
			// Idle sockets are the common case: a small read buffer of their own, and
			// no write buffer (the peer encodes its data frames itself; gorilla writes
			// control frames, which need none; the pool serves a peer over a connection
			// that is not a socketConn). The read buffer is the one socketWriter's Hijack
			// answers (ReadBufferSize 0 has gorilla read through it: wsReadBuffer bytes),
			// which the socket's reader peeks into; clients send a few messages a second
			// at most (SPEC 8).
			ReadBufferSize: 0, WriteBufferSize: 4096, WriteBufferPool: &sync.Pool{},
			// Clients are programs that send any Origin or none (CLIENT-SDKS.md §6.1) and
			// authenticate with the token in the URL, not with cookies, so the origin
			// proves nothing and is not checked.
			CheckOrigin: func(*http.Request) bool { return true },
		}}
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
	p := h.newPeer("client")
	admit, cancelAdmit := context.WithTimeout(context.Background(), 10*time.Second)
	// The socket keeps its token for its whole life: a copy of its own, not a piece of
	// the request's line, which it would keep whole.
	sock, refused := h.rt.ConnectClient(admit, ch.caller(c), strings.Clone(token), p)
	cancelAdmit()
	sw := &socketWriter{ResponseWriter: c.Writer}
	conn, err := h.upgrader.Upgrade(sw, c.Request, nil)
	if err != nil {
		// The upgrader answered the request; the socket never opened.
		if refused == nil {
			p.Close(websocket.CloseAbnormalClosure, "")
			h.rt.DisconnectClient(sock)
		}
		return
	}
	p.start(conn)
	if refused != nil {
		h.metrics.refused("client", refused)
		msg, reason := realtime.Refusal(refused)
		p.Send(msg)
		p.Close(realtime.ClosePolicy, reason)
		p.wait()
		return
	}
	// The socket's SessionActor (a child of its app's actor) handles what happens to it;
	// the app's actor renews its lease and checks its session with the other sockets of
	// its app: the socket has no timer of its own. The handler returns; the reader
	// goroutine hands each frame to the actor, and the writer drains the queue. The
	// reader itself waits for each of its frames (bounded in realtime), so when it ends
	// nothing is left to cancel: the socket needs no context of its own.
	p.read(sw.br, func(msg []byte) { h.rt.ClientMessage(context.Background(), sock, msg) },
		func() { h.rt.DisconnectClient(sock) })
}

// dashboard upgrades an owner's socket: the JWT in ?token, the owner's app, the plan.
// These are refused before the upgrade with the error envelope, as REST calls are.
func (h *wsHandlers) dashboard(c *gin.Context) {
	token, ok := h.admitUpgrade(c, "JWT")
	if !ok {
		return
	}
	p, err := h.auth.Authenticate(c.Request.Context(), token)
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
	peer, br, ok := h.upgrade(c, "dashboard")
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	// The owner's token may be revoked (logout, password change) while the socket is
	// open: the socket's DashboardActor checks it again on its timer.
	recheck := realtime.WithRecheck(func(ctx context.Context) error {
		_, err := h.auth.Authenticate(ctx, token)
		return err
	})
	d, err := h.rt.ConnectDashboard(ctx, c.Param("appId"), peer, recheck)
	if err != nil {
		cancel()
		h.log.Warn("cannot open a dashboard socket", "app", c.Param("appId"), "err", err)
		peer.Send(realtime.ErrorMessage("the server cannot list the sessions now; try again"))
		peer.Close(realtime.ClosePolicy, "unavailable")
		peer.wait()
		return
	}
	if h.audit != nil {
		d.Audit = socketAuditor(h.audit, c, p)
	}
	peer.read(br, func(msg []byte) { h.rt.DashboardMessage(ctx, d, msg) }, func() {
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
	token := c.Query("token")
	if token == "" {
		fail(c, core.E(core.CodeUnauthorized, "the socket needs ?token=<%s>", what))
		return "", false
	}
	return token, true
}

// isUpgrade answers whether the request asks for a socket; if not, it is answered with
// the envelope.
func (h *wsHandlers) isUpgrade(c *gin.Context) bool {
	if !websocket.IsWebSocketUpgrade(c.Request) {
		fail(c, core.Invalid("Upgrade", "this is a WebSocket endpoint: send an upgrade request"))
		return false
	}
	return true
}

// upgrade turns the request into a socket with its writer; false when the request is not
// an upgrade (answered with the envelope) or the upgrade failed (the upgrader answered).
func (h *wsHandlers) upgrade(c *gin.Context, channel string) (*peer, *bufio.Reader, bool) {
	if !h.isUpgrade(c) {
		return nil, nil, false
	}
	sw := &socketWriter{ResponseWriter: c.Writer}
	conn, err := h.upgrader.Upgrade(sw, c.Request, nil)
	if err != nil {
		return nil, nil, false
	}
	p := h.newPeer(channel)
	p.start(conn)
	return p, sw.br, true
}

// newPeer makes a socket writer that counts its close and a slow reader.
func (h *wsHandlers) newPeer(channel string) *peer {
	p := newPeer()
	p.onClose = h.metrics.onClose[channel]
	p.clocks = h.clocks
	return p
}

// wireCode is the close code sent for realtime's close reason why; close codes (RFC
// 6455's, SPEC's 4000 range) pass as they are.
func wireCode(why int) int {
	switch why {
	case realtime.CloseNormal:
		return websocket.CloseNormalClosure
	case realtime.ClosePolicy:
		return websocket.ClosePolicyViolation
	case realtime.CloseInternal:
		return websocket.CloseInternalServerErr
	case realtime.CloseGoingAway:
		return websocket.CloseGoingAway
	}
	return why
}

func truncateReason(s string) string {
	// A close frame's reason is at most 123 bytes.
	if len(s) > 120 {
		s = s[:120]
	}
	return strings.ToValidUTF8(s, "")
}

// peer is a socket's writer. It holds little while the socket is idle: a queue that is
// allocated when something is queued (bounded: wsQueue frames), a place in the node's
// pinger, and no goroutine: a frame sent to an idle socket is written at once by the
// sender when the socket takes it without blocking (writeThrough), and otherwise a
// writer goroutine runs while there is something to write, and ends when the queue is
// empty. It implements realtime.Peer. A peer exists before its socket (a
// client socket is admitted before the upgrade): what is sent meanwhile waits until start.
type peer struct {
	mu      sync.Mutex
	conn    *websocket.Conn // set by start
	queue   []any           // []byte or *realtime.Shared
	writing bool            // a writer goroutine runs (or the socket is not started yet: none may)
	closed  bool            // Close was called: nothing more is queued
	ended   bool            // closed and written for the last time (done is closed then)
	// lingering: the writer waits a moment for more frames (wake) before it ends.
	lingering bool
	slot      uint8 // the pinger's slot the socket is in, once started
	code      int16 // a close code (at most 4999): two bytes keep the peer in its size class
	reason    string
	wake      chan struct{}
	// clocks are the node's pinger and the linger clock writers wait on (nil: no pings,
	// and a writer ends at once); one pointer for both keeps a peer in its size class.
	clocks *socketClocks

	// done, made only once someone waits (an idle socket holds no channel), is closed
	// when the socket ends.
	done chan struct{}
	// onClose, when set, is told the close code once the socket is closed.
	onClose func(code int)
}

var _ realtime.Peer = (*peer)(nil)

func newPeer() *peer {
	// writing is true until start: frames queue up, nobody writes them yet.
	return &peer{writing: true}
}

// start gives the peer its socket, starts the pings and writes what was queued.
func (p *peer) start(conn *websocket.Conn) {
	p.mu.Lock()
	p.conn = conn
	p.mu.Unlock()
	if g := p.clocks.ping(); g != nil {
		g.add(p)
	}
	go p.write()
}

func (p *peer) Send(msg []byte) bool { return p.enqueue(msg) }

// SendShared queues a broadcast's frame, encoded once for every socket that gets it.
func (p *peer) SendShared(f *realtime.Shared) bool { return p.enqueue(f) }

func (p *peer) enqueue(msg any) bool {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	if len(p.queue) >= wsQueue {
		p.mu.Unlock()
		// A reader this slow would hold memory for everyone: it is dropped.
		p.Close(websocket.CloseTryAgainLater, "too slow to receive")
		return false
	}
	if !p.writing && len(p.queue) == 0 && p.writeThrough(msg) {
		p.mu.Unlock()
		return true
	}
	p.queue = append(p.queue, msg)
	p.kick()
	p.mu.Unlock()
	return true
}

// writeThrough writes msg from the caller's goroutine when no writer runs and nothing is
// queued, without blocking (socketConn.tryWrite): a frame the socket takes at once costs
// no writer goroutine to wake (most of a broadcast's server CPU per socket beside the
// write itself). What the socket did not take is left to a writer, started here, as is
// anything queued or a Close that came meanwhile. It answers false when the socket could
// not be tried (the caller queues msg). p.mu is held, and released during the write;
// p.writing keeps every other writer out meanwhile (frames sent meanwhile queue up
// behind msg).
func (p *peer) writeThrough(msg any) bool {
	sc, ok := p.conn.NetConn().(*socketConn)
	if !ok || sc.fd < 0 {
		return false
	}
	p.writing = true
	p.mu.Unlock()
	taken, left, err := sc.tryWrite(dataFrame(msg))
	p.mu.Lock()
	switch {
	case !taken:
		// Someone was writing (a ping, a pong): the writer writes msg first, then what
		// was queued meanwhile.
		q := make([]any, 0, len(p.queue)+1)
		p.queue = append(append(q, msg), p.queue...)
		go p.write()
	case err != nil:
		// The socket is gone: the writer closes it (no close frame after a failed write).
		p.closeLocked(websocket.CloseAbnormalClosure, "")
		go p.write()
	case left || len(p.queue) > 0 || p.closed:
		go p.write()
	default:
		p.writing = false
	}
	return true
}

// kick starts a writer if none runs. p.mu is held.
func (p *peer) kick() {
	switch {
	case !p.writing:
		p.writing = true
		go p.write()
	case p.lingering:
		select {
		case p.wake <- struct{}{}:
		default: // woken already
		}
	}
}

// Close ends the socket; code is one of realtime's close reasons (sent as RFC 6455's code
// for it) or a close code.
func (p *peer) Close(code int, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeLocked(code, reason)
}

// closeLocked is Close with p.mu held.
func (p *peer) closeLocked(code int, reason string) {
	if p.closed {
		return
	}
	p.closed = true
	p.code, p.reason = int16(wireCode(code)), truncateReason(reason)
	p.kick()
}

// wait blocks until the socket is closed.
func (p *peer) wait() { <-p.finished() }

// finished is closed when the socket is closed and written for the last time.
func (p *peer) finished() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		p.done = make(chan struct{})
		if p.ended {
			close(p.done)
		}
	}
	return p.done
}

// write writes the queue until it is empty, then ends; after Close it writes what was
// queued before, the close frame, and closes the socket. Before it ends it waits up to a
// tick of its linger clock for more frames: a socket that receives often keeps one
// writer (whose stack has grown to what a write needs) instead of starting one per frame
// (measured: a goroutine start and its stack growth were a sixth of a broadcast's server
// CPU per socket); an idle socket still holds no goroutine.
func (p *peer) write() {
	lingered := false
	for {
		// The rest of a frame written through goes first; none is left behind after it
		// (only a writer that finds none running writes through).
		if p.flushPending() != nil {
			p.Close(websocket.CloseAbnormalClosure, "")
			p.finish(false)
			return
		}
		p.mu.Lock()
		batch := p.queue
		p.queue = nil // the next frames get a fresh queue; an idle peer holds none
		if len(batch) == 0 {
			if !p.closed && p.clocks.lingerer() != nil && !lingered {
				if p.wake == nil {
					p.wake = make(chan struct{}, 1)
				}
				p.lingering, lingered = true, true
				wake := p.wake
				p.mu.Unlock()
				p.clocks.lingerer().wake(wake)
				<-wake // a frame, Close, or the clock's tick
				p.mu.Lock()
				p.lingering = false
				select {
				case <-wake: // a wake that came with the tick
				default:
				}
				p.mu.Unlock()
				continue
			}
			if !p.closed {
				p.writing = false
				p.wake = nil // an idle peer holds no channel
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
			p.finish(true)
			return
		}
		p.mu.Unlock()
		lingered = false
		if p.writeBatch(batch) != nil {
			p.Close(websocket.CloseAbnormalClosure, "")
			p.finish(false)
			return
		}
	}
}

// flushPending writes what a write through left of a frame, if anything.
func (p *peer) flushPending() error {
	if sc, ok := p.conn.NetConn().(*socketConn); ok {
		return sc.flushPending()
	}
	return nil
}

// writeBatch writes the frames that were queued together, in one write to the network
// when there are several.
func (p *peer) writeBatch(batch []any) error {
	sc, ok := p.conn.NetConn().(*socketConn)
	if !ok {
		// Not a socket the handlers upgraded (tests): gorilla writes the frames.
		for _, msg := range batch {
			_ = p.conn.SetWriteDeadline(time.Now().Add(wsWriteWait))
			if err := p.conn.WriteMessage(websocket.TextMessage, textOf(msg)); err != nil {
				return err
			}
		}
		return nil
	}
	corked := len(batch) > 1
	if corked {
		sc.cork()
	}
	for _, msg := range batch {
		_ = sc.SetWriteDeadline(time.Now().Add(wsWriteWait))
		var err error
		if m, ok := msg.(*realtime.Shared); ok {
			err = sc.writeData(sharedFrame(m))
		} else {
			err = sc.writeText(textOf(msg))
		}
		if err != nil {
			if corked {
				_ = sc.uncork()
			}
			return err
		}
	}
	if corked {
		return sc.uncork()
	}
	return nil
}

// textOf is the text of a queued frame.
func textOf(msg any) []byte {
	switch m := msg.(type) {
	case []byte:
		return m
	case *realtime.Shared:
		return m.Msg
	}
	return nil
}

// dataFrame is the frame of a queued message: a broadcast's encoded once for every
// socket that gets it.
func dataFrame(msg any) []byte {
	if m, ok := msg.(*realtime.Shared); ok {
		return sharedFrame(m)
	}
	text := textOf(msg)
	return appendFrame(make([]byte, 0, frameSize(text)), text)
}

// sharedFrame is a broadcast's frame, encoded by the first socket that writes it.
func sharedFrame(m *realtime.Shared) []byte {
	f, _ := m.Prepared(prepare).([]byte)
	return f
}

func prepare(msg []byte) any { return appendFrame(make([]byte, 0, frameSize(msg)), msg) }

// finish sends the close frame (when the socket can still take it) and closes the socket.
func (p *peer) finish(frame bool) {
	if g := p.clocks.ping(); g != nil {
		g.remove(p)
	}
	p.mu.Lock()
	code, reason := int(p.code), p.reason
	p.mu.Unlock()
	if frame && code != websocket.CloseAbnormalClosure {
		_ = p.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(wsWriteWait))
	}
	_ = p.conn.Close()
	if p.onClose != nil {
		p.onClose(code)
	}
	p.mu.Lock()
	p.ended = true
	if p.done != nil {
		close(p.done)
	}
	p.mu.Unlock()
}

// sendPing is the pinger's work for the socket (gorilla lets a control frame be written
// beside a message writer).
func (p *peer) sendPing() {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return
	}
	if p.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(wsWriteWait)) != nil {
		p.Close(websocket.CloseAbnormalClosure, "")
	}
}

// pingSlots divides wsPingEvery: the pinger has a timer per slot of a second, not one
// per socket (a timer costs each idle socket more than a hundred bytes).
const pingSlots = int(wsPingEvery / time.Second)

// pinger pings every started socket of the node every wsPingEvery (give or take the
// second of its slot): a socket joins the slot of the second it starts in, and each slot's
// timer, running while the slot holds sockets, pings them all, each in a goroutine of its
// own as a socket's own timer did (a socket slow to take a ping delays no other).
type pinger struct {
	mu    sync.Mutex
	slots [pingSlots]pingSlot
}

type pingSlot struct {
	peers map[*peer]struct{}
	timer *time.Timer // runs while peers is not empty
}

func (g *pinger) add(p *peer) {
	i := int(time.Now().Unix() % int64(pingSlots))
	p.mu.Lock()
	p.slot = uint8(i)
	p.mu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	s := &g.slots[i]
	if s.peers == nil {
		s.peers = make(map[*peer]struct{})
	}
	s.peers[p] = struct{}{}
	if s.timer == nil {
		s.timer = time.AfterFunc(wsPingEvery, func() { g.ping(i) })
	}
}

func (g *pinger) remove(p *peer) {
	p.mu.Lock()
	i := p.slot
	p.mu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.slots[i].peers, p)
}

// ping is slot i's timer: it pings the slot's sockets and runs again, or stops and frees
// the slot once it is empty.
func (g *pinger) ping(i int) {
	defer func() {
		// A goroutine of the node's: a panic here must not end the process.
		_ = recover()
	}()
	g.mu.Lock()
	defer g.mu.Unlock()
	s := &g.slots[i]
	if len(s.peers) == 0 {
		s.peers, s.timer = nil, nil
		return
	}
	for p := range s.peers {
		go p.sendPing()
	}
	s.timer.Reset(wsPingEvery)
}

// read starts the socket's reader: it passes each text or binary message to fn until the
// socket ends, then closes the peer, waits for its last write and calls end. br is the
// buffer the socket is read through (socketWriter's); nil reads with gorilla alone.
//
// An idle socket's reader is most of what the socket costs: its goroutine's stack. The
// runtime starts a goroutine's stack at 2 KiB (when the stacks it scanned are that small
// on average) and halves a grown one only while less than a quarter of it is in use, so a
// reader that once ran gorilla's frame reading (over 1 KiB of stack while it waits in it)
// holds 4 KiB for good. So the reader waits for each frame in a shallow call, a peek of
// one byte into br (under 1 KiB of stack), handles what came, and goes on waiting in a
// new goroutine with a new small stack; it answers pings and pongs in full control
// frames itself, because gorilla would wait for the next data frame within.
func (p *peer) read(br *bufio.Reader, fn func([]byte), end func()) {
	p.conn.SetReadLimit(realtime.MaxMessageBytes)
	_ = p.conn.SetReadDeadline(time.Now().Add(wsPongWait))
	p.conn.SetPongHandler(func(string) error { return p.conn.SetReadDeadline(time.Now().Add(wsPongWait)) })
	go p.reader(br, fn, end)
}

// reader is one turn of a socket's reader: it waits for the next frame, handles what was
// read, and starts the next turn, or ends the socket.
func (p *peer) reader(br *bufio.Reader, fn func([]byte), end func()) {
	ended := true
	defer func() {
		if ended {
			p.endReading(end)
		}
	}()
	if br != nil {
		// Its error, if any, comes again to the next read (deadline, close, end of stream).
		_, _ = br.Peek(1)
	}
	if ended = !p.readBuffered(br, fn); !ended {
		go p.reader(br, fn, end)
	}
}

// endReading closes the socket once its reader ends.
func (p *peer) endReading(end func()) {
	p.Close(websocket.CloseNormalClosure, "")
	p.wait()
	end()
}

// readBuffered handles frames until br holds no more (for ever when br is nil); false
// when the socket ends.
//
//go:noinline
func (p *peer) readBuffered(br *bufio.Reader, fn func([]byte)) bool {
	for {
		if handled, ok := p.readControl(br); !handled {
			kind, msg, err := p.conn.ReadMessage()
			if err != nil {
				return false
			}
			p.mu.Lock()
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return false
			}
			_ = p.conn.SetReadDeadline(time.Now().Add(wsPongWait))
			if kind == websocket.TextMessage || kind == websocket.BinaryMessage {
				fn(msg)
			}
		} else if !ok {
			return false
		}
		if br != nil && br.Buffered() == 0 {
			return true
		}
	}
}

// Bits of a frame's first two bytes (RFC 6455 5.2).
const (
	wsFinal  = 0x80
	wsMasked = 0x80
)

// readControl handles a ping or pong that starts br as gorilla would (its payload unmasked
// to the conn's handler): handled is false when br starts with anything else, or with a
// frame gorilla refuses (RSV bits, no FIN, unmasked, over 125 bytes), which gorilla then
// reads; ok is false when the handler failed, which ends the socket.
func (p *peer) readControl(br *bufio.Reader) (handled, ok bool) {
	if br == nil {
		return false, false
	}
	h, err := br.Peek(2)
	if err != nil || (h[0] != wsFinal|websocket.PingMessage && h[0] != wsFinal|websocket.PongMessage) ||
		h[1]&wsMasked == 0 || int(h[1]&^wsMasked) > 125 {
		return false, false
	}
	n := int(h[1] &^ wsMasked)
	f, err := br.Peek(2 + 4 + n)
	if err != nil {
		return false, false
	}
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = f[6+i] ^ f[2+i%4]
	}
	handler := p.conn.PongHandler()
	if f[0] == wsFinal|websocket.PingMessage {
		handler = p.conn.PingHandler()
	}
	_, _ = br.Discard(2 + 4 + n)
	return true, handler(string(payload)) == nil
}

// socketClocks are the node's clocks a socket uses: the pinger and the linger clock its
// writer waits on. Either may be nil (tests build peers without them).
type socketClocks struct {
	pinger *pinger
	linger *lingerClock
}

// ping answers the node's pinger; nil when there is none.
func (c *socketClocks) ping() *pinger {
	if c == nil {
		return nil
	}
	return c.pinger
}

// lingerer answers the clock writers linger on; nil when there is none.
func (c *socketClocks) lingerer() *lingerClock {
	if c == nil {
		return nil
	}
	return c.linger
}
