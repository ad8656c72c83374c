package wshooks_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/realtime"
	"github.com/keyward/keyward/core/wshooks"
	"github.com/keyward/keyward/hooks"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/sqlite"
)

// anyOwner lets every owner use the app's WebSocket features.
type anyOwner struct{}

func (anyOwner) WebSocketApp(context.Context, apps.Owner, string) (storage.App, error) {
	return storage.App{}, nil
}

// invalidates stands for the event log in these tests: a stored event of an app (the
// app.hooks_change a hook's change stores with it) reloads the app's actor, as the
// server's hook on the log does.
type invalidates func(appID string)

func (f invalidates) Publish(_ context.Context, es ...events.Event) error {
	for _, e := range es {
		f(e.AppID)
	}
	return nil
}

// TestHooksLiveInTheAppActor: the compiled hooks are the AppActor's (loaded with its
// state by wshooks.Load); the service keeps none of its own. Every Plan asks the actor,
// and a hook change reaches the actor's pipeline through its invalidation at once.
func TestHooksLiveInTheAppActor(t *testing.T) {
	ctx := t.Context()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "kw.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	now := time.Now().UTC()
	if err := st.CreateApp(ctx, storage.App{ID: "app-1", AccountID: "acc-1", Name: "game", Enabled: true, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	var loads atomic.Int64
	dir := app.NewApps(func(ctx context.Context, appID string) (*hooks.Pipeline, error) {
		loads.Add(1)
		return wshooks.Load(ctx, st, appID, log)
	}, app.AppsConfig{Log: log})
	t.Cleanup(dir.Close)
	var asked atomic.Int64
	svc := wshooks.New(st, anyOwner{}, func(ctx context.Context, appID string, m hooks.Message) ([]hooks.Step, error) {
		asked.Add(1)
		return dir.Plan(ctx, appID, m)
	}, invalidates(dir.Invalidate), nil, log)

	plan := func() []realtime.HookAction {
		t.Helper()
		out, err := svc.Plan(ctx, "app-1", realtime.HookInput{Type: "greet", Fields: map[string]any{"type": "greet"}, Username: "zoe"})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := plan(); len(got) != 0 {
		t.Fatalf("no hooks yet, planned %v", got)
	}
	h, err := svc.Create(ctx, apps.Owner{}, "app-1", wshooks.CreateInput{Name: "hello", Event: "greet",
		Actions: []hooks.Action{{Type: "respond", Message: "hello {{username}}"}}})
	if err != nil {
		t.Fatal(err)
	}
	// The actor had loaded the app's hooks (none); the creation reloads them.
	if got := plan(); len(got) != 1 || got[0].Message != "hello zoe" {
		t.Fatalf("after create: %+v", got)
	}
	off := false
	if _, err := svc.Update(ctx, apps.Owner{}, "app-1", h.ID, wshooks.UpdateInput{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	if got := plan(); len(got) != 0 {
		t.Fatalf("after disabling: %+v", got)
	}
	// Each Plan asked the actor; the actor loaded once per change, not once per Plan.
	if asked.Load() != 3 || loads.Load() != 3 {
		t.Fatalf("plans asked the actor %d times, the actor loaded %d times", asked.Load(), loads.Load())
	}
	for range 5 {
		plan()
	}
	if loads.Load() != 3 {
		t.Fatalf("the actor loaded %d times for unchanged hooks", loads.Load())
	}
}
