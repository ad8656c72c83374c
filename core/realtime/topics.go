package realtime

import (
	"context"
	"fmt"
	"sync"
)

// topic is this node's subscription to one app's bus topic, shared by the node's sockets
// of the app.
type topic struct {
	refs  int
	ready chan struct{} // closed once the subscription is made (or failed: err)
	err   error
	once  sync.Once
	unsub func()
}

func (t *topic) leave() {
	<-t.ready
	t.once.Do(func() {
		if t.unsub != nil {
			t.unsub()
		}
	})
}

// hold subscribes this node to the app's bus topic, or counts one more socket on the
// subscription it has; it returns once the subscription is in place. Each successful
// hold is paired with a letGo.
func (s *Service) hold(ctx context.Context, appID string) error {
	s.mu.Lock()
	t := s.topics[appID]
	if t != nil {
		t.refs++
		s.mu.Unlock()
		select {
		case <-t.ready:
		case <-ctx.Done():
			s.drop(appID, t)
			return fmt.Errorf("realtime: subscribe: %w", ctx.Err())
		}
		if t.err != nil {
			s.drop(appID, t)
			return t.err
		}
		return nil
	}
	t = &topic{refs: 1, ready: make(chan struct{})}
	s.topics[appID] = t
	s.mu.Unlock()
	unsub, err := s.d.Engine.Subscribe(ctx, busTopic(appID), s.receive)
	if err != nil {
		t.err = fmt.Errorf("realtime: subscribe: %w", err)
	}
	t.unsub = unsub
	close(t.ready)
	if t.err != nil {
		s.drop(appID, t)
		return t.err
	}
	return nil
}

// letGo counts one socket less on the app's subscription and ends it with the last.
func (s *Service) letGo(appID string) {
	s.mu.RLock()
	t := s.topics[appID]
	s.mu.RUnlock()
	if t != nil {
		s.drop(appID, t)
	}
}

// drop counts one holder less on t and, with the last, forgets and ends it.
func (s *Service) drop(appID string, t *topic) {
	s.mu.Lock()
	t.refs--
	if t.refs > 0 {
		s.mu.Unlock()
		return
	}
	if s.topics[appID] == t {
		delete(s.topics, appID)
	}
	s.mu.Unlock()
	t.leave()
}

// Topics answers how many app topics this node is subscribed to, for metrics and tests.
func (s *Service) Topics() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.topics)
}
