package sockets

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/cluster/memory"
	kwredis "github.com/keyward/keyward/cluster/redis"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/realtime"
	"github.com/keyward/keyward/internal/testenv"
)

// recorder is a Peer that keeps what it was sent.
type recorder struct {
	mu     sync.Mutex
	msgs   []map[string]any
	closed int
	reason string
}

func (r *recorder) Send(msg []byte) bool {
	var m map[string]any
	if err := json.Unmarshal(msg, &m); err != nil {
		panic(fmt.Sprintf("not JSON: %q", msg))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed != 0 {
		return false
	}
	r.msgs = append(r.msgs, m)
	return true
}

func (r *recorder) SendShared(f *wire.Shared) bool { return r.Send(f.Msg) }

func (r *recorder) Close(d wire.Disconnect) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed == 0 {
		r.closed, r.reason = d.Code, d.Reason
	}
}

func (r *recorder) types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, m := range r.msgs {
		out = append(out, m["type"].(string))
	}
	return out
}

func (r *recorder) closedWith() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// waitUntil polls cond for up to 30 s (a loaded machine): bus deliveries arrive on the engine's goroutine.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sessions admits the tokens it knows, as users of app "app".
type sessions map[string]client.SocketUser

func (s sessions) CheckSocket(_ context.Context, c client.Caller, token string) (client.SocketUser, error) {
	u, ok := s[token]
	if !ok {
		return client.SocketUser{}, core.E(core.CodeUnauthorized, "unknown session")
	}
	u.IP = c.IP
	return u, nil
}

func (s sessions) CheckSockets(ctx context.Context, _ string, socks []client.SocketCheck) []error {
	errs := make([]error, len(socks))
	for i, sk := range socks {
		_, errs[i] = s.CheckSocket(ctx, sk.Caller, sk.Token)
	}
	return errs
}

// pair starts two services ("nodes") sharing one cluster: one memory engine, or two Redis
// engines on one key prefix, as two nodes share Redis.
type pair func(t testing.TB, known sessions) (*Service, *Service)

func memoryPair(t testing.TB, known sessions) (*Service, *Service) {
	t.Helper()
	e := memory.New(memory.Config{})
	t.Cleanup(func() { e.Close() })
	return startNodes(t, known, e, e)
}

func redisPair(t testing.TB, known sessions) (*Service, *Service) {
	t.Helper()
	engines := redisEngines(t)
	return startNodes(t, known, engines[0], engines[1])
}

