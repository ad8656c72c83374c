// Package events is Keyward's durable event log (issue 21). Every domain change and
// client action (SPEC 6.1: user.login, variable.update, …) is published here, and Publish
// returns once the event is stored (storage.EventLogStore), so an acknowledged change
// never loses its events to a crash. Concurrent publishes share one write (group
// commit). Consumers (log entries, webhook deliveries, socket pushes, app actors, client
// sessions) read the stored log after their cursor, in order, at least once; each is
// idempotent by event id. A consumer that falls behind catches up; nothing is dropped.
//
// A change's events are written with it where the engine allows (Change over
// storage.EventOutbox: in the change's SQLite transaction; a sign-in's with its session
// copies, WritePendingWith); elsewhere in a write the acknowledgement waits for.
//
// Notes (notes.go: ws.connect) are the exception: they record what happened on one node
// and change nothing, so they skip the log and go, in batches, to the consumers that want
// them (the application log's writer). None is dropped: past their bound, or refused by
// their consumer, they are stored in the log like any event.
package events

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/internal/supervise"
	"github.com/keyward/keyward/storage"
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
	// ID is the event's id (a UUID, given by Publish when empty): a log entry and a
	// webhook delivery of the event carry it, so a consumer that sees the event twice
	// writes them once.
	ID string
	// Pos is the event's position in the log and Seq its number among its app's events,
	// both set when it is stored.
	Pos, Seq int64
	Name     Type
	AppID    string
	Username string
	IP       string
	Country  string
	Level    string // default INFO
	Message  string
	Data     map[string]any
	At       time.Time
}

// Publisher is what producers of events need (Bus implements it). Publish returns once
// the event is stored; a change whose event could not be stored must not be
// acknowledged (the caller answers its error: storage.ErrUnavailable, a 503).
type Publisher interface {
	Publish(ctx context.Context, es ...Event) error
}

// ErrClosed is answered by Publish after Close.
var ErrClosed = fmt.Errorf("events: the event log is closed: %w", storage.ErrUnavailable)

// payload is the stored form of what an event carries besides its id, type, app and time.
type payload struct {
	Username string         `json:"username,omitempty"`
	IP       string         `json:"ip,omitempty"`
	Country  string         `json:"country,omitempty"`
	Level    string         `json:"level,omitempty"`
	Message  string         `json:"message,omitempty"`
	Data     map[string]any `json:"data,omitempty"`
}

// Encode turns an event into its stored record.
func Encode(e Event) (storage.EventRecord, error) {
	b, err := json.Marshal(payload{Username: e.Username, IP: e.IP, Country: e.Country, Level: e.Level, Message: e.Message, Data: e.Data})
	if err != nil {
		return storage.EventRecord{}, fmt.Errorf("events: encode %s: %w", e.Name, err)
	}
	return storage.EventRecord{ID: e.ID, Pos: e.Pos, Seq: e.Seq, Type: string(e.Name), AppID: e.AppID, Payload: b, At: storage.Truncate(e.At)}, nil
}

// Decode turns a stored record back into the event. Numbers in Data come back as
// json.Number, which encodes to JSON as it was (consumers handed this node's recent
// events get Data as published: they treat it as JSON values, never by Go type).
func Decode(r storage.EventRecord) (Event, error) {
	var p payload
	if len(r.Payload) > 0 {
		d := json.NewDecoder(bytes.NewReader(r.Payload))
		d.UseNumber()
		if err := d.Decode(&p); err != nil {
			return Event{}, fmt.Errorf("events: decode event %s: %w", r.ID, err)
		}
	}
	return Event{ID: r.ID, Pos: r.Pos, Seq: r.Seq, Name: Type(r.Type), AppID: r.AppID, Username: p.Username, IP: p.IP,
		Country: p.Country, Level: p.Level, Message: p.Message, Data: p.Data, At: r.At}, nil
}

