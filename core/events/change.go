package events

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/keyward/keyward/storage"
)

// Change gathers the events of one change so that they are stored with it (the
// transactional outbox). A producer begins it, makes the change's store call with the
// context Begin answers, adds the events (before the call, or inside its updater, which
// knows the record as written) and, once the call succeeded, calls Commit before it
// acknowledges the change:
//
//	ctx, ch := events.Begin(ctx, s.bus)
//	a, err := s.store.UpdateApp(ctx, ..., func(a *storage.App) error { ...; ch.Add(events.Event{...}); return nil })
//	if err != nil { return err }
//	if err := ch.Commit(ctx); err != nil { return err }
//
// On SQLite the store writes the events in the change's own transaction
// (storage.EventOutbox), so the change and its events are stored together or not at all,
// and Commit only announces them to this node. On MongoDB they are not in the change's
// write: FerretDB 1.24 has no multi-document transactions, and the log's append is not
// the same document as the change, so Commit appends them in a write of their own that
// the change's acknowledgement waits for (a crash in between loses the events of a change
// that was never acknowledged; the caller answers an error when the append fails). The
// same code runs on both: the engine decides by taking the outbox or not.
type Change struct {
	pub Publisher
	bus *Bus // nil when pub is not the event log (a test's recorder): Commit publishes

	mu     sync.Mutex
	recs   []storage.EventRecord
	evs    []Event
	err    error // an event that could not be encoded
	stored bool  // the store wrote recs with the change
	// count makes the events of a bulk change from how many records it touched (OnCount).
	count func(n int) []Event
}

// Begin starts the events of one change published to pub (nil: none are kept). The
// context it answers is for the change's own store call, and only for it.
func Begin(ctx context.Context, pub Publisher) (context.Context, *Change) {
	c := &Change{pub: pub}
	if b, ok := pub.(*Bus); ok {
		if b == nil {
			c.pub = nil
			return ctx, c
		}
		c.bus = b
		return storage.WithEventOutbox(ctx, c), c
	}
	return ctx, c
}

// Add adds events to the change. An updater, which a store may run more than once (a
// compare-and-swap retry), uses Set instead.
func (c *Change) Add(es ...Event) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addLocked(es)
}

// Set replaces the change's events: for an updater, which a store may run more than once
// (the last run is the one written).
func (c *Change) Set(es ...Event) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recs, c.evs, c.err = c.recs[:0], c.evs[:0], nil
	c.addLocked(es)
}

func (c *Change) addLocked(es []Event) {
	for _, e := range es {
		if e.ID == "" {
			e.ID = NewID()
		}
		now := time.Now
		if c.bus != nil {
			now = c.bus.cfg.Now
		}
		if e.At.IsZero() {
			e.At = now()
		}
		e.At = storage.Truncate(e.At)
		if e.Level == "" {
			e.Level = LevelInfo
		}
		rec, err := Encode(e)
		if err != nil {
			c.err = errors.Join(c.err, err)
			continue
		}
		c.recs, c.evs = append(c.recs, rec), append(c.evs, e)
	}
}

// OnCount makes the change's events from how many records it touched (a bulk delete's
// "n license(s) deleted"; none when n is 0): the engine tells the count in the change's
// transaction (storage.CountedOutbox), and the producer calls Counted with the count its
// store call answered before Commit (a no-op when the events were stored with the change).
func (c *Change) OnCount(fn func(n int) []Event) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count = fn
}

// Counted makes the change's events from n (OnCount), unless they were stored already.
func (c *Change) Counted(n int) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.count == nil || c.stored {
		return
	}
	c.recs, c.evs, c.err = c.recs[:0], c.evs[:0], nil
	c.addLocked(c.count(n))
}

// Take hands the change's events to the store's transaction (storage.EventOutbox).
func (c *Change) Take() []storage.EventRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stored || len(c.recs) == 0 {
		return nil
	}
	if c.bus != nil {
		c.bus.markMine(c.recs)
	}
	return append([]storage.EventRecord(nil), c.recs...)
}

// Stored records that the store committed the events with the change.
func (c *Change) Stored(recs []storage.EventRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	copy(c.recs, recs)
	c.stored = true
}

// Commit makes sure the change's events are stored, once the change's write succeeded:
// stored with it (announced to this node's hooks and consumers), else appended now. Its
// error is the change's: the change must not be acknowledged (storage.ErrUnavailable, a
// 503).
func (c *Change) Commit(ctx context.Context) error {
	if c == nil || c.pub == nil {
		return nil
	}
	c.mu.Lock()
	recs, evs, stored, err := c.recs, c.evs, c.stored, c.err
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if len(evs) == 0 {
		return nil
	}
	if stored {
		c.bus.mu.Lock()
		local := c.bus.local
		c.bus.mu.Unlock()
		c.bus.announce(local, recs, append([]Event(nil), evs...))
		return nil
	}
	return c.pub.Publish(ctx, evs...)
}

// Events answers the change's events as added (for tests and callers that also hand
// them elsewhere).
func (c *Change) Events() []Event {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Event(nil), c.evs...)
}