// redisEngines answers two engines on the test Redis under one prefix: two nodes' views
// of one cluster.
func redisEngines(t testing.TB) [2]Engine {
	t.Helper()
	url := testenv.RedisURL(t)
	prefix := testenv.UniqueName("kwtest:") + ":"
	var engines [2]Engine
	for i := range engines {
		e, err := kwredis.New(t.Context(), kwredis.Config{URL: url, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		engines[i] = e
	}
	return engines
}

func startNodes(t testing.TB, known sessions, ea, eb Engine) (*Service, *Service) {
	t.Helper()
	var nodes [2]*Service
	for i, e := range []Engine{ea, eb} {
		nodes[i] = New(Deps{Engine: e, Sessions: known})
		if err := nodes[i].Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nodes[i].Close)
	}
	return nodes[0], nodes[1]
}

// onEachEngine runs fn with the memory engine and with Redis.
func onEachEngine(t *testing.T, fn func(t *testing.T, twoNodes pair)) {
	t.Run("memory", func(t *testing.T) { fn(t, memoryPair) })
	t.Run("redis", func(t *testing.T) { fn(t, redisPair) })
}

func user(id string) client.SocketUser {
	return client.SocketUser{Token: "tok-" + id, AppID: "app", AccountID: "acc", UserID: id, Username: "name-" + id}
}

func TestDeliveriesAcrossNodes(t *testing.T) { onEachEngine(t, testDeliveriesAcrossNodes) }

func testDeliveriesAcrossNodes(t *testing.T, twoNodes pair) {
	known := sessions{"tok-u1": user("u1"), "tok-u2": user("u2")}
	a, b := twoNodes(t, known)
	ctx := t.Context()

	p1, p2 := &recorder{}, &recorder{}
	c1, err := a.ConnectClient(ctx, client.Caller{IP: "192.0.2.1"}, "tok-u1", p1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ConnectClient(ctx, client.Caller{IP: "192.0.2.2"}, "tok-u2", p2); err != nil {
		t.Fatal(err)
	}
	dash := &recorder{}
	if _, err := b.ConnectDashboard(ctx, "app", dash); err != nil {
		t.Fatal(err)
	}
	if got := dash.types(); len(got) < 2 || got[0] != wire.TypeOnlineCount || got[1] != wire.TypeSessions {
		t.Fatalf("dashboard on connect: %v", got)
	}
	if n, err := a.Online(ctx, "app"); err != nil || n != 2 {
		t.Fatalf("online = %d, %v", n, err)
	}

	// A broadcast on node B reaches both nodes' clients; a chat only its user.
	if n, err := b.Broadcast(ctx, "app", "hello", ""); err != nil || n != 2 {
		t.Fatalf("broadcast: %d, %v", n, err)
	}
	if online, err := b.Chat(ctx, "app", "u1", "psst"); err != nil || !online {
		t.Fatalf("chat: %v, %v", online, err)
	}
	waitUntil(t, "deliveries", func() bool { return len(p1.types()) == 2 && len(p2.types()) == 1 })

	// A user variable change goes to its user only; an app variable to all.
	a.HandleEvent(events.Event{Name: "variable.update", AppID: "app", Data: map[string]any{"scope": "user", "userId": "u2", "key": "k", "value": "v"}})
	a.HandleEvent(events.Event{Name: "variable.delete", AppID: "app", Data: map[string]any{"scope": "app", "key": "motd"}})
	waitUntil(t, "variable events", func() bool { return len(p1.types()) == 3 && len(p2.types()) == 3 })
	if got := p2.types(); got[1] != wire.TypeUserVariableUpd || got[2] != wire.TypeVariableDelete {
		t.Fatalf("u2 got %v", got)
	}

	// The client's chat reaches the dashboard on the other node.
	a.ClientMessage(ctx, c1, []byte(`{"type":"chat","message":"hi owner"}`))
	waitUntil(t, "chat at the dashboard", func() bool { return slices.Contains(dash.types(), wire.TypeChat) })

	// The same user connecting on node B replaces the socket on node A.
	p1b := &recorder{}
	if _, err := b.ConnectClient(ctx, client.Caller{IP: "192.0.2.1"}, "tok-u1", p1b); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "replaced socket closed", func() bool { return p1.closedWith() == wire.CodeReplaced })
	a.DisconnectClient(c1)
	if n, _ := a.Online(ctx, "app"); n != 2 {
		t.Fatalf("online after a replacement = %d, want 2", n)
	}

	// Unknown sessions are refused with the check's code.
	_, err = a.ConnectClient(ctx, client.Caller{IP: "192.0.2.9"}, "tok-nobody", &recorder{})
	if code, _ := realtime.Explain(err); err == nil || code != core.CodeUnauthorized {
		t.Fatalf("unknown session: %v", err)
	}
}

func TestAppSocketLimit(t *testing.T) { onEachEngine(t, testAppSocketLimit) }

func testAppSocketLimit(t *testing.T, twoNodes pair) {
	known := sessions{}
	for i := range realtime.MaxClientsPerApp + 1 {
		id := fmt.Sprintf("u%d", i)
		known["tok-"+id] = user(id)
	}
	a, b := twoNodes(t, known)
	ctx := t.Context()
	for i := range realtime.MaxClientsPerApp {
		node := []*Service{a, b}[i%2]
		if _, err := node.ConnectClient(ctx, client.Caller{IP: "192.0.2.1"}, fmt.Sprintf("tok-u%d", i), &recorder{}); err != nil {
			t.Fatalf("socket %d: %v", i, err)
		}
	}
	_, err := a.ConnectClient(ctx, client.Caller{IP: "192.0.2.1"}, fmt.Sprintf("tok-u%d", realtime.MaxClientsPerApp), &recorder{})
	if code, _ := realtime.Explain(err); err == nil || code != core.CodePlanLimit {
		t.Fatalf("socket %d: %v, want PLAN_LIMIT", realtime.MaxClientsPerApp+1, err)
	}
	// A user already connected may reconnect at the limit: the new socket replaces the old.
	if _, err := b.ConnectClient(ctx, client.Caller{IP: "192.0.2.1"}, "tok-u0", &recorder{}); err != nil {
		t.Fatalf("reconnect at the limit: %v", err)
	}
}

func TestClientMessageRate(t *testing.T) { onEachEngine(t, testClientMessageRate) }

func testClientMessageRate(t *testing.T, twoNodes pair) {
	known := sessions{"tok-u1": user("u1")}
	a, _ := twoNodes(t, known)
	p := &recorder{}
	c, err := a.ConnectClient(t.Context(), client.Caller{IP: "192.0.2.1"}, "tok-u1", p)
	if err != nil {
		t.Fatal(err)
	}
	for range realtime.ClientMessages + 1 {
		a.ClientMessage(t.Context(), c, []byte(`{"type":"ping"}`))
	}
	got := p.types()
	if len(got) != realtime.ClientMessages+1 || got[realtime.ClientMessages-1] != wire.TypePong || got[realtime.ClientMessages] != wire.TypeError {
		t.Fatalf("after %d pings: %v", realtime.ClientMessages+1, got)
	}
	if p.closedWith() != 0 {
		t.Fatal("a rate-limited socket must stay open")
	}
}

// TestAppSocketLimitUnderRace: sockets connecting at once on two nodes for the last places
// never take the app beyond its limit.
func TestAppSocketLimitUnderRace(t *testing.T) { onEachEngine(t, testAppSocketLimitUnderRace) }

func testAppSocketLimitUnderRace(t *testing.T, twoNodes pair) {
	known := sessions{}
	for i := range realtime.MaxClientsPerApp + 40 {
		id := fmt.Sprintf("u%d", i)
		known["tok-"+id] = user(id)
	}
	a, b := twoNodes(t, known)
	ctx := t.Context()
	for i := range realtime.MaxClientsPerApp - 10 {
		if _, err := a.ConnectClient(ctx, client.Caller{IP: "192.0.2.1"}, fmt.Sprintf("tok-u%d", i), &recorder{}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := realtime.MaxClientsPerApp - 10; i < realtime.MaxClientsPerApp+40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = []*Service{a, b}[i%2].ConnectClient(ctx, client.Caller{IP: "192.0.2.1"}, fmt.Sprintf("tok-u%d", i), &recorder{})
		}()
	}
	wg.Wait()
	if n, err := a.Online(ctx, "app"); err != nil || n > realtime.MaxClientsPerApp {
		t.Fatalf("online after racing connects = %d (%v), limit %d", n, err, realtime.MaxClientsPerApp)
	}
}

// TestOneSocketPerUserUnderRace: two sockets of one user connecting at once on two nodes
// leave one.
func TestOneSocketPerUserUnderRace(t *testing.T) { onEachEngine(t, testOneSocketPerUserUnderRace) }

func testOneSocketPerUserUnderRace(t *testing.T, twoNodes pair) {
	a, b := twoNodes(t, sessions{"tok-u1": user("u1")})
	ctx := t.Context()
	for round := range 20 {
		var wg sync.WaitGroup
		admitted := make([]*Client, 2)
		for i, node := range []*Service{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				admitted[i], _ = node.ConnectClient(ctx, client.Caller{IP: "192.0.2.1"}, "tok-u1", &recorder{})
			}()
		}
		wg.Wait()
		n, err := a.userSockets(ctx, "app", "u1")
		if err != nil || n != 1 {
			t.Fatalf("round %d: the user has %d live sockets (%v), want one", round, n, err)
		}
		if admitted[0] == nil && admitted[1] == nil {
			t.Fatalf("round %d: both sockets refused", round)
		}
	}
}

