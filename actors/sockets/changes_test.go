package sockets

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/cluster/memory"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/client"
)

// pausable checks sockets as the client service does: against the app's snapshot held by
// the node's AppActor (here only whether the app is paused).
type pausable struct {
	sessions
	paused func(ctx context.Context, appID string) (bool, error)
}

func (p pausable) CheckSockets(ctx context.Context, appID string, socks []client.SocketCheck) []error {
	paused, err := p.paused(ctx, appID)
	if err == nil && paused {
		err = core.E(core.CodeAppPaused, "this application is paused by its owner; try again later")
	}
	if err != nil {
		errs := make([]error, len(socks))
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	return p.sessions.CheckSockets(ctx, appID, socks)
}

// TestAppPausedOnANodeClosesSocketsOnTheOther: pausing an app on node A reaches the app's
// actor on A and B as a message (the event pipeline on A, the cluster bus on B); each
// reloads the app's snapshot and revalidates its sockets at once, so the sockets on both
// nodes get force_logout and close, long before the 30 s check. On the memory engine and
// on Redis.
func TestAppPausedOnANodeClosesSocketsOnTheOther(t *testing.T) {
	for _, engine := range []string{"memory", "redis"} {
		t.Run(engine, func(t *testing.T) {
			var engines [2]Engine
			if engine == "memory" {
				e := memory.New(memory.Config{})
				t.Cleanup(func() { e.Close() })
				engines = [2]Engine{e, e}
			} else {
				engines = redisEngines(t)
			}
			var paused atomic.Bool
			known := sessions{"tok-u1": user("u1"), "tok-u2": user("u2")}
			var dirs [2]*app.Apps[bool]
			var peers [2]*recorder
			for i, e := range engines {
				dir := app.NewApps(func(context.Context, string) (bool, error) { return paused.Load(), nil }, app.AppsConfig{})
				dirs[i] = dir
				unsubscribe, err := dir.ListenChanges(t.Context(), e)
				if err != nil {
					t.Fatal(err)
				}
				s := New(Deps{Engine: e, Registry: dir, Sessions: pausable{sessions: known, paused: dir.Snapshot}})
				if err := s.Start(t.Context()); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close(); unsubscribe(); dir.Close() })
				peers[i] = &recorder{}
				if _, err := s.ConnectClient(t.Context(), client.Caller{IP: "192.0.2.1"}, []string{"tok-u1", "tok-u2"}[i], peers[i]); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			paused.Store(true)
			if err := dirs[0].Announce(t.Context(), engines[0], "app"); err != nil {
				t.Fatal(err)
			}
			for i, p := range peers {
				waitUntil(t, "the socket closed", func() bool { return p.closedWith() == wire.CodeForceLogout })
				if got := p.types(); len(got) != 1 || got[0] != wire.TypeForceLogout {
					t.Fatalf("socket on node %d got %v, want force_logout", i, got)
				}
				t.Logf("node %d: socket closed %v after the pause", i, time.Since(start))
			}
		})
	}
}
