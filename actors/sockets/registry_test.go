package sockets

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/cluster/memory"
	"github.com/keyward/keyward/core/client"
)

// TestAppActorRestartLosesNoSocket: the sockets of an app are registered with the app's
// actor; when that actor panics (on purpose here) its supervisor restarts it and every
// socket is still held: deliveries reach them all, they still count, and they leave as
// usual.
func TestAppActorRestartLosesNoSocket(t *testing.T) {
	known := sessions{}
	for i := range 3 {
		known[fmt.Sprintf("tok-u%d", i)] = user(fmt.Sprintf("u%d", i))
	}
	engine := memory.New(memory.Config{})
	t.Cleanup(func() { engine.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := app.NewApps(func(context.Context, string) (struct{}, error) { return struct{}{}, nil }, app.AppsConfig{Log: quiet})
	t.Cleanup(dir.Close)
	s := New(Deps{Engine: engine, Sessions: known, Registry: dir, Log: quiet})
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	withPanicOnPurpose(s, dir)
	ctx := t.Context()
	peers := make([]*recorder, 3)
	clients := make([]*Client, 3)
	for i := range peers {
		peers[i] = &recorder{}
		c, err := s.ConnectClient(ctx, client.Caller{IP: "192.0.2.1"}, fmt.Sprintf("tok-u%d", i), peers[i])
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = c
	}
	dash := &recorder{}
	if _, err := s.ConnectDashboard(ctx, "app", dash); err != nil {
		t.Fatal(err)
	}

	failAppActor(t, s, "app")

	if _, err := s.Broadcast(ctx, "app", "after the restart", ""); err != nil {
		t.Fatal(err)
	}
	for i, p := range peers {
		waitUntil(t, fmt.Sprintf("the broadcast at socket %d", i), func() bool { return slices.Contains(p.types(), wire.TypeMessage) })
		if p.closedWith() != 0 {
			t.Fatalf("socket %d closed with %d", i, p.closedWith())
		}
	}
	if cl, ds := s.Held(); cl != 3 || ds != 1 {
		t.Fatalf("held after the restart: %d clients, %d dashboards", cl, ds)
	}
	list, err := dir.Sockets(ctx, "app")
	if err != nil || len(list) != 4 {
		t.Fatalf("the app's actor holds %d sockets after its restart (%v)", len(list), err)
	}
	s.DisconnectClient(clients[0])
	waitUntil(t, "session_disconnect at the dashboard", func() bool { return slices.Contains(dash.types(), wire.TypeSessionDisconnect) })
	if n, _ := s.Online(ctx, "app"); n != 2 {
		t.Fatalf("online after one left: %d", n)
	}
}
