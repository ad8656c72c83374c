package sockets

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/actors/dashboard"
	"github.com/keyward/keyward/actors/session"
	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/realtime"
)

// Engine is what the channels need from the cluster engine.
type Engine interface {
	cluster.Presence
	cluster.Bus
}

// Sessions validates client sockets (client.Service): one at its admission, and the
// sockets of one app together at every revalidation (one answer per socket).
type Sessions interface {
	CheckSocket(ctx context.Context, c client.Caller, token string) (client.SocketUser, error)
	CheckSockets(ctx context.Context, appID string, socks []client.SocketCheck) []error
}

// Registry holds this node's sockets of each app: the app's actor (app.Apps). A socket
// joins and leaves with a message to it, it owns the app's bus subscription and hands each
// delivery to its sockets in its Receive (SetBus), and it drives the periodic work on its
// sockets (SetTicks).
type Registry interface {
	// SetBus has the apps' actors subscribe to their apps' deliveries: each subscribes
	// before its first socket registers and leaves with its last (app.BusConfig).
	SetBus(cfg app.BusConfig)
	// Topics answers how many app topics the actors are subscribed to.
	Topics() int
	// Held answers how many sockets of a kind ("session", "dashboard") the actors hold.
	Held(kind string) int
	Join(ctx context.Context, appID, id string, socket app.Member) error
	Admit(ctx context.Context, appID, id string, socket app.Admittee) error
	// Leave unregisters a socket; a client socket's lease is released before it answers.
	Leave(appID, id string) bool
	AllSockets(ctx context.Context) map[string][]app.Member
	SetTicks(work app.TickWork, ticks ...app.Tick)
	// SetLeases has the apps' actors keep their client sockets' leases (renewals batched
	// per app, releases when they leave); LeaseErrors counts the renewals that failed;
	// RenewNow renews an app's leases now.
	SetLeases(cfg app.LeaseConfig)
	LeaseErrors() uint64
	RenewNow(ctx context.Context, appID string) error
	// Invalidate tells the app's actor that the app changed: it reloads, then runs the
	// ticks marked OnChange.
	Invalidate(appID string)
	// SetLive gives the apps' actors the presence they read their live state from.
	SetLive(r app.LiveReader)
	// Read asks the app's actor for a read of its live state (the online count, the
	// session list, whether a user is online), which it runs outside its Receive and
	// shares among the same requests that arrive while one is under way.
	Read(ctx context.Context, appID string, q app.LiveRead) (app.LiveState, error)
}

// Deps are the parts the channels work with.
type Deps struct {
	Engine   Engine
	Sessions Sessions
	Hooks    realtime.Planner
	Ban      realtime.Banner
	Events   events.Publisher
	// Registry holds the sockets (the node's AppActors); when nil the service makes a
	// directory of its own.
	Registry Registry
	Log      *slog.Logger
	Now      func() time.Time
	// LeaseTTL is how long the sockets of a node that died still count as online
	// (realtime.DefaultLeaseTTL, 10 s, when 0; at least realtime.MinLeaseTTL).
	LeaseTTL time.Duration
	// DashboardRecheck is how often a dashboard socket's token is checked again
	// (realtime.RevalidateEvery when 0).
	DashboardRecheck time.Duration
	// DeliveryDelay, when set, receives for each delivery the time from its publication
	// to its frame in the queues of this node's sockets (clocks of nodes may differ).
	DeliveryDelay func(time.Duration)
}

// Deliveries cross the cluster bus on one topic per app, so that a node receives only the
// deliveries of the apps it holds sockets of: the app's actor subscribes to the app's topic
// before its first socket of the app registers (before that socket is admitted, so nothing
// published after is missed) and leaves it with its last (app.BusConfig).
func busTopic(appID string) string { return busTopicPrefix + appID }

const busTopicPrefix = "ws:"

// busVersion is the format of a bus delivery. Members are only ever added (a node ignores
// members it does not know, and reads a newer version's message for the members it
// knows); a change that an older node would misread takes a new topic prefix instead, so
// that two adjacent releases run side by side during a rolling upgrade.
const busVersion = 1

// Delivery targets on the bus.
const (
	toClients    = "clients"    // every client socket of the app
	toUser       = "user"       // the client sockets of one user
	toConn       = "conn"       // one client socket
	toDashboards = "dashboards" // every dashboard socket of the app
)

