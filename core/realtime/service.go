package realtime

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

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/core/events"
)

// Peer is the edge's writer of one socket.
type Peer interface {
	// Send queues a text frame. It answers false when the socket is gone or too slow to
	// keep up (the edge then closes it): a send never blocks.
	Send(msg []byte) bool
	// SendShared queues a text frame that goes to many sockets (a broadcast): the edge
	// may encode it once for all of them (Shared.Prepared). Same answer as Send.
	SendShared(f *Shared) bool
	// Close sends a close frame with code and reason after the queued frames, then ends
	// the socket. Calling it again does nothing.
	Close(code int, reason string)
}

// Shared is one message delivered to many sockets of this node.
type Shared struct {
	Msg []byte

	once     sync.Once
	prepared any
}

// Prepared answers the edge's encoded form of the message, made by prepare the first time
// it is asked for: one encoding for every socket that gets it.
func (f *Shared) Prepared(prepare func(msg []byte) any) any {
	f.once.Do(func() { f.prepared = prepare(f.Msg) })
	return f.prepared
}

// Engine is what the channels need from the cluster engine.
type Engine interface {
	cluster.ExpiringSets
	cluster.Values
	cluster.Batches
	cluster.Bus
}

// Sessions validates client sockets (client.Service): one at its admission, and the
// sockets of one app together at every revalidation (one answer per socket).
type Sessions interface {
	CheckSocket(ctx context.Context, c client.Caller, token string) (client.SocketUser, error)
	CheckSockets(ctx context.Context, appID string, socks []client.SocketCheck) []error
}

// Planner runs an app's WebSocket hooks over a client message and answers the actions to
// carry out, in order (core/wshooks).
type Planner interface {
	Plan(ctx context.Context, appID string, m HookInput) ([]HookAction, error)
}

// HookInput is a client message as hooks see it.
type HookInput struct {
	Type string
	// Fields is the whole decoded message: type, data, message and any other members.
	Fields               map[string]any
	UserID, Username, IP string
}

// HookAction is one action a hook planned, its target resolved and its texts rendered.
type HookAction struct {
	HookID, HookName string
	// Type is respond, send_message, broadcast, push_json, kick, ban or log.
	Type string
	// Target is "sender", "user" or "all" ("" for log); UserID is the user for "user".
	Target      string
	UserID      string
	Message     string
	MessageType string
	Reason      string
	Level       string
	Payload     map[string]any
}

// Banner sets a user's banned flag as its app's owner would (the user.ban event follows).
type Banner func(ctx context.Context, appID, userID, reason string) error

// Deps are the parts the channels work with.
type Deps struct {
	Engine   Engine
	Sessions Sessions
	Hooks    Planner
	Ban      Banner
	Events   events.Publisher
	Log      *slog.Logger
	Now      func() time.Time
	// LeaseTTL is how long the sockets of a node that died still count as online
	// (DefaultLeaseTTL when 0, at least MinLeaseTTL).
	LeaseTTL time.Duration
	// DeliveryDelay, when set, receives for each delivery the time from its publication
	// to its frame in the queues of this node's sockets (clocks of nodes may differ).
	DeliveryDelay func(time.Duration)
}

// Deliveries cross the cluster bus on one topic per app, so that a node receives only the
// deliveries of the apps it holds sockets of: it subscribes to an app's topic with its
// first socket of the app (before that socket is admitted, so nothing published after is
// missed) and leaves it with its last.
func busTopic(appID string) string { return "ws:" + appID }

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
	// Close ends the socket after the message with this close code (0: it stays open).
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

	mu         sync.RWMutex
	clients    map[string]map[string]*Client    // app → socket id → socket
	dashboards map[string]map[string]*Dashboard // app → socket id → socket

	// topics holds this node's subscriptions to the apps' bus topics (under mu).
	topics   map[string]*topic
	leaseTTL time.Duration

	// stopTick ends the periodic work (tick), which closes tickDone; work counts the
	// app rechecks under way. stopped is set (under mu) by Close.
	stopTick chan struct{}
	tickDone chan struct{}
	work     sync.WaitGroup
	stopped  bool

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
		ttl = DefaultLeaseTTL
	}
	ttl = max(ttl, MinLeaseTTL)
	return &Service{d: d, leaseTTL: ttl, clients: map[string]map[string]*Client{}, dashboards: map[string]map[string]*Dashboard{},
		topics: map[string]*topic{}}
}

