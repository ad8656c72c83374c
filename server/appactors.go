package server

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/keyward/keyward/actors"
	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/plans"
	"github.com/keyward/keyward/core/wshooks"
	"github.com/keyward/keyward/hooks"
	"github.com/keyward/keyward/storage"
)

// snapshotChanges reports whether an event changes what an app's snapshot holds.
func snapshotChanges(name string) bool {
	return name == "app.update" || name == "app.secret_reset" || name == "app.signing_key_reset" || strings.HasPrefix(name, "rule.") && name != "rule.triggered"
}

// AppState is what a node's AppActor holds of its application: the client API's
// snapshot and the compiled WebSocket hooks, loaded together and reloaded on the same
// invalidation.
type AppState struct {
	Client client.Snapshot
	Hooks  *hooks.Pipeline
}

// appActors are the node's AppActors with what their state is read through.
type appActors struct {
	dir *actors.Apps[AppState]
	// announce tells the app's actor on this node and every other that the app changed:
	// each reloads the app's state and revalidates the app's sockets it holds.
	announce func(appID string)
	stop     func()
}

// Snapshot answers the client API's part of the app's state (client.Snapshots).
func (a *appActors) Snapshot(ctx context.Context, appID string) (client.Snapshot, error) {
	st, err := a.dir.Snapshot(ctx, appID)
	return st.Client, err
}

// PlanHooks asks the app's actor for the plan of a client message (wshooks.PlanOf): the
// actor runs the compiled hooks of its snapshot inside its Receive.
func (a *appActors) PlanHooks(ctx context.Context, appID string, m hooks.Message) ([]hooks.Step, error) {
	return a.dir.Plan(ctx, appID, m)
}

// startAppActors starts the node's AppActors and wires the app changes to them as
// messages: events of this node (the event pipeline), hook changes, and changes of other
// nodes (the cluster bus) reach the actor of the app they concern, which reloads the app's
// state and revalidates its sockets at once; a deleted app's actor drops it.
func startAppActors(ctx context.Context, store storage.Store, engine cluster.Engine, bus *events.Bus, appsSvc *apps.Service,
	accountsSvc *accounts.Service, catalogue *plans.Catalogue, metrics *actors.Metrics, def client.SnapshotDefaults, now func() time.Time, log *slog.Logger) (*appActors, error) {
	loadClient := client.NewLoader(store, catalogue, def)
	load := func(ctx context.Context, appID string) (AppState, error) {
		snap, err := loadClient(ctx, appID)
		if err != nil {
			return AppState{}, err
		}
		p, err := wshooks.Load(ctx, store, appID, log)
		if err != nil {
			return AppState{}, err
		}
		return AppState{Client: snap, Hooks: p}, nil
	}
	dir := actors.NewApps(load, actors.AppsConfig{Now: now, Log: log, Metrics: metrics})
	dir.SetPlanner(func(st AppState, m hooks.Message) []hooks.Step { return st.Hooks.Plan(m) })
	announce := func(appID string) {
		pctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := dir.Announce(pctx, engine, appID); err != nil {
			log.Warn("cannot announce an app change to the cluster; other nodes pick it up within a minute", "app", appID, "err", err)
		}
	}
	unsubscribe, err := dir.ListenChanges(ctx, engine)
	if err != nil {
		dir.Close()
		return nil, err
	}
	bus.Subscribe("app-actors", 10_000, func(e events.Event) {
		if e.AppID != "" && snapshotChanges(e.Name) {
			announce(e.AppID)
		}
	})
	appsSvc.OnDelete(func(_ context.Context, appID string) error {
		announce(appID)
		return nil
	})
	// A plan change changes what the owner's apps may do (license variables, user limit).
	accountsSvc.OnPlanChange(func(ctx context.Context, accountID string) {
		list, err := store.ListApps(ctx, accountID)
		if err != nil {
			log.Warn("cannot list the apps of an account whose plan changed; they refresh within a minute", "account", accountID, "err", err)
			return
		}
		for _, a := range list {
			announce(a.ID)
		}
	})
	stop := func() {
		unsubscribe()
		dir.Close()
	}
	return &appActors{dir: dir, announce: announce, stop: stop}, nil
}