// delivery is one bus message.
type delivery struct {
	V    int             `json:"v"`
	App  string          `json:"a"`
	To   string          `json:"t"`
	User string          `json:"u,omitempty"`
	Conn string          `json:"c,omitempty"`
	Msg  json.RawMessage `json:"m,omitempty"`
	// Type is the message type, for dashboards' filters.
	Type string `json:"y,omitempty"`
	// Close ends the socket after the message with this close code of SPEC 6.3's 4000
	// range (wire.Code*; 0: it stays open), and Reason is its reason.
	Close  int    `json:"x,omitempty"`
	Reason string `json:"r,omitempty"`
	// Session narrows a delivery to a user's sockets opened with one session (sessionRef
	// of its token): the token itself never crosses the bus.
	Session string `json:"s,omitempty"`
	// At is when the delivery was published, in Unix microseconds.
	At int64 `json:"at,omitempty"`
}

// Service runs the channels of one node.
type Service struct {
	d Deps

	// reg holds the sockets, in their apps' actors; ownReg closes it when the service
	// made it.
	reg    Registry
	ownReg func()

	mu       sync.RWMutex
	leaseTTL time.Duration

	// stopped is set (under mu) by Close: the periodic work stops.
	stopped bool

	published, received atomic.Uint64
	stats               stats
}

// Traffic answers how many deliveries this node published to the cluster bus and received
// from it, for metrics.
func (s *Service) Traffic() (published, received uint64) {
	return s.published.Load(), s.received.Load()
}

// New builds the service; Start subscribes it to the bus.
func New(d Deps) *Service {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	ttl := d.LeaseTTL
	if ttl == 0 {
		ttl = realtime.DefaultLeaseTTL
	}
	ttl = max(ttl, realtime.MinLeaseTTL)
	s := &Service{d: d, leaseTTL: ttl, reg: d.Registry, ownReg: func() {}}
	if s.reg == nil {
		dir := app.NewApps(func(context.Context, string) (struct{}, error) { return struct{}{}, nil }, app.AppsConfig{Log: d.Log})
		s.reg, s.ownReg = dir, dir.Close
	}
	// The apps' actors read their live state (online counts, session lists) from the engine.
	s.reg.SetLive(d.Engine)
	return s
}

// Start gives the apps' actors the periodic work of their sockets (lease renewals and
// revalidation, batched per app; the revalidation also runs as soon as the app changed). The service subscribes to an app's bus topic when it
// takes the app's first socket.
func (s *Service) Start(context.Context) error {
	s.reg.SetBus(app.BusConfig{Bus: s.d.Engine, TopicPrefix: busTopicPrefix, Deliver: deliverer{s}})
	s.reg.SetLeases(app.LeaseConfig{Presence: s.d.Engine, TTL: s.leaseTTL, Watch: watcher{s}, WatchKind: watchKind})
	s.reg.SetTicks(ticker{s}, app.Tick{Name: tickRevalidate, Every: realtime.RevalidateEvery, OnChange: true})
	return nil
}

// Close ends the subscription and every socket of this node (their programs connect
// again, to another node). The clients' presence is released here, before the engine
// closes, so that the cluster does not count them until their leases run out.
func (s *Service) Close() {
	s.mu.Lock()
	s.stopped = true // the periodic work stops
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for appID, list := range s.reg.AllSockets(ctx) {
		for _, sock := range list {
			h, ok := sock.(held)
			if !ok {
				continue
			}
			s.reg.Leave(appID, h.SocketID()) // a client's lease is released
			h.Close(wire.GoingAway("server shutting down"))
			if m, tell := h.Departure(); tell {
				_ = s.toDashboardsMsg(ctx, appID, m)
			}
		}
	}
	s.ownReg()
}

// publish sends a delivery to every node.
func (s *Service) publish(ctx context.Context, d delivery) error {
	d.V = busVersion
	d.At = time.Now().UnixMicro()
	raw, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("realtime: encode delivery: %w", err)
	}
	if err := s.d.Engine.Publish(ctx, busTopic(d.App), raw); err != nil {
		return fmt.Errorf("realtime: publish: %w", err)
	}
	s.published.Add(1)
	return nil
}

// deliverer is the Service as the app actors' app.Deliverer.
type deliverer struct{ s *Service }

func (d deliverer) Deliver(appID string, raw []byte, sockets []app.Member) {
	d.s.receive(appID, raw, sockets)
}