// Config configures the log. Zero values take the defaults shown.
type Config struct {
	Store storage.EventLogStore
	// Leases elect the node that runs each shared consumer (the cluster engine); nil runs
	// every shared consumer here (a single node).
	Leases Leases
	// Node names this node in the leases; default a random id.
	Node string
	// Notify, when set, is called (on the log's own goroutine) after events were stored,
	// so that the other nodes' consumers wake at once (the server publishes it on the
	// cluster bus; they call Wake).
	Notify func()
	// KeepFor is how long events every shared consumer has handled are kept; default 1 h.
	KeepFor time.Duration
	// MaxAge bounds the log: events older than it are removed even if a consumer has not
	// handled them (it was stopped that long); default 7 days.
	MaxAge time.Duration
	// CompactEvery is how often compaction runs; default 1 minute.
	CompactEvery time.Duration
	Now          func() time.Time
	Log          *slog.Logger
	// Goroutines owns the log's loops (the writer, the notifier, the compaction and one per
	// consumer, of kinds events-writer, events-notifier, events-compaction and
	// events-consumer-NAME): the node's supervisor, which recovers, counts and restarts
	// them. nil: the log makes a supervisor of its own, stopped by Close.
	Goroutines supervise.Starter
}

// Leases is what shared consumers are elected with (cluster.Leases).
type Leases interface {
	AcquireMember(ctx context.Context, set, member string, ttl time.Duration, limit int) (bool, error)
}

// Bus is the durable event log of a node: producers publish to it, consumers read it.
type Bus struct {
	cfg Config

	mu        sync.Mutex
	next      *round // the round publishers join; nil when none waits
	closed    bool
	local     []func(Event)
	consumers []*Consumer
	appended  chan struct{} // closed and replaced after each stored round
	started   bool
	// recent are the last events this node stored (and only those: SkipLocal rests on
	// it), in position order: a consumer that
	// has caught up reads the next ones here instead of from the database (the log is
	// read once per node, not once per consumer).
	recent []cachedEvent
	// mine holds the ids of the last events this node handed to the store, recorded
	// before the store has them (mineRing keeps the order, mineMax bounds both): a
	// SkipLocal consumer that reads one back from the database before it was announced
	// (and so before it is in recent) still knows it as this node's.
	mine     map[string]struct{}
	mineRing []string
	mineNext int

	// notes wait for the notes loop (notes.go); spareNotes is the array of a batch
	// handed before, for the next; notesStored counts those that went to the durable log
	// instead.
	notes       []Event
	spareNotes  []Event
	noteWake    chan struct{}
	notesStored atomic.Uint64

	writing sync.Mutex // one round is written at a time (the writer, WritePendingWith)
	wake    chan struct{}
	notify  chan struct{}
	stop    chan struct{}
	done    sync.WaitGroup // the writer, the notifier and the compaction ended
	once    sync.Once
	// goroutines starts the loops; own is the supervisor made when Config has none.
	goroutines supervise.Starter
	own        *supervise.Supervisor
}

// round is one write that publishers wait for.
type round struct {
	records []storage.EventRecord
	events  []Event
	dropped []bool // events a Ticket cancelled before the round was taken
	done    chan struct{}
	err     error
}

// cachedEvent is a stored event with its record.
type cachedEvent struct {
	rec storage.EventRecord
	ev  Event
}

// recentMax bounds Bus.recent; half is dropped when it is full.
const recentMax = 8192

// mineMax bounds Bus.mine: a consumer further behind than that handles this node's
// events again, which SkipLocal consumers must bear anyway (their work is idempotent).
const mineMax = 2 * recentMax

// markMine records recs as this node's events, before they are stored.
func (b *Bus) markMine(recs []storage.EventRecord) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mine == nil {
		b.mine, b.mineRing = make(map[string]struct{}, mineMax), make([]string, mineMax)
	}
	for _, r := range recs {
		if old := b.mineRing[b.mineNext]; old != "" {
			delete(b.mine, old)
		}
		b.mineRing[b.mineNext] = r.ID
		b.mine[r.ID] = struct{}{}
		b.mineNext = (b.mineNext + 1) % mineMax
	}
}

// isMine answers whether this node stored the event id (of the last mineMax it stored).
func (b *Bus) isMine(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.mine[id]
	return ok
}

// remember adds stored events to recent.
func (b *Bus) remember(recs []storage.EventRecord, evs []Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.recent)+len(recs) > recentMax {
		keep := b.recent[len(b.recent)/2:]
		b.recent = append(make([]cachedEvent, 0, recentMax), keep...)
	}
	for i := range recs {
		c := cachedEvent{rec: recs[i], ev: evs[i]}
		n := len(b.recent)
		if n == 0 || b.recent[n-1].rec.Pos < c.rec.Pos {
			b.recent = append(b.recent, c)
			continue
		}
		// A change's transaction committed before a round but announced after it
		// (Change): put it in its place.
		j, found := slices.BinarySearchFunc(b.recent, c.rec.Pos, func(x cachedEvent, pos int64) int { return cmp.Compare(x.rec.Pos, pos) })
		if !found {
			b.recent = slices.Insert(b.recent, j, c)
		}
	}
}

