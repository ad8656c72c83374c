// Package events is Keyward's event pipeline: every domain change and client action
// (SPEC 6.1: user.login, variable.update, …) is published once here, and each consumer
// (the log writer, webhooks, analytics, later the WebSocket fan-out) subscribes with its own
// bounded queue and goroutine. Publish never blocks: a consumer that falls behind loses
// events (counted per subscriber), it never slows the request that caused them.
package events

import (
	"sync"
	"sync/atomic"
	"time"
)

// Levels of events and log entries (SPEC 2, Log entry).
const (
	LevelDebug    = "DEBUG"
	LevelInfo     = "INFO"
	LevelWarning  = "WARNING"
	LevelError    = "ERROR"
	LevelCritical = "CRITICAL"
)

// Event is one thing that happened in an application.
type Event struct {
	Name     string // dotted name, e.g. user.login
	AppID    string
	Username string
	IP       string
	Country  string
	Level    string // default INFO
	Message  string
	Data     map[string]any
	At       time.Time
}

// Publisher is what producers of events need (Bus implements it).
type Publisher interface{ Publish(e Event) }

// Subscriber consumes events on its own goroutine.
type Subscriber struct {
	name    string
	ch      chan Event
	fn      func(Event)
	dropped atomic.Uint64
	done    chan struct{}
}

// Dropped counts the events this subscriber lost because its queue was full.
func (s *Subscriber) Dropped() uint64 { return s.dropped.Load() }

// Name is the subscriber's name, for metrics.
func (s *Subscriber) Name() string { return s.name }

// Bus fans events out to subscribers.
type Bus struct {
	mu     sync.RWMutex
	subs   []*Subscriber
	closed bool
	now    func() time.Time
}

// NewBus returns an empty bus; now stamps events published without a time (time.Now when nil).
func NewBus(now func() time.Time) *Bus {
	if now == nil {
		now = time.Now
	}
	return &Bus{now: now}
}

// Subscribe starts a consumer with a queue of buffer events. fn runs on the subscriber's
// goroutine, one event at a time, in publish order.
func (b *Bus) Subscribe(name string, buffer int, fn func(Event)) *Subscriber {
	s := &Subscriber{name: name, ch: make(chan Event, buffer), fn: fn, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for e := range s.ch {
			fn(e)
		}
	}()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		close(s.ch)
		return s
	}
	b.subs = append(b.subs, s)
	return s
}

// Publish hands e to every subscriber without blocking.
func (b *Bus) Publish(e Event) {
	if e.At.IsZero() {
		e.At = b.now()
	}
	if e.Level == "" {
		e.Level = LevelInfo
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return
	}
	for _, s := range b.subs {
		select {
		case s.ch <- e:
		default:
			s.dropped.Add(1)
		}
	}
}

// Subscribers lists the current subscribers, for metrics.
func (b *Bus) Subscribers() []*Subscriber {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return append([]*Subscriber(nil), b.subs...)
}

// Close stops accepting events and waits until every subscriber has handled what was
// queued. Idempotent.
func (b *Bus) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	subs := b.subs
	for _, s := range subs {
		close(s.ch)
	}
	b.mu.Unlock()
	for _, s := range subs {
		<-s.done
	}
}