// Start starts the periodic work of the node's sockets (lease renewals and revalidation,
// batched per app). The service subscribes to an app's bus topic when it takes the app's
// first socket.
func (s *Service) Start(context.Context) error {
	s.stopTick, s.tickDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.tickDone)
		s.tick(s.stopTick)
	}()
	return nil
}

// Close ends the subscription and every socket of this node (their programs connect
// again, to another node). The clients' presence is released here, before the engine
// closes, so that the cluster does not count them until their leases run out.
func (s *Service) Close() {
	s.mu.Lock()
	topics := s.topics
	s.topics = map[string]*topic{}
	s.mu.Unlock()
	for _, t := range topics {
		t.leave()
	}
	if s.stopTick != nil {
		close(s.stopTick)
		<-s.tickDone
		s.stopTick = nil
	}
	s.mu.Lock()
	s.stopped = true
	clients, dashboards := s.clients, s.dashboards
	s.clients, s.dashboards = map[string]map[string]*Client{}, map[string]map[string]*Dashboard{}
	s.mu.Unlock()
	for _, m := range dashboards {
		for _, d := range m {
			d.peer.Close(closeGoingAway, "server shutting down")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, m := range clients {
		for _, c := range m {
			c.peer.Close(closeGoingAway, "server shutting down")
			s.left(ctx, c)
		}
	}
	s.work.Wait()
}

// closeGoingAway is RFC 6455's "going away".
const closeGoingAway = 1001

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

// receive hands a bus delivery to this node's matching sockets. It runs on the engine's
// goroutine and never blocks: sends are queued.
func (s *Service) receive(raw []byte) {
	s.received.Add(1)
	var d delivery
	if err := json.Unmarshal(raw, &d); err != nil {
		s.d.Log.Warn("realtime: undecodable bus message", "err", err)
		return
	}
	defer s.queued(d)
	if d.To == toDashboards {
		for _, x := range s.localDashboards(d.App) {
			x.deliver(d.Msg, d.Type)
		}
		return
	}
	var shared *Shared
	if d.To == toClients {
		shared = &Shared{Msg: d.Msg}
	}
	for _, c := range s.localClients(d.App) {
		if d.To == toUser && c.User.UserID != d.User || d.To == toConn && c.ID != d.Conn ||
			d.Session != "" && c.session != d.Session {
			continue
		}
		switch {
		case len(d.Msg) == 0:
		case shared != nil:
			c.peer.SendShared(shared)
		default:
			c.peer.Send(d.Msg)
		}
		if d.Close != 0 {
			c.peer.Close(d.Close, d.Reason)
		}
	}
}

func (s *Service) localClients(appID string) []*Client {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*Client, 0, len(s.clients[appID]))
	for _, c := range s.clients[appID] {
		out = append(out, c)
	}
	return out
}

func (s *Service) localDashboards(appID string) []*Dashboard {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*Dashboard, 0, len(s.dashboards[appID]))
	for _, d := range s.dashboards[appID] {
		out = append(out, d)
	}
	return out
}

// toUserMsg delivers m to a user's client sockets, closing them after it when close != 0.
func (s *Service) toUserMsg(ctx context.Context, appID, userID string, m Outgoing, close int, reason string) error {
	return s.publish(ctx, delivery{App: appID, To: toUser, User: userID, Msg: encode(m), Type: m.Type, Close: close, Reason: reason})
}

func (s *Service) toClientsMsg(ctx context.Context, appID string, m Outgoing) error {
	return s.publish(ctx, delivery{App: appID, To: toClients, Msg: encode(m), Type: m.Type})
}

func (s *Service) toDashboardsMsg(ctx context.Context, appID string, m Outgoing) error {
	return s.publish(ctx, delivery{App: appID, To: toDashboards, Msg: encode(m), Type: m.Type})
}

func newID() string { return uuid.NewString() }

func (s *Service) logEvent(e events.Event) {
	if s.d.Events != nil {
		s.d.Events.Publish(e)
	}
}

// Held answers how many client and dashboard sockets this node holds, for metrics.
func (s *Service) Held() (clients, dashboards int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, m := range s.clients {
		clients += len(m)
	}
	for _, m := range s.dashboards {
		dashboards += len(m)
	}
	return clients, dashboards
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
		Msg:   encode(Outgoing{Type: TypeForceLogout, Data: map[string]any{"reason": "the session ended"}}),
		Close: CloseForceLogout, Reason: "session ended"})
	if err != nil {
		s.d.Log.Warn("realtime: cannot end the sockets of an ended session; the 30 s check will", "app", appID, "err", err)
	}
}