// recentAfter answers up to n stored events from position after+1 on, without holes, from
// recent; nil when recent does not hold after+1 (the consumer reads the database).
func (b *Bus) recentAfter(after int64, n int) []cachedEvent {
	b.mu.Lock()
	defer b.mu.Unlock()
	i, found := slices.BinarySearchFunc(b.recent, after+1, func(c cachedEvent, pos int64) int { return cmp.Compare(c.rec.Pos, pos) })
	if !found {
		return nil
	}
	out := make([]cachedEvent, 0, min(n, len(b.recent)-i))
	for j := i; j < len(b.recent) && len(out) < n; j++ {
		if b.recent[j].rec.Pos != after+1+int64(len(out)) {
			break
		}
		out = append(out, b.recent[j])
	}
	return out
}

// writeTimeout bounds one append round.
const writeTimeout = 10 * time.Second

// NewBus starts the log's writer. Consumers registered with Consume run after Start.
func NewBus(cfg Config) *Bus {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Node == "" {
		cfg.Node = uuid.NewString()
	}
	if cfg.KeepFor <= 0 {
		cfg.KeepFor = time.Hour
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = 7 * 24 * time.Hour
	}
	if cfg.CompactEvery <= 0 {
		cfg.CompactEvery = time.Minute
	}
	b := &Bus{cfg: cfg, appended: make(chan struct{}), wake: make(chan struct{}, 1), notify: make(chan struct{}, 1), stop: make(chan struct{}),
		noteWake: make(chan struct{}, 1), goroutines: cfg.Goroutines}
	if b.goroutines == nil {
		b.own, _ = supervise.New(supervise.Config{Log: cfg.Log}) // no metrics: it cannot fail
		b.goroutines = b.own
	}
	b.loop("events-writer", b.loopEnded(), b.runWriter)
	b.loop("events-notifier", b.loopEnded(), b.runNotifier)
	return b
}

// loop starts run under the log's owner. run returns only once stopped (Close, or its
// context cancelled by the owner); ended is called then, once: a panic is not an end (the
// owner logs it, counts it and runs run again).
func (b *Bus) loop(kind string, ended func(), run supervise.Func) {
	var once sync.Once
	end := func() { once.Do(ended) }
	err := b.goroutines.Go(kind, supervise.Restart, func(ctx context.Context) error {
		err := run(ctx)
		end()
		return err
	})
	if err != nil {
		b.cfg.Log.Error("events: cannot start a loop", "kind", kind, "err", err)
		end()
	}
}

// loopEnded counts one more loop that Close waits for.
func (b *Bus) loopEnded() func() {
	b.done.Add(1)
	return b.done.Done
}

// OnStored registers fn to run for each event this node publishes, once it is stored and
// before Publish returns (the app actors of this node reload at once). fn runs on the
// log's writer goroutine and must not block. Register before publishing.
func (b *Bus) OnStored(fn func(Event)) {
	b.mu.Lock()
	b.local = append(b.local, fn)
	b.mu.Unlock()
}

