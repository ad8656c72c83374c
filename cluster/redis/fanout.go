// Code kept identical to cluster/memory/fanout.go (apart from this line and the package
// clause): the two engines share no package, and the fan-out is small.

package redis

import (
	"sync"
	"sync/atomic"
)

// maxQueued bounds the messages waiting for delivery. Delivery is at most once by contract:
// when subscribers are so slow (or blocked) that this many pile up, newer messages are
// dropped rather than let memory grow without bound.
const maxQueued = 10_000

// fanout calls the subscribers of topics on one goroutine it owns, in the order messages
// were handed to it, so messages from one publisher arrive in publish order. A message goes
// to the subscribers that are active both when it is handed over and when its turn comes.
type fanout struct {
	mu     sync.Mutex
	topics map[string]map[*subscriber]struct{}
	queue  []delivery
	closed bool

	wake chan struct{} // capacity 1: the queue may hold messages
	stop chan struct{} // closed by close
	done chan struct{} // closed by run when it returns
}

type subscriber struct {
	fn     func([]byte)
	active atomic.Bool // fn is started only while true; false for good once removed
}

type delivery struct {
	subs    []*subscriber
	payload []byte
}

func newFanout() *fanout {
	f := &fanout{
		topics: make(map[string]map[*subscriber]struct{}),
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	go f.run()
	return f
}

// add registers fn for topic and answers its subscriber, which gets messages once active
// (set now, or later with s.active.Store(true)).
func (f *fanout) add(topic string, fn func([]byte), active bool) *subscriber {
	s := &subscriber{fn: fn}
	s.active.Store(active)
	f.mu.Lock()
	defer f.mu.Unlock()
	subs := f.topics[topic]
	if subs == nil {
		subs = make(map[*subscriber]struct{})
		f.topics[topic] = subs
	}
	subs[s] = struct{}{}
	return s
}

// remove ends s's subscription: fn is not started again once remove returns (a call already
// running may finish). Removing twice does nothing.
func (f *fanout) remove(topic string, s *subscriber) {
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

// deliver queues payload for the current subscribers of topic. payload must not be
// modified afterwards; each subscriber gets its own copy.
func (f *fanout) deliver(topic string, payload []byte) {
	f.mu.Lock()
	subs := f.topics[topic]
	if f.closed || len(subs) == 0 || len(f.queue) >= maxQueued {
		f.mu.Unlock()
		return
	}
	d := delivery{subs: make([]*subscriber, 0, len(subs)), payload: payload}
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

func (f *fanout) run() {
	defer close(f.done)
	for {
		select {
		case <-f.stop:
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

// close stops delivery and waits for a running callback to return; no callback starts
// after close returns. It must be called once, and not from a callback.
func (f *fanout) close() {
	f.mu.Lock()
	f.closed = true
	f.queue = nil
	f.mu.Unlock()
	close(f.stop)
	<-f.done
}