// TestBurstOverTheRate: a socket that sends hundreds of messages at once gets at most one
// error per window (the replies would fill its queue and have it closed as too slow), and
// stays open; the same holds for a dashboard.
func TestBurstOverTheRate(t *testing.T) { onEachEngine(t, testBurstOverTheRate) }

func testBurstOverTheRate(t *testing.T, twoNodes pair) {
	a, _ := twoNodes(t, sessions{"tok-u1": user("u1")})
	now := time.Unix(5000, 0)
	a.d.Now = func() time.Time { return now }
	p := &recorder{}
	c, err := a.ConnectClient(t.Context(), client.Caller{IP: "192.0.2.1"}, "tok-u1", p)
	if err != nil {
		t.Fatal(err)
	}
	dp := &recorder{}
	d, err := a.ConnectDashboard(t.Context(), "app", dp)
	if err != nil {
		t.Fatal(err)
	}
	count := func(r *recorder, typ string) int {
		n := 0
		for _, x := range r.types() {
			if x == typ {
				n++
			}
		}
		return n
	}
	for range 300 {
		a.ClientMessage(t.Context(), c, []byte(`{"type":"ping"}`))
		a.DashboardMessage(t.Context(), d, []byte(`{"type":"ping"}`))
	}
	if pongs, errs := count(p, wire.TypePong), count(p, wire.TypeError); pongs != realtime.ClientMessages || errs != 1 {
		t.Fatalf("client after a burst of 300: %d pongs, %d errors; want %d and 1", pongs, errs, realtime.ClientMessages)
	}
	if pongs, errs := count(dp, wire.TypePong), count(dp, wire.TypeError); pongs != realtime.DashboardMessages || errs != 1 {
		t.Fatalf("dashboard after a burst of 300: %d pongs, %d errors; want %d and 1", pongs, errs, realtime.DashboardMessages)
	}
	if p.closedWith() != 0 || dp.closedWith() != 0 {
		t.Fatal("a socket over its rate must stay open")
	}
	// The next window: the socket is served again, and told once more if it overdoes it.
	now = now.Add(realtime.ClientWindow + time.Millisecond)
	for range 2 * realtime.ClientMessages {
		a.ClientMessage(t.Context(), c, []byte(`{"type":"ping"}`))
	}
	if pongs, errs := count(p, wire.TypePong), count(p, wire.TypeError); pongs != 2*realtime.ClientMessages || errs != 2 {
		t.Fatalf("client in the next window: %d pongs, %d errors", pongs, errs)
	}
}

