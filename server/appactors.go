package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/keyward/keyward/actors/actorkit"
	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/plans"
	"github.com/keyward/keyward/core/wshooks"
	"github.com/keyward/keyward/hooks"
	"github.com/keyward/keyward/storage"
)

// AppState is what a node's AppActor holds of its application: the client API's
// snapshot and the compiled WebSocket hooks, loaded together and reloaded on the same
// invalidation.
type AppState struct {
	Client client.Snapshot
	Hooks  *hooks.Pipeline
}

// Plan makes the plan of a client message from the app's compiled hooks: AppState is an
// app.HookPlanner, so its actor plans inside its Receive.
func (s AppState) Plan(m hooks.Message) []hooks.Step { return s.Hooks.Plan(m) }

// appActors are the node's AppActors with what their state is read through.
type appActors struct {
	dir  *app.Apps[AppState]
	stop func()
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
// messages: the events of events.SnapshotChanges in the event log, whichever node stored
// them, reach the actor of the app they concern, which reloads the app's state and
// revalidates its sockets at once; a deleted app's actor drops it.
func startAppActors(ctx context.Context, store storage.Store, engine cluster.Engine, bus *events.Bus,
	accountsSvc *accounts.Service, catalogue *plans.Catalogue, metrics *actorkit.Metrics, def client.SnapshotDefaults, now func() time.Time, log *slog.Logger) (*appActors, error) {
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
	dir := app.NewApps(load, app.AppsConfig{Now: now, Log: log, Metrics: metrics})
	// Announcements of nodes of the previous release (the cluster bus); this release
	// announces through the event log.
	unsubscribe, err := dir.ListenChanges(ctx, engine)
	if err != nil {
		dir.Close()
		return nil, err
	}
	// The one change signal: an event of events.SnapshotChanges in the event log (app
	// updates, key resets, rules, deletion, plan and hook changes). This node's actor
	// hears of it when it is stored, before the change is acknowledged; the other nodes'
	// when their "app-actors" consumer reads it from the log: at once when the cluster
	// bus says events were stored, within a second otherwise, and after being cut off
	// from the others, everything stored meanwhile. The consumer skips what this node's
	// hook applied already (SkipLocal), so a change reloads this node's actor once.
	bus.OnStored(func(e events.Event) {
		if e.AppID != "" && events.SnapshotChanges.Has(e.Name) {
			dir.Invalidate(e.AppID)
		}
	})
	bus.Consume(events.ConsumerConfig{Name: "app-actors", Types: events.SnapshotChanges, SkipLocal: true,
		Handle: func(_ context.Context, evs []events.Event) error {
			seen := make(map[string]bool, len(evs))
			for _, e := range evs {
				if e.AppID != "" && !seen[e.AppID] {
					seen[e.AppID] = true
					dir.Invalidate(e.AppID)
				}
			}
			return nil
		}})
	// A hook change is such an event: wshooks stores app.hooks_change with the change
	// (events.Change), so it is applied by the hook and consumer above.
	// A plan change stores an app.plan_change event per app with the change
	// (accounts.SendPlanChanges): the hook and consumer above apply it.
	stop := func() {
		unsubscribe()
		dir.Close()
	}
	return &appActors{dir: dir, stop: stop}, nil
}
