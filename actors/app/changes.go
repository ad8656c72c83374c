package app

import (
	"context"
	"fmt"
)

// changesTopic is the cluster bus topic on which a node announces that an application
// changed; its payload is the application's id (the format of every release so far).
const changesTopic = "app-changed"

// Bus carries the app-changed announcements between nodes (cluster.Bus).
type Bus interface {
	Publish(ctx context.Context, topic string, payload []byte) error
	Subscribe(ctx context.Context, topic string, fn func(payload []byte)) (unsubscribe func(), err error)
}

// ListenChanges hands the app changes that any node announces (Announce) to the
// application's actor on this node (Invalidate), until unsubscribe is called.
func (a *Apps[S]) ListenChanges(ctx context.Context, bus Bus) (unsubscribe func(), err error) {
	unsubscribe, err = bus.Subscribe(ctx, changesTopic, func(p []byte) { a.Invalidate(string(p)) })
	if err != nil {
		return nil, fmt.Errorf("actors: subscribe to app changes: %w", err)
	}
	return unsubscribe, nil
}

// Announce tells the application's actor on this node, at once, and on every node
// listening on bus that the application changed. When the bus fails, the other nodes
// still reload within the refresh age and revalidate within their tick.
func (a *Apps[S]) Announce(ctx context.Context, bus Bus, appID string) error {
	a.Invalidate(appID)
	if err := bus.Publish(ctx, changesTopic, []byte(appID)); err != nil {
		return fmt.Errorf("actors: announce a change of app %s: %w", appID, err)
	}
	return nil
}