// TestKickSaysWhy: a kicked socket, on whatever node, gets force_logout with the reason
// before the close frame (SPEC 6.3 lists "user kicked" among force_logout's reasons).
func TestKickSaysWhy(t *testing.T) { onEachEngine(t, testKickSaysWhy) }

func testKickSaysWhy(t *testing.T, twoNodes pair) {
	a, b := twoNodes(t, sessions{"tok-u1": user("u1")})
	p := &recorder{}
	if _, err := a.ConnectClient(t.Context(), client.Caller{IP: "192.0.2.1"}, "tok-u1", p); err != nil {
		t.Fatal(err)
	}
	if online, err := b.Kick(t.Context(), "app", "u1", "be nice"); err != nil || !online {
		t.Fatalf("kick: %v, %v", online, err)
	}
	waitUntil(t, "kicked", func() bool { return p.closedWith() == wire.CodeKicked })
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.msgs) != 1 || p.msgs[0]["type"] != wire.TypeForceLogout || p.msgs[0]["data"].(map[string]any)["reason"] != "be nice" || p.reason != "be nice" {
		t.Fatalf("kicked socket got %v, closed with %q", p.msgs, p.reason)
	}
}

// TestBusTrafficOnlyForHeldApps: deliveries travel on one bus topic per app, and a node
// subscribes to an app's topic only while it holds sockets of the app, so a node receives
// no bus traffic for the apps it holds no sockets of.
func TestBusTrafficOnlyForHeldApps(t *testing.T) { onEachEngine(t, testBusTrafficOnlyForHeldApps) }

func testBusTrafficOnlyForHeldApps(t *testing.T, twoNodes pair) {
	a, b := twoNodes(t, sessions{"tok-u1": user("u1")})
	ctx := t.Context()
	p := &recorder{}
	c, err := a.ConnectClient(ctx, client.Caller{IP: "192.0.2.1"}, "tok-u1", p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := b.ConnectDashboard(ctx, "other", &recorder{}) // b holds a socket of another app
	if err != nil {
		t.Fatal(err)
	}
	if a.Topics() != 1 || b.Topics() != 1 {
		t.Fatalf("topics: a %d, b %d; want 1 each", a.Topics(), b.Topics())
	}
	_, bBefore := b.Traffic()
	for i := range 5 {
		if _, err := b.Broadcast(ctx, "app", fmt.Sprintf("hello %d", i), ""); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "broadcasts at node a", func() bool { return len(p.types()) == 5 })
	if _, got := b.Traffic(); got != bBefore {
		t.Fatalf("node b received %d bus messages of an app it holds no socket of", got-bBefore)
	}

	// With its last socket of the app, node a leaves the app's topic.
	a.DisconnectClient(c)
	b.DisconnectDashboard(d)
	if a.Topics() != 0 || b.Topics() != 0 {
		t.Fatalf("topics after the last sockets left: a %d, b %d", a.Topics(), b.Topics())
	}
	_, aBefore := a.Traffic()
	if _, err := b.Broadcast(ctx, "app", "nobody listens", ""); err != nil {
		t.Fatal(err)
	}
	// A message published after this one on a topic a does hold arrives after it: when it
	// is there, the broadcast would have been too.
	probe := &recorder{}
	if _, err := a.ConnectDashboard(ctx, "probe", probe); err != nil {
		t.Fatal(err)
	}
	if err := b.toDashboardsMsg(ctx, "probe", wire.Outgoing{Type: wire.TypeChat}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "probe", func() bool { return slices.Contains(probe.types(), wire.TypeChat) })
	if _, got := a.Traffic(); got != aBefore+1 {
		t.Fatalf("node a received %d bus messages after it left the app, want only the probe", got-aBefore)
	}
}
