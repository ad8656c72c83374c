package events

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keyward/keyward/storage"
)

// ConsumerConfig describes one consumer of the log. Zero values take the defaults shown.
type ConsumerConfig struct {
	// Name identifies the consumer: its stored cursor and its lease.
	Name string
	// Shared consumers run once per cluster (logs, webhooks, socket pushes, session
	// kills): the node holding the consumer's lease reads from the stored cursor and moves
	// it. Other consumers run on every node (the app actors of the node): each reads from
	// the log's end at start and keeps its cursor in memory, so after being cut off from
	// the others it catches up with what was stored meanwhile.
	Shared bool
	// Types are the event types the consumer handles (nil: all). The cursor moves over
	// the others.
	Types Set
	// SkipLocal skips the events this node stored itself when the consumer reads them
	// from the node's recent events: the node's OnStored hooks were handed them before
	// their change was acknowledged, so a consumer doing the same work (the app actors'
	// invalidation) would do it twice. Events of other nodes, and this node's events read
	// back from the database (after a restart, or once the recent ones were dropped), are
	// handled. This node's events read from the database before they were announced are
	// known by their ids (Bus.markMine) and skipped too; one whose writer panicked
	// between its commit and its announcement is then left to the consumer's backstop
	// (the app actors' snapshot refresh).
	SkipLocal bool
	// Notes: the consumer is also handed this node's notes (notes.go), which are not in
	// the log, in batches on the notes loop, whether or not it holds its lease (each note
	// happened on one node). Handle must be idempotent by event id for them too.
	Notes bool
	// Batch is the most events handed to Handle at once; default 500.
	Batch int
	// Handle handles events in log order. An error makes the consumer retry the same
	// events later (with backoff): Handle must be idempotent by event id. It must not
	// keep evs once it returns (the bus fills the array again).
	Handle func(ctx context.Context, evs []Event) error
}

// Consumer reads the log for one ConsumerConfig on its own goroutine.
type Consumer struct {
	bus *Bus
	cfg ConsumerConfig

	cursor   atomic.Int64 // the last position handled
	head     atomic.Int64 // the last position seen stored
	handled  atomic.Uint64
	failures atomic.Uint64

	stop     chan struct{}
	drainBy  atomic.Int64 // unix nanos: when closing, catch up until then
	done     chan struct{}
	stopOnce sync.Once
}

// Timings of the consumers.
const (
	// pollEvery is how often an idle consumer reads the log without being woken: events
	// another node stored while its notification was lost are seen within it.
	pollEvery = time.Second
	// leaseTTL is how long a shared consumer's lease lasts; it is renewed every third.
	leaseTTL = 15 * time.Second
	// gapWait is how long a consumer waits for a missing position before it reads past
	// it: positions are given in order, so a hole is an event removed (compaction, or a
	// MongoDB batch undone), not one still to come, unless it is being written now.
	gapWait = 2 * time.Second
	// maxBackoff bounds the wait between two failed attempts.
	maxBackoff = 5 * time.Second
	// coalesce is the least time between two reads of a consumer that has caught up: under
	// load a consumer woken by every group-commit round would read the log a thousand
	// times a second for a few events each; it reads once per coalesce for all of them.
	// An idle consumer's first read after a wake-up is not delayed.
	coalesce = 5 * time.Millisecond
	// cursorEvery is how often a shared consumer stores its cursor while it works (and
	// when it stops): every batch would be a write per consumer per group-commit round on
	// the database's one writer. After a crash the consumer handles again at most that
	// much, idempotently.
	cursorEvery = time.Second
)

// Consume registers a consumer; it runs from Start (at once if the log started already).
func (b *Bus) Consume(cfg ConsumerConfig) *Consumer {
	if cfg.Batch <= 0 {
		cfg.Batch = 500
	}
	c := &Consumer{bus: b, cfg: cfg, stop: make(chan struct{}), done: make(chan struct{})}
	b.mu.Lock()
	b.consumers = append(b.consumers, c)
	started := b.started && !b.closed
	b.mu.Unlock()
	if started {
		c.start()
	}
	return c
}

// Name is the consumer's name, for metrics.
func (c *Consumer) Name() string { return c.cfg.Name }

