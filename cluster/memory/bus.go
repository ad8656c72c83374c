package memory

import (
	"context"
	"errors"
	"sync"
)

// Publish implements cluster.Bus. It only queues the message: subscribers are called on the
// engine's bus goroutine, never on the publisher's. This engine is one node, so "every node"
// is this one.
func (e *Engine) Publish(_ context.Context, topic string, payload []byte) error {
	if err := checkName("publish", "topic", topic); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errClosed
	}
	// Queued under e.mu, so messages of one publisher keep its order and a Subscribe that
	// returned before this Publish started is among the receivers.
	e.bus.Deliver(topic, append([]byte{}, payload...))
	return nil
}

// Subscribe implements cluster.Bus.
func (e *Engine) Subscribe(_ context.Context, topic string, fn func(payload []byte)) (func(), error) {
	if err := checkName("subscribe", "topic", topic); err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, errors.New("cluster/memory: subscribe: nil callback")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errClosed
	}
	s := e.bus.Add(topic, fn, true)
	var once sync.Once
	return func() { once.Do(func() { e.bus.Remove(topic, s) }) }, nil
}

// BusDropped answers how many bus messages were dropped because subscribers fell behind.
func (e *Engine) BusDropped() uint64 { return e.bus.Dropped() }
