// Package fanout is the in-process half of the cluster bus that both engines share: it
// calls a node's subscribers of a topic on one goroutine it owns, in the order messages
// were handed to it, with a bounded queue (messages beyond it are dropped and counted:
// delivery is at most once by contract).
package fanout

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/keyward/keyward/internal/supervise"
)

// Kind is the delivery goroutine's kind under its owner (logs and metrics).
const Kind = "cluster-bus-fanout"

// maxQueued bounds the messages waiting for delivery. Delivery is at most once by contract:
// when subscribers are so slow (or blocked) that this many pile up, newer messages are
// dropped rather than let memory grow without bound.
const MaxQueued = 10_000

// Fanout calls the subscribers of topics on one goroutine it owns, in the order messages
// were handed to it, so messages from one publisher arrive in publish order. A message goes
// to the subscribers that are active both when it is handed over and when its turn comes.
type Fanout struct {
	mu     sync.Mutex
	topics map[string]map[*Subscriber]struct{}
	queue  []delivery
	closed bool

	dropped atomic.Uint64

	wake  chan struct{} // capacity 1: the queue may hold messages
	stop  chan struct{} // closed by close
	done  chan struct{} // closed when run returned for good
	ended sync.Once
	own   *supervise.Supervisor // the owner made when New was given none
}

// Subscriber is one subscription.
type Subscriber struct {
	fn     func([]byte)
	active atomic.Bool // fn is started only while true; false for good once removed
}

// Activate lets the subscriber receive the messages handed over from now on (a Redis
// subscription is active once the server confirmed it).
func (s *Subscriber) Activate() { s.active.Store(true) }

type delivery struct {
	subs    []*Subscriber
	payload []byte
}

// New starts the delivery goroutine under owner (a supervisor of its own when nil), of kind
// Kind: a subscriber that panics is logged and counted there, and delivery goes on after a
// pause with the messages queued since (those taken with the one that panicked are lost to
// the subscribers after it: delivery is at most once).
func New(owner supervise.Starter) *Fanout {
	f := &Fanout{
		topics: make(map[string]map[*Subscriber]struct{}),
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	if owner == nil {
		f.own, _ = supervise.New(supervise.Config{}) // no metrics: it cannot fail
		owner = f.own
	}
	end := func() { f.ended.Do(func() { close(f.done) }) }
	if err := owner.Go(Kind, supervise.Restart, func(ctx context.Context) error {
		f.run(ctx)
		end()
		return nil
	}); err != nil {
		f.closed = true // the owner is stopping: nothing is delivered
		end()
	}
	return f
}

// Add registers fn for topic and answers its subscriber, which gets messages once active
// (set now, or later with s.Activate).
func (f *Fanout) Add(topic string, fn func([]byte), active bool) *Subscriber {
	s := &Subscriber{fn: fn}
	s.active.Store(active)
	f.mu.Lock()
	defer f.mu.Unlock()
	subs := f.topics[topic]
	if subs == nil {
		subs = make(map[*Subscriber]struct{})
		f.topics[topic] = subs
	}
	subs[s] = struct{}{}
	return s
}

// Remove ends s's subscription: fn is not started again once remove returns (a call already
// running may finish). Removing twice does nothing.
func (f *Fanout) Remove(topic string, s *Subscriber) {
	s.active.Store(false)
	f.mu.Lock()
	defer f.mu.Unlock()
	if subs := f.topics[topic]; subs != nil {
		delete(subs, s)
		if len(subs) == 0 {
			delete(f.topics, topic)
		}
	}
}

// Deliver queues payload for the current subscribers of topic. payload must not be
// modified afterwards; each subscriber gets its own copy.
func (f *Fanout) Deliver(topic string, payload []byte) {
	f.mu.Lock()
	subs := f.topics[topic]
	if f.closed || len(subs) == 0 {
		f.mu.Unlock()
		return
	}
	if len(f.queue) >= MaxQueued {
		f.mu.Unlock()
		f.dropped.Add(1)
		return
	}
	d := delivery{subs: make([]*Subscriber, 0, len(subs)), payload: payload}
	for s := range subs {
		// Only subscribers already active: one still being set up was not subscribed
		// when this message was published.
		if s.active.Load() {
			d.subs = append(d.subs, s)
		}
	}
	if len(d.subs) == 0 {
		f.mu.Unlock()
		return
	}
	f.queue = append(f.queue, d)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default: // already signalled
	}
}

// run delivers until Close or its owner's stop.
func (f *Fanout) run(ctx context.Context) {
	for {
		select {
		case <-f.stop:
			return
		case <-ctx.Done():
			return
		case <-f.wake:
		}
		for {
			f.mu.Lock()
			batch := f.queue
			f.queue = nil
			f.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			for _, d := range batch {
				for _, s := range d.subs {
					select {
					case <-f.stop:
						return
					case <-ctx.Done():
						return
					default:
					}
					if s.active.Load() {
						s.fn(append([]byte{}, d.payload...))
					}
				}
			}
		}
	}
}

// Close stops delivery and waits for a running callback to return; no callback starts
// after close returns. It must be called once, and not from a callback.
func (f *Fanout) Close() {
	f.mu.Lock()
	f.closed = true
	f.queue = nil
	f.mu.Unlock()
	close(f.stop)
	<-f.done
	if f.own != nil {
		_ = f.own.Stop(context.Background()) // run returned already
	}
}

// Dropped answers how many messages were dropped because MaxQueued were waiting.
func (f *Fanout) Dropped() uint64 { return f.dropped.Load() }