// Lag is how many positions the consumer is behind what it last saw stored.
func (c *Consumer) Lag() int64 { return max(0, c.head.Load()-c.cursor.Load()) }

// Handled counts the events handed to Handle successfully; Failures the failed attempts.
func (c *Consumer) Handled() uint64  { return c.handled.Load() }
func (c *Consumer) Failures() uint64 { return c.failures.Load() }

// Cursor is the position of the last event handled.
func (c *Consumer) Cursor() int64 { return c.cursor.Load() }

// start runs the consumer under the log's owner (kind events-consumer-NAME).
func (c *Consumer) start() {
	c.bus.loop("events-consumer-"+c.cfg.Name, func() { close(c.done) }, c.run)
}

// close stops the consumer once it has caught up or at deadline, whichever is first.
func (c *Consumer) close(deadline time.Time) {
	c.halt(deadline)
	<-c.done
}

// halt asks the consumer to stop once it has caught up or at deadline.
func (c *Consumer) halt(deadline time.Time) {
	c.stopOnce.Do(func() {
		c.drainBy.Store(deadline.UnixNano())
		close(c.stop)
	})
}

func (c *Consumer) stopping() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// run reads and handles until stopped: by Close, or by its owner (ctx), which gets the same
// drain. A panic goes to the owner, which logs it, counts it and runs the consumer again
// from its cursor.
func (c *Consumer) run(ctx context.Context) error {
	defer context.AfterFunc(ctx, func() { c.halt(time.Now().Add(drainTimeout)) })()
	c.runLoop()
	return nil
}

// runLoop reads and handles until stopped.
func (c *Consumer) runLoop() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.stop:
			// Stop what Handle does once the drain deadline passes.
			t := time.NewTimer(time.Until(time.Unix(0, c.drainBy.Load())))
			defer t.Stop()
			select {
			case <-t.C:
				cancel()
			case <-ctx.Done():
			}
		case <-ctx.Done():
		}
	}()
	log := c.bus.cfg.Log.With("consumer", c.cfg.Name)
	store := c.bus.cfg.Store
	var leaseUntil time.Time
	started := false
	var gapSince, lastRead, lastSaved time.Time
	saved := c.cursor.Load()
	save := func() {
		pos := c.cursor.Load()
		if !c.cfg.Shared || pos == saved {
			return
		}
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := store.SetEventCursor(sctx, c.cfg.Name, pos); err != nil {
			// The events are handled; another holder would handle them again (idempotent).
			log.Warn("events: cannot store the consumer's cursor", "err", err)
			return
		}
		saved, lastSaved = pos, time.Now()
	}
	defer save()
	caughtUp := false
	failures := 0
	for {
		if c.stopping() && (!started || time.Now().UnixNano() > c.drainBy.Load()) {
			return
		}
		wake := c.bus.changed()
		if c.cfg.Shared && time.Until(leaseUntil) < leaseTTL*2/3 {
			ok, err := c.acquire(ctx)
			if err != nil || !ok {
				if err != nil {
					log.Warn("events: cannot take the consumer's lease; retrying", "err", err)
				}
				if started {
					save() // what this node handled, for the next holder
				}
				leaseUntil = time.Time{}
				started = false // another node may move the cursor meanwhile
				if c.stopping() {
					return
				}
				c.wait(wake, pollEvery)
				continue
			}
			leaseUntil = time.Now().Add(leaseTTL)
		}
		if !started {
			if err := c.load(ctx); err != nil {
				if c.stopping() {
					return
				}
				log.Warn("events: cannot read the consumer's cursor; retrying", "err", err)
				failures++
				c.wait(nil, backoff(failures))
				continue
			}
			started = true
		}
		if since := time.Since(lastRead); caughtUp && since < coalesce && !c.stopping() {
			c.wait(nil, coalesce-since)
		}
		lastRead = time.Now()
		var (
			recs    []storage.EventRecord
			decoded []Event
			err     error
		)
		if cached := c.bus.recentAfter(c.cursor.Load(), c.cfg.Batch); len(cached) > 0 {
			recs, decoded = make([]storage.EventRecord, len(cached)), make([]Event, len(cached))
			for i, ce := range cached {
				recs[i], decoded[i] = ce.rec, ce.ev
			}
		} else {
			recs, err = store.ReadEvents(ctx, c.cursor.Load(), c.cfg.Batch)
		}
		caughtUp = len(recs) < c.cfg.Batch
		if err != nil {
			if c.stopping() {
				return
			}
			failures++
			c.failures.Add(1)
			log.Warn("events: cannot read the log; retrying", "err", err)
			c.wait(nil, backoff(failures))
			continue
		}
		if len(recs) == 0 {
			if c.stopping() {
				return
			}
			gapSince = time.Time{}
			c.wait(wake, pollEvery)
			continue
		}
		c.head.Store(max(c.head.Load(), recs[len(recs)-1].Pos))
		// Keep the run without holes after the cursor; wait a little for a hole to fill.
		n := 0
		for n < len(recs) && recs[n].Pos == c.cursor.Load()+int64(n)+1 {
			n++
		}
		if n == 0 {
			if c.stopping() {
				return // the hole is read past at the next start, after gapWait
			}
			if gapSince.IsZero() {
				gapSince = time.Now()
			}
			if time.Since(gapSince) < gapWait {
				c.wait(wake, 50*time.Millisecond)
				continue
			}
			// A hole that stays is an event that is gone: read past it.
			n = 1
			for n < len(recs) && recs[n].Pos == recs[0].Pos+int64(n) {
				n++
			}
		}
		gapSince = time.Time{}
		recs = recs[:n]
		evs := make([]Event, 0, len(recs))
		for i, r := range recs {
			if c.cfg.Types != nil && !c.cfg.Types.Has(Type(r.Type)) {
				continue
			}
			if c.cfg.SkipLocal && (decoded != nil || c.bus.isMine(r.ID)) {
				// recent holds only this node's events (Bus.remember); one read from the
				// database may be this node's too, stored but not yet announced.
				continue
			}
			if decoded != nil {
				evs = append(evs, decoded[i])
				continue
			}
			e, err := Decode(r)
			if err != nil {
				log.Error("events: an event cannot be decoded; skipped", "event", r.ID, "err", err)
				continue
			}
			evs = append(evs, e)
		}
		if len(evs) > 0 {
			if err := c.handle(ctx, evs); err != nil {
				if c.stopping() {
					return
				}
				failures++
				c.failures.Add(1)
				log.Warn("events: consumer failed; retrying the same events", "events", len(evs), "err", err)
				c.wait(nil, backoff(failures))
				continue
			}
			c.handled.Add(uint64(len(evs)))
		}
		failures = 0
		c.cursor.Store(recs[len(recs)-1].Pos)
		if time.Since(lastSaved) >= cursorEvery {
			save()
		}
	}
}