// receive hands a bus delivery of app appID to this node's matching sockets. It runs in
// the app's actor, which owns the subscription (app.BusConfig), and never blocks:
// sends are queued.
func (s *Service) receive(appID string, raw []byte, sockets []app.Member) {
	s.received.Add(1)
	var d delivery
	if err := json.Unmarshal(raw, &d); err != nil {
		s.d.Log.Warn("realtime: undecodable bus message", "app", appID, "err", err)
		return
	}
	s.deliver(d, sockets)
}

// Topics answers how many app topics this node is subscribed to, for metrics and tests.
func (s *Service) Topics() int { return s.reg.Topics() }

// deliver hands delivery d to the actors of the matching sockets of its app; it runs in
// the app's actor and never blocks. The messages are built once (a broadcast goes to
// every client as one Shared, encoded once by the edge for all of them) and each socket
// takes its own (held.Take): a client's is queued on its writer at once, a dashboard's
// goes to its actor.
func (s *Service) deliver(d delivery, sockets []app.Member) {
	defer s.queued(d)
	var r wire.Routed
	switch {
	case d.To == toDashboards:
		r.ToDashboards = &dashboard.Delivery{Msg: d.Msg, Type: d.Type}
	case d.To == toClients && d.Close == 0 && len(d.Msg) > 0:
		r.ToClients = &wire.Shared{Msg: d.Msg}
	default:
		m := &session.Delivery{Msg: d.Msg}
		if d.Close != 0 {
			m.Close = wire.Disconnect{Code: d.Close, Reason: d.Reason}
		}
		r.ToClients = m
		r.ByUser, r.User = d.To == toUser, d.User
		r.ByConn, r.Conn = d.To == toConn, d.Conn
	}
	r.Session = d.Session
	for _, sock := range sockets {
		if h, ok := sock.(held); ok {
			h.Take(&r)
		}
	}
}

func clientsOf(list []app.Member) []*Client {
	out := make([]*Client, 0, len(list))
	for _, x := range list {
		if c, ok := x.(*Client); ok {
			out = append(out, c)
		}
	}
	return out
}

// toUserMsg delivers m to a user's client sockets, closing them after it with close code
// close (one of wire's 4000 range) when it is not 0.
func (s *Service) toUserMsg(ctx context.Context, appID, userID string, m wire.Outgoing, close int, reason string) error {
	return s.publish(ctx, delivery{App: appID, To: toUser, User: userID, Msg: wire.Encode(m), Type: m.Type, Close: close, Reason: reason})
}

func (s *Service) toClientsMsg(ctx context.Context, appID string, m wire.Outgoing) error {
	return s.publish(ctx, delivery{App: appID, To: toClients, Msg: wire.Encode(m), Type: m.Type})
}

func (s *Service) toDashboardsMsg(ctx context.Context, appID string, m wire.Outgoing) error {
	return s.publish(ctx, delivery{App: appID, To: toDashboards, Msg: wire.Encode(m), Type: m.Type})
}

func newID() string { return uuid.NewString() }

// logEvent stores an event of the sockets for the application log. Nothing waits on its
// answer (a socket connected, a hook's log action), so a failure is only logged.
func (s *Service) logEvent(ctx context.Context, e events.Event) {
	if s.d.Events == nil {
		return
	}
	if err := s.d.Events.Publish(ctx, e); err != nil {
		s.d.Log.Warn("realtime: cannot log an event", "event", e.Name, "app", e.AppID, "err", err)
	}
}

// Held answers how many client and dashboard sockets this node holds, for metrics.
// The apps' actors count them as they register and leave.
func (s *Service) Held() (clients, dashboards int) {
	return s.reg.Held("session"), s.reg.Held("dashboard")
}

// sessionRef names a client session on the bus without its token: the first 16 bytes of
// the token's SHA-256, in hex.
func sessionRef(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:16])
}

// SessionEnded closes the sockets opened with a session that its program ended (client
// end call), on whatever node they are, with force_logout.
func (s *Service) SessionEnded(ctx context.Context, appID, userID, token string) {
	err := s.publish(ctx, delivery{App: appID, To: toUser, User: userID, Session: sessionRef(token),
		Msg:   wire.Encode(wire.Outgoing{Type: wire.TypeForceLogout, Data: map[string]any{"reason": "the session ended"}}),
		Close: wire.CodeForceLogout, Reason: "session ended"})
	if err != nil {
		s.d.Log.Warn("realtime: cannot end the sockets of an ended session; the 30 s check will", "app", appID, "err", err)
	}
}
