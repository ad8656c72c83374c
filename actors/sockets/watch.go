package sockets

import (
	"context"
	"fmt"
	"time"

	"github.com/keyward/keyward/cluster"
)

// Dashboards hear of a client socket's coming and going (session_connect,
// session_disconnect) over the app's bus topic. Most of the time no dashboard of the app
// is open anywhere, and that message would cost every connect an encoding, a publication
// and its return to each node subscribed to the app (which reads it and finds no
// dashboard). So a node that holds a dashboard of an app marks the app watched in the
// cluster engine (a value with the lease ttl, renewed with the leases by the app's actor,
// app.LeaseConfig.Watch), and a connect or a disconnect publishes only when the mark is
// there.
//
// Why no dashboard misses a socket: a dashboard joins (subscribes), marks the app, then
// reads the session list. A socket that list does not show was admitted after the read,
// so after the mark was written, and its node reads the mark after the admission: it sees
// it and publishes, and the dashboard, subscribed already, receives it. A socket the list
// shows leaves after the read, so its node finds the mark too. A mark outlives the last
// dashboard by up to one ttl (messages nobody reads); an engine that cannot answer is
// taken as "watched" (the message is published as before).

// watchKeyPrefix names the marks: the prefix and the app's id.
const watchKeyPrefix = "ws:watch:"

// watchKind is the kind of socket (app.Member.Kind) that watches its app.
const watchKind = "dashboard"

// marks is the cluster engine's values, which the marks are kept in; nil when the engine
// has none (then every connect publishes, as if always watched).
func (s *Service) marks() cluster.Values {
	v, _ := s.d.Engine.(cluster.Values)
	return v
}

// markWatched marks app appID as watched by a dashboard for ttl.
func (s *Service) markWatched(ctx context.Context, appID string, ttl time.Duration) error {
	v := s.marks()
	if v == nil {
		return nil
	}
	if err := v.SetValue(ctx, watchKeyPrefix+appID, []byte{1}, ttl); err != nil {
		return fmt.Errorf("realtime: mark the app watched: %w", err)
	}
	return nil
}

// watched answers whether a dashboard of app appID may be open on some node.
func (s *Service) watched(ctx context.Context, appID string) bool {
	v := s.marks()
	if v == nil {
		return true
	}
	_, _, ok, err := v.GetValue(ctx, watchKeyPrefix+appID)
	return ok || err != nil
}

// watcher is the Service as the app actors' app.Watcher.
type watcher struct{ s *Service }

func (w watcher) MarkWatched(ctx context.Context, appID string, ttl time.Duration) error {
	return w.s.markWatched(ctx, appID, ttl)
}
