package sockets

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/cluster/memory"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/core/realtime"
)

// gatedPlanner plans one respond action per message, after its gate opens.
type gatedPlanner struct {
	entered chan struct{}
	gate    chan struct{}
}

func (g *gatedPlanner) Plan(ctx context.Context, _ string, m realtime.HookInput) ([]realtime.HookAction, error) {
	g.entered <- struct{}{}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return []realtime.HookAction{{HookID: "h", Type: "respond", Target: "sender", Message: "answer to " + m.Type}}, nil
}

// oneNode is a service on the memory engine with its own actor directory.
func oneNode(t *testing.T, d Deps) (*Service, *app.Apps[struct{}]) {
	t.Helper()
	engine := memory.New(memory.Config{})
	t.Cleanup(func() { engine.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := app.NewApps(func(context.Context, string) (struct{}, error) { return struct{}{}, nil }, app.AppsConfig{Log: quiet})
	t.Cleanup(dir.Close)
	d.Engine, d.Registry, d.Log = engine, dir, quiet
	s := New(d)
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	withPanicOnPurpose(s, dir)
	return s, dir
}

// withPanicOnPurpose has a delivery of panicOnPurpose make the app's actor panic
// (failAppActor); the other deliveries go to the service as usual.
func withPanicOnPurpose(s *Service, dir *app.Apps[struct{}]) {
	panicking := make(chan struct{}, 16)
	panickingOf.Store(s, panicking)
	dir.SetBus(app.BusConfig{Bus: s.d.Engine, TopicPrefix: busTopicPrefix, Deliver: panicker{s: s, panicking: panicking}})
}

// panicker delivers to the service, but panics on panicOnPurpose.
type panicker struct {
	s         *Service
	panicking chan struct{}
}

func (p panicker) Deliver(appID string, raw []byte, sockets []app.Member) {
	if string(raw) == panicOnPurpose {
		p.panicking <- struct{}{}
		panic("on purpose")
	}
	p.s.receive(appID, raw, sockets)
}

const panicOnPurpose = "panic on purpose"

// failAppActor makes the app's actor on s's node panic, with a message.
func failAppActor(t *testing.T, s *Service, appID string) {
	t.Helper()
	if err := s.d.Engine.Publish(t.Context(), busTopic(appID), []byte(panicOnPurpose)); err != nil {
		t.Fatal(err)
	}
	// The bus delivers on its own goroutine: wait until the actor is panicking, so that
	// what the test sends next is queued behind the restart (as a direct failure was).
	ch, _ := panickingOf.Load(s)
	select {
	case <-ch.(chan struct{}):
	case <-time.After(10 * time.Second):
		t.Fatal("the app's actor was not made to panic")
	}
}

// panickingOf holds, per service of a test, the channel its app actors' panics on purpose
// are told on (withPanicOnPurpose); test-only.
var panickingOf sync.Map // *Service → chan struct{}

// TestSessionActorKeepsTheOrder: what happens to a client socket happens in order in its
// SessionActor. A frame that arrives while the previous one's I/O runs (its hooks) waits
// for it, without holding back deliveries; the answer to the earlier frame comes before
// the answer to the later; a close delivered after them comes last.
func TestSessionActorKeepsTheOrder(t *testing.T) {
	planner := &gatedPlanner{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	s, _ := oneNode(t, Deps{Sessions: sessions{"tok-u1": user("u1")}, Hooks: planner})
	ctx := t.Context()
	p := &recorder{}
	c, err := s.ConnectClient(ctx, client.Caller{IP: "192.0.2.1"}, "tok-u1", p)
	if err != nil {
		t.Fatal(err)
	}
	handled := make(chan struct{})
	go func() {
		defer close(handled)
		s.ClientMessage(ctx, c, []byte(`{"type":"hello"}`))
	}()
	<-planner.entered // the actor handed the frame's hooks to a goroutine

	// A ping, then a delivery, reach the actor in this order while the hooks run.
	pinged := make(chan struct{})
	c.Ref().Tell(app.Frame{Raw: []byte(`{"type":"ping"}`), Done: pinged})
	if _, err := s.Push(ctx, "app", "u1", map[string]any{"n": 1.0}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the delivery", func() bool { return slices.Contains(p.types(), wire.TypeCustom) })
	if got := p.types(); slices.Contains(got, wire.TypePong) || slices.Contains(got, wire.TypeMessage) {
		t.Fatalf("the ping was answered before the frame before it: %v", got)
	}
	select {
	case <-handled:
		t.Fatal("the reader was let go before its frame was handled")
	default:
	}

	close(planner.gate)
	<-handled
	<-pinged
	if _, err := s.Kick(ctx, "app", "u1", "bye"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the kick", func() bool { return p.closedWith() != 0 })
	want := []string{wire.TypeCustom, wire.TypeMessage, wire.TypePong, wire.TypeForceLogout}
	if got := p.types(); !slices.Equal(got, want) || p.closedWith() != wire.CodeKicked {
		t.Fatalf("socket saw %v then close %d; want %v then %d", got, p.closedWith(), want, wire.CodeKicked)
	}
	s.DisconnectClient(c)
}

// TestAppActorRestartKeepsSessionState: when the app's actor fails and restarts, its
// sockets' actors are spawned again with the state they had: the session's status and
// metadata, its message limiter, the dashboard's filters; and they answer again.
func TestAppActorRestartKeepsSessionState(t *testing.T) {
	s, dir := oneNode(t, Deps{Sessions: sessions{"tok-u1": user("u1")}})
	ctx := t.Context()
	p, dp := &recorder{}, &recorder{}
	c, err := s.ConnectClient(ctx, client.Caller{IP: "192.0.2.1"}, "tok-u1", p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.ConnectDashboard(ctx, "app", dp)
	if err != nil {
		t.Fatal(err)
	}
	s.DashboardMessage(ctx, d, []byte(`{"type":"set_filters","events":["status"]}`))
	s.ClientMessage(ctx, c, []byte(`{"type":"set_status","status":"away"}`))
	s.ClientMessage(ctx, c, []byte(`{"type":"set_metadata","metadata":{"level":3}}`))
	for range realtime.ClientMessages - 3 {
		s.ClientMessage(ctx, c, []byte(`{"type":"ping"}`))
	}

	failAppActor(t, s, "app")
	if _, err := dir.Sockets(ctx, "app"); err != nil { // answered once the restart is over
		t.Fatal(err)
	}

	// One message is left in the window the limiter kept; the next is refused.
	s.ClientMessage(ctx, c, []byte(`{"type":"ping"}`))
	s.ClientMessage(ctx, c, []byte(`{"type":"ping"}`))
	got := p.types()
	if n := len(got); n < 2 || got[n-2] != wire.TypePong || got[n-1] != wire.TypeError {
		t.Fatalf("after the restart the socket answered %v; want a pong, then the rate error", got)
	}
	renewNow(t, s)
	list, err := s.Sessions(ctx, "app")
	if err != nil || len(list) != 1 || list[0].Status != "away" || list[0].Metadata["level"] != 3.0 {
		t.Fatalf("sessions after the restart: %+v %v", list, err)
	}
	// The dashboard still filters: a chat does not reach it, a status does.
	for _, typ := range []string{wire.TypeChat, wire.TypeStatus} {
		if err := s.toDashboardsMsg(ctx, "app", wire.Outgoing{Type: typ, Data: map[string]any{"userId": "u1"}}); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "the status at the dashboard", func() bool { return slices.Contains(dp.types(), wire.TypeStatus) })
	if slices.Contains(dp.types(), wire.TypeChat) {
		t.Fatalf("the filtered dashboard got a chat after the restart: %v", dp.types())
	}
	s.DisconnectClient(c)
	s.DisconnectDashboard(d)
}

// TestDashboardActorRecheck: the DashboardActor checks its owner's token again on its
// timer: a check that cannot be made changes nothing; once the account's sessions are
// revoked (the token no longer authenticates) the socket is told and closed.
func TestDashboardActorRecheck(t *testing.T) {
	s, _ := oneNode(t, Deps{Sessions: sessions{}, DashboardRecheck: 10 * time.Millisecond})
	var state atomic.Int32 // 0 valid, 1 the store does not answer, 2 revoked
	var checks atomic.Int32
	recheck := WithRecheck(recheckFunc(func(context.Context) error {
		checks.Add(1)
		switch state.Load() {
		case 1:
			return errors.New("store down")
		case 2:
			return core.E(core.CodeUnauthorized, "the session was revoked")
		}
		return nil
	}))
	dp := &recorder{}
	d, err := s.ConnectDashboard(t.Context(), "app", dp, recheck)
	if err != nil {
		t.Fatal(err)
	}
	defer s.DisconnectDashboard(d)
	waitUntil(t, "a few checks", func() bool { return checks.Load() >= 3 })
	state.Store(1)
	at := checks.Load()
	waitUntil(t, "checks that fail", func() bool { return checks.Load() >= at+3 })
	if dp.closedWith() != 0 {
		t.Fatalf("closed with %d while the token was valid or could not be checked", dp.closedWith())
	}
	state.Store(2)
	waitUntil(t, "the close", func() bool { return dp.closedWith() != 0 })
	if got := dp.types(); dp.closedWith() != wire.CodePolicy || got[len(got)-1] != wire.TypeError {
		t.Fatalf("revoked: closed with %d after %v", dp.closedWith(), got)
	}
}

// recheckFunc is a test's TokenCheck.
type recheckFunc func(ctx context.Context) error

func (f recheckFunc) Recheck(ctx context.Context) error { return f(ctx) }
