package ws

import (
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Defaults of Config.
const (
	// DefaultPingEvery: control-frame pings keep sockets alive through proxies and find
	// dead peers (clients answer them in their libraries).
	DefaultPingEvery = 25 * time.Second
	// DefaultPongWait: a socket that sent nothing, not even a pong, for this long is dead.
	DefaultPongWait = 60 * time.Second
	// DefaultWriteWait bounds one write to a socket (a frame, a ping, the close frame).
	DefaultWriteWait = 10 * time.Second
	// DefaultQueue is how many frames wait for a socket at most before it is closed as
	// too slow to receive (1013).
	DefaultQueue = 256
	// DefaultHandshakeTimeout bounds the writing of the upgrade's answer.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultReadLimit bounds one incoming message.
	DefaultReadLimit = 64 << 10
)

// Config is how a node's sockets are upgraded, read and written. Its zero value is
// usable: every zero field takes its default. The upgrade itself is hardened whatever
// the settings (see New): no compression, no subprotocol, no write buffer of its own.
type Config struct {
	// PingEvery is how often each socket is pinged (rounded to whole seconds: the node
	// has a timer per second of it, not one per socket).
	PingEvery time.Duration
	// PongWait is how long a socket may stay silent (no frame, no pong) before its
	// reader gives up on it.
	PongWait time.Duration
	// WriteWait bounds one write.
	WriteWait time.Duration
	// Queue bounds the frames waiting for a socket; a socket whose queue is full is
	// closed with 1013 (it would hold memory for everyone).
	Queue int
	// ReadLimit bounds one incoming message; a larger one ends the socket (1009).
	ReadLimit int64
	// HandshakeTimeout bounds the writing of the upgrade's answer.
	HandshakeTimeout time.Duration
	// CheckOrigin decides whether a request's Origin may open a socket. Nil allows any
	// origin: clients that authenticate with a token in the URL rather than with cookies
	// gain nothing from the check (a page elsewhere cannot ride on a cookie), and
	// programs send any Origin or none.
	CheckOrigin func(*http.Request) bool
	// Refusal is the body of the answer to an upgrade request the upgrade refuses (a
	// missing or wrong Sec-WebSocket-Key or version, a method other than GET, a refused
	// origin), as JSON: the caller's error envelope. Nil answers a plain-text body.
	Refusal func(status int, reason string) []byte
	// Log reports a panic in a socket's reader or pinger (the socket is closed with
	// 1011; the process goes on). Nil logs to slog's default logger.
	Log *slog.Logger
}

// withDefaults answers c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.PingEvery < time.Second {
		c.PingEvery = DefaultPingEvery
	}
	if c.PongWait <= 0 {
		c.PongWait = DefaultPongWait
	}
	if c.WriteWait <= 0 {
		c.WriteWait = DefaultWriteWait
	}
	if c.Queue <= 0 {
		c.Queue = DefaultQueue
	}
	if c.ReadLimit <= 0 {
		c.ReadLimit = DefaultReadLimit
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.CheckOrigin == nil {
		c.CheckOrigin = func(*http.Request) bool { return true }
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return c
}

// Transport is a node's socket transport: its upgrade, the pinger of every socket it
// opened, the poller their reads wait in, and the clock their writers linger on. One per
// node; it holds a goroutine of its own only while sockets are open (the read poller's;
// the pinger's timers run then too), so it needs no stopping.
type Transport struct {
	cfg      Config
	upgrader websocket.Upgrader
	pinger   *pinger
	linger   *lingerClock
	reads    *readPoller // nil where sockets are not polled (each reader waits in a goroutine)
	fanout   *fanoutWriters
}

// New makes a node's transport.
func New(cfg Config) *Transport {
	cfg = cfg.withDefaults()
	t := &Transport{cfg: cfg, pinger: newPinger(cfg.PingEvery), linger: &lingerClock{}}
	t.pinger.panicked = panicReport(t, "pinger")
	t.reads = newReadPoller(panicReport(t, "read poller"))
	t.fanout = newFanoutWriters(panicReport(t, "fan-out writer"))
	t.upgrader = websocket.Upgrader{
		HandshakeTimeout: cfg.HandshakeTimeout,
		// Idle sockets are the common case: no read buffer of the upgrader's own (it
		// reads through the one socketWriter's Hijack answers: wsReadBuffer bytes, which
		// the socket's reader peeks into), and no write buffer (a Conn encodes its data
		// frames itself; gorilla writes control frames, which need none; the pool serves
		// a connection that is not a socketConn).
		ReadBufferSize: 0, WriteBufferSize: 4096, WriteBufferPool: &sync.Pool{},
		// No permessage-deflate: it costs each socket a compressor's memory and lets a
		// small frame inflate to a large message.
		EnableCompression: false,
		// No subprotocol is offered: a client asking for one gets none.
		Subprotocols: nil,
		CheckOrigin:  cfg.CheckOrigin,
		Error:        t.refuse,
	}
	return t
}

// refuse answers an upgrade request the upgrade refused with Config.Refusal's body.
func (t *Transport) refuse(w http.ResponseWriter, _ *http.Request, status int, reason error) {
	w.Header().Set("Sec-Websocket-Version", "13")
	if t.cfg.Refusal == nil {
		http.Error(w, http.StatusText(status), status)
		return
	}
	body := t.cfg.Refusal(status, reason.Error())
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// IsUpgrade answers whether r asks for a socket.
func IsUpgrade(r *http.Request) bool { return websocket.IsWebSocketUpgrade(r) }

// ErrRefused: the upgrade was refused and answered (Config.Refusal), or the connection
// failed while it was answered; the socket never opened.
var ErrRefused = errors.New("ws: upgrade refused")

// NewConn makes a socket's Conn before its upgrade: what is sent to it waits until
// Upgrade starts it. onClose, when not nil, is told the close code once the socket
// ended (one function every socket of a kind shares: a closure per socket would cost
// each an allocation).
func (t *Transport) NewConn(onClose func(code int)) *Conn {
	c := newConn()
	c.node = t
	c.onClose = onClose
	return c
}

// Upgrade answers r's upgrade and starts c on the socket: its pings, and the writing of
// what was sent to it. On error the socket never opened and the request was answered.
// Reading starts with Conn.Read.
func (t *Transport) Upgrade(w http.ResponseWriter, r *http.Request, c *Conn) error {
	conn, err := t.upgrader.Upgrade(&socketWriter{ResponseWriter: w}, r, nil)
	if err != nil {
		return errors.Join(ErrRefused, err)
	}
	c.start(conn)
	return nil
}

// Settings of a Transport; a Conn without one (tests) takes the defaults and has no
// pinger and no linger clock.

func (t *Transport) writeWait() time.Duration {
	if t == nil || t.cfg.WriteWait <= 0 {
		return DefaultWriteWait
	}
	return t.cfg.WriteWait
}

func (t *Transport) pongWait() time.Duration {
	if t == nil || t.cfg.PongWait <= 0 {
		return DefaultPongWait
	}
	return t.cfg.PongWait
}

func (t *Transport) queue() int {
	if t == nil || t.cfg.Queue <= 0 {
		return DefaultQueue
	}
	return t.cfg.Queue
}

func (t *Transport) readLimit() int64 {
	if t == nil || t.cfg.ReadLimit <= 0 {
		return DefaultReadLimit
	}
	return t.cfg.ReadLimit
}

func (t *Transport) log() *slog.Logger {
	if t == nil || t.cfg.Log == nil {
		return slog.Default()
	}
	return t.cfg.Log
}

// ping answers the node's pinger; nil when there is none.
func (t *Transport) ping() *pinger {
	if t == nil {
		return nil
	}
	return t.pinger
}

// readPoller answers the poller idle sockets wait for data in; nil when there is none.
func (t *Transport) readPoller() *readPoller {
	if t == nil {
		return nil
	}
	return t.reads
}

// lingerer answers the clock writers linger on; nil when there is none.
func (t *Transport) lingerer() *lingerClock {
	if t == nil {
		return nil
	}
	return t.linger
}

// fanouts answers the writers of broadcasts' frames; nil when there are none.
func (t *Transport) fanouts() *fanoutWriters {
	if t == nil {
		return nil
	}
	return t.fanout
}