func (c *Consumer) handle(ctx context.Context, evs []Event) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = errPanic{p}
		}
	}()
	return c.cfg.Handle(ctx, evs)
}

type errPanic struct{ v any }

func (e errPanic) Error() string { return "events: consumer panicked" }

func (c *Consumer) acquire(ctx context.Context) (bool, error) {
	if c.bus.cfg.Leases == nil {
		return true, nil
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return c.bus.cfg.Leases.AcquireMember(lctx, "events-lease:"+c.cfg.Name, c.bus.cfg.Node, leaseTTL, 1)
}

// load sets the cursor: the stored one of a shared consumer, the log's end for a node's.
func (c *Consumer) load(ctx context.Context) error {
	store := c.bus.cfg.Store
	if c.cfg.Shared {
		pos, err := store.EventCursor(ctx, c.cfg.Name)
		if err != nil {
			return err
		}
		c.cursor.Store(pos)
		c.head.Store(max(c.head.Load(), pos))
		return nil
	}
	if c.cursor.Load() > 0 {
		return nil // the node's consumer goes on from where it was
	}
	pos, err := store.LastEventPos(ctx)
	if err != nil {
		return err
	}
	c.cursor.Store(pos)
	c.head.Store(max(c.head.Load(), pos))
	return nil
}

// wait sleeps for d, until woken (wake closed) or stopped.
func (c *Consumer) wait(wake <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-wake:
	case <-t.C:
	case <-c.stop:
	}
}

func backoff(failures int) time.Duration {
	d := 100 * time.Millisecond << min(failures, 6)
	return min(d, maxBackoff)
}