// Publish stores the events and returns once they are stored: concurrent publishes
// share one write. A cancelled ctx stops the wait, not the write. Notes (notes.go) are
// queued for the notes consumers instead, and Publish does not wait for them.
func (b *Bus) Publish(ctx context.Context, es ...Event) error {
	es, notes := splitNotes(es)
	if len(notes) > 0 {
		over, err := b.publishNotes(notes)
		if err != nil {
			return err
		}
		es = append(es, over...) // beyond the notes' bound they are stored like events
	}
	if len(es) == 0 {
		return nil
	}
	r, err := b.enqueue(es)
	if err != nil {
		return err
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *Bus) enqueue(es []Event) (*round, error) {
	r, _, err := b.stage(es)
	if err != nil {
		return nil, err
	}
	b.kick()
	return r, nil
}

// kick wakes the writer.
func (b *Bus) kick() {
	select {
	case b.wake <- struct{}{}:
	default: // a wake-up is queued already
	}
}

// Ticket is the wait of staged events (Stage).
type Ticket struct {
	b        *Bus
	r        *round
	from, to int
}

// Stage adds the events to the round being gathered without waking the writer: another
// group commit that writes with WritePendingWith (the client's session writes) carries them
// in its own round, so a login's session and its events cost one wait. Wait returns once
// they are stored; Cancel withdraws them if the change failed before they were written.
func (b *Bus) Stage(es ...Event) (*Ticket, error) {
	r, from, err := b.stage(es)
	if err != nil {
		return nil, err
	}
	return &Ticket{b: b, r: r, from: from, to: from + len(es)}, nil
}

// Wait returns once the staged events are stored (waking the writer if no other round
// took them).
func (t *Ticket) Wait(ctx context.Context) error {
	if t == nil {
		return nil
	}
	select {
	case <-t.r.done:
		// Written already (the client's round took them): waking the writer now would
		// only make it write, in a transaction of its own, events staged for the next
		// such round.
		return t.r.err
	default:
	}
	t.b.kick()
	select {
	case <-t.r.done:
		return t.r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Cancel withdraws the staged events unless their round is being written already.
func (t *Ticket) Cancel() {
	if t == nil {
		return
	}
	t.b.mu.Lock()
	defer t.b.mu.Unlock()
	if t.b.next == t.r {
		for i := t.from; i < t.to; i++ {
			t.r.dropped[i] = true
		}
	}
}

// NewID answers a new event id: a UUID of version 7, whose first bits are the time, so
// that the ids of a write round sort together. The event log's id index and the log
// entries' primary key (the entry's id is its event's) then take a round's rows on
// their last page, not each on a page of its own: a round commits a few pages, not one
// per event.
func NewID() string {
	if id, err := uuid.NewV7(); err == nil {
		return id.String()
	}
	return uuid.NewString()
}

// splitNotes separates the notes from the events to store; es itself when it has none.
func splitNotes(es []Event) (stored, notes []Event) {
	n := 0
	for _, e := range es {
		if Notes.Has(e.Name) {
			n++
		}
	}
	switch n {
	case 0:
		return es, nil
	case len(es):
		return nil, es
	}
	stored, notes = make([]Event, 0, len(es)-n), make([]Event, 0, n)
	for _, e := range es {
		if Notes.Has(e.Name) {
			notes = append(notes, e)
		} else {
			stored = append(stored, e)
		}
	}
	return stored, notes
}

// stamp gives an event its id, time (stored precision) and level when it has none.
func (b *Bus) stamp(e Event) Event {
	if e.ID == "" {
		e.ID = NewID()
	}
	if e.At.IsZero() {
		e.At = b.cfg.Now()
	}
	e.At = storage.Truncate(e.At)
	if e.Level == "" {
		e.Level = LevelInfo
	}
	return e
}

func (b *Bus) stage(es []Event) (*round, int, error) {
	recs := make([]storage.EventRecord, len(es))
	stamped := make([]Event, len(es))
	for i, e := range es {
		e = b.stamp(e)
		rec, err := Encode(e)
		if err != nil {
			return nil, 0, err
		}
		recs[i], stamped[i] = rec, e
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, 0, ErrClosed
	}
	r := b.next
	if r == nil {
		r = &round{done: make(chan struct{})}
		b.next = r
	}
	from := len(r.records)
	r.records = append(r.records, recs...)
	r.events = append(r.events, stamped...)
	r.dropped = append(r.dropped, make([]bool, len(es))...)
	return r, from, nil
}

// runWriter writes a round whenever publishers wait: the publishers that arrive while a
// round is written share the next one. Stopped, it writes what waits and returns.
func (b *Bus) runWriter(ctx context.Context) error {
	for {
		select {
		case <-b.wake:
			b.writeRound()
		case <-b.stop:
			b.writeRound()
			return nil
		case <-ctx.Done():
			// The owner stops the node: what is published from now on is refused, as
			// after Close, rather than left waiting for a writer.
			b.mu.Lock()
			b.closed = true
			b.mu.Unlock()
			b.writeRound()
			return nil
		}
	}
}

func (b *Bus) writeRound() {
	b.writing.Lock()
	defer b.writing.Unlock()
	b.writeTaken(b.takeRound())
}

// takeRound detaches the round being gathered (nil when none): publishers that arrive
// later start the next one. The caller holds b.writing.
func (b *Bus) takeRound() *round {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.next
	b.next = nil
	return r
}

// live answers the round's records and events that no Ticket cancelled.
func (r *round) live() ([]storage.EventRecord, []Event) {
	recs := make([]storage.EventRecord, 0, len(r.records))
	evs := make([]Event, 0, len(r.events))
	for i := range r.records {
		if !r.dropped[i] {
			recs, evs = append(recs, r.records[i]), append(evs, r.events[i])
		}
	}
	return recs, evs
}

// writeTaken appends a taken round and answers its publishers. The caller holds b.writing.
func (b *Bus) writeTaken(r *round) {
	if r == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			answerPanicked(r, p)
			panic(p) // to the writer's owner, which logs and counts it
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	recs, evs := r.live()
	if len(recs) > 0 {
		b.markMine(recs)
		r.err = b.safeAppend(ctx, recs)
	}
	b.finish(r, recs, evs)
}

// finish answers a written round's publishers, after announcing its events when they
// were stored.
func (b *Bus) finish(r *round, recs []storage.EventRecord, evs []Event) {
	if r.err == nil && len(recs) > 0 {
		b.mu.Lock()
		local := b.local
		b.mu.Unlock()
		b.announce(local, recs, evs)
	} else if r.err != nil {
		b.cfg.Log.Error("events: cannot store events; their changes are refused", "events", len(r.records), "err", r.err)
	}
	close(r.done)
}

// answerPanicked answers a round's publishers with an error when its writer panicked
// before it answered them; the writer then panics on to its owner (the log's supervisor,
// or the caller of WritePendingWith), which logs and counts it.
func answerPanicked(r *round, p any) {
	select {
	case <-r.done:
	default:
		r.err = fmt.Errorf("events: the write panicked (%v): %w", p, storage.ErrUnavailable)
		close(r.done)
	}
}

// WritePendingWith writes the round being gathered (staged and published events) with
// write, on the caller's goroutine: write runs with the round in its context's
// storage.EventOutbox, so an engine that can stores the events in write's own
// transaction (a login's events with its session copies); the round is taken when the
// engine asks for it, after write took what it writes. What write did not store (it
// wrote nothing, it failed, or the engine has no such transaction) is appended after it,
// as the log's writer does. Answers write's error.
func (b *Bus) WritePendingWith(ctx context.Context, write func(ctx context.Context) error) error {
	b.writing.Lock()
	defer b.writing.Unlock()
	ob := &roundOutbox{b: b}
	defer func() {
		if p := recover(); p != nil {
			if ob.r != nil { // write panicked after the engine took the round
				answerPanicked(ob.r, p)
			}
			panic(p)
		}
	}()
	err := write(storage.WithEventOutbox(ctx, ob))
	switch {
	case ob.r == nil:
		b.writeTaken(b.takeRound())
	case ob.stored:
		b.finish(ob.r, ob.recs, ob.evs)
	default:
		b.writeTaken(ob.r)
	}
	return err
}

// roundOutbox hands a round to a store's transaction (WritePendingWith).
type roundOutbox struct {
	b      *Bus
	r      *round
	recs   []storage.EventRecord
	evs    []Event
	stored bool
}

func (o *roundOutbox) Take() []storage.EventRecord {
	if o.stored {
		return nil
	}
	if o.r == nil {
		if o.r = o.b.takeRound(); o.r == nil {
			return nil
		}
		o.recs, o.evs = o.r.live()
		o.b.markMine(o.recs)
	}
	return o.recs
}

func (o *roundOutbox) Stored(recs []storage.EventRecord) {
	copy(o.recs, recs)
	o.stored = true
}

// announce tells this node of stored events: the stored-event hooks, the recent events
// consumers read, and the consumers (here and, through Notify, on the other nodes).
func (b *Bus) announce(local []func(Event), recs []storage.EventRecord, evs []Event) {
	for i := range evs {
		evs[i].Pos, evs[i].Seq = recs[i].Pos, recs[i].Seq
		for _, fn := range local {
			b.safeLocal(fn, evs[i])
		}
	}
	b.remember(recs, evs)
	b.signal()
}

func (b *Bus) safeAppend(ctx context.Context, recs []storage.EventRecord) error {
	if err := b.cfg.Store.AppendEvents(ctx, recs); err != nil {
		return fmt.Errorf("events: store: %w", err)
	}
	return nil
}

func (b *Bus) safeLocal(fn func(Event), e Event) {
	defer func() {
		if p := recover(); p != nil {
			b.cfg.Log.Error("events: a stored-event hook panicked", "event", e.Name, "panic", p)
		}
	}()
	fn(e)
}

// signal wakes this node's consumers and, through Notify, the other nodes'.
func (b *Bus) signal() {
	b.mu.Lock()
	close(b.appended)
	b.appended = make(chan struct{})
	b.mu.Unlock()
	select {
	case b.notify <- struct{}{}:
	default:
	}
}

// Wake wakes this node's consumers: another node stored events.
func (b *Bus) Wake() {
	b.mu.Lock()
	close(b.appended)
	b.appended = make(chan struct{})
	b.mu.Unlock()
}

func (b *Bus) changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.appended
}

func (b *Bus) runNotifier(ctx context.Context) error {
	for {
		select {
		case <-b.stop:
			return nil
		case <-ctx.Done():
			return nil
		case <-b.notify:
			if b.cfg.Notify != nil {
				b.cfg.Notify() // a panic goes to the owner, which counts it and runs this again
			}
		}
	}
}

// Start runs the consumers registered so far and the compaction. Idempotent.
func (b *Bus) Start() {
	b.mu.Lock()
	if b.started || b.closed {
		b.mu.Unlock()
		return
	}
	b.started = true
	cs := append([]*Consumer(nil), b.consumers...)
	b.mu.Unlock()
	for _, c := range cs {
		c.start()
	}
	b.loop("events-compaction", b.loopEnded(), b.runCompaction)
	b.loop("events-notes", b.loopEnded(), b.runNotes)
}

// Consumers lists the registered consumers, for metrics.
func (b *Bus) Consumers() []*Consumer {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*Consumer(nil), b.consumers...)
}

// drainTimeout bounds how long Close lets consumers catch up with what was stored.
const drainTimeout = 5 * time.Second

// Close writes what is being published, lets the consumers catch up for a few seconds
// (what they have not handled then waits in the log for the next start) and stops them.
// Publish fails with ErrClosed afterwards. Idempotent.
func (b *Bus) Close() {
	b.once.Do(func() {
		b.mu.Lock()
		b.closed = true
		cs := append([]*Consumer(nil), b.consumers...)
		started := b.started
		b.mu.Unlock()
		close(b.stop)
		b.done.Wait()
		if started {
			deadline := time.Now().Add(drainTimeout)
			for _, c := range cs {
				c.close(deadline)
			}
		}
		if b.own != nil {
			_ = b.own.Stop(context.Background()) // every loop returned already
		}
	})
}

// runCompaction removes, every CompactEvery, the events every shared consumer handled
// more than KeepFor ago, and the events older than MaxAge whoever handled them.
func (b *Bus) runCompaction(ctx context.Context) error {
	t := time.NewTicker(b.cfg.CompactEvery)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return nil
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := b.Compact(context.Background()); err != nil {
				b.cfg.Log.Warn("events: compaction failed; retrying later", "err", err)
			}
		}
	}
}

// compactChunk and compactChunks bound one compaction pass.
const (
	compactChunk  = 10_000
	compactChunks = 100
)

// Compact runs one compaction pass (see runCompaction).
func (b *Bus) Compact(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	head, err := b.cfg.Store.LastEventPos(ctx)
	if err != nil {
		return err
	}
	through := head
	for _, c := range b.Consumers() {
		if !c.cfg.Shared {
			continue
		}
		pos, err := b.cfg.Store.EventCursor(ctx, c.cfg.Name)
		if err != nil {
			return err
		}
		through = min(through, pos)
	}
	now := b.cfg.Now()
	var errs []error
	for _, pass := range []struct {
		through int64
		before  time.Time
	}{{through, now.Add(-b.cfg.KeepFor)}, {head, now.Add(-b.cfg.MaxAge)}} {
		for range compactChunks {
			n, err := b.cfg.Store.CompactEvents(ctx, pass.through, pass.before, compactChunk)
			if err != nil {
				errs = append(errs, err)
				break
			}
			if n < compactChunk {
				break
			}
		}
	}
	return errors.Join(errs...)
}
