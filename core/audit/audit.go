package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/internal/supervise"
	"github.com/keyward/keyward/storage"
)

// Defaults of Config.
const (
	DefaultRetention = 90 * 24 * time.Hour
	DefaultBatchSize = 200
	DefaultQueue     = 10_000
	purgeEvery       = time.Hour
	// recoverEvery is how often the entries staged by a stopped node's changes are looked
	// for (storage.AuditRecoverer); the writer also looks at start.
	recoverEvery = 30 * time.Second
	// recoverMinAge spares, in the periodic runs, the staged entries their own change is
	// appending now (a few milliseconds after it staged them).
	recoverMinAge = 5 * time.Second
	// writeAttempts bounds the tries of one group's write; the callers wait for it.
	writeAttempts = 3
	writeTimeout  = 10 * time.Second
)

// ErrNotStored is answered by Record when the entry could not be stored: the change it
// describes must not be acknowledged as if it were in the log.
var ErrNotStored = errors.New("audit: entry not stored")

// Config tunes the writer.
type Config struct {
	// Retention is how long entries are kept; 0 means DefaultRetention.
	Retention time.Duration
	// BatchSize bounds the entries of one group commit (0: DefaultBatchSize).
	BatchSize int
	// Queue bounds the entries waiting for the writer (0: DefaultQueue); Record blocks,
	// within its context, when it is full.
	Queue int
	Now   func() time.Time
	// Goroutines owns the writer (kind audit-writer): the node's supervisor, which recovers,
	// counts and restarts it. nil: a supervisor of the service's own, stopped by Close.
	Goroutines supervise.Starter
}

// Service records and lists audit entries.
type Service struct {
	store storage.AuditStore
	cfg   Config
	log   *slog.Logger

	mu     sync.RWMutex // guards closed against Record racing Close
	closed bool
	queue  chan pending
	done   chan struct{}
	ended  sync.Once
	own    *supervise.Supervisor
}

// pending is one entry waiting for its group commit; stored gets the outcome (buffered:
// the writer never waits for a caller that gave up).
type pending struct {
	entry  storage.AuditEntry
	stored chan error
}

// New starts the writer; Close stops it.
func New(store storage.AuditStore, cfg Config, log *slog.Logger) *Service {
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Service{store: store, cfg: cfg, log: log, queue: make(chan pending, cfg.Queue), done: make(chan struct{})}
	owner := cfg.Goroutines
	if owner == nil {
		s.own, _ = supervise.New(supervise.Config{Log: log}) // no metrics: it cannot fail
		owner = s.own
	}
	if err := owner.Go("audit-writer", supervise.Restart, s.run); err != nil {
		log.Error("audit: cannot start the writer; entries are written one by one", "err", err)
		s.shut()
		s.end()
	}
	return s
}

// shut refuses the queue from now on (Record writes at once); the writer writes what
// waits in it and ends.
func (s *Service) shut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.queue)
	}
}

func (s *Service) end() { s.ended.Do(func() { close(s.done) }) }

// Record stores e and returns once it is stored (nil) or could not be (an error wrapping
// ErrNotStored, or ctx's error when the caller stopped waiting: the entry may then still
// be stored). It gives e an id and a time when it has none. Concurrent calls share one
// write (a group commit): the writer takes every entry queued while the last write ran.
// After Close the entry is written at once, so that nothing recorded late is lost either.
func (s *Service) Record(ctx context.Context, e storage.AuditEntry) error {
	if e.ID == "" {
		e.ID = uuid.NewString()
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = storage.Truncate(s.cfg.Now())
	}
	p := pending{entry: e, stored: make(chan error, 1)}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return s.write([]storage.AuditEntry{e})
	}
	select {
	case s.queue <- p:
		s.mu.RUnlock()
	case <-ctx.Done():
		s.mu.RUnlock()
		return fmt.Errorf("%w: %w", ErrNotStored, ctx.Err())
	}
	select {
	case err := <-p.stored:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: waiting for the write: %w", ErrNotStored, ctx.Err())
	}
}

// Now is the entries' clock (Config.Now): the HTTP edge stamps with it the entries it
// hands to a change's own transaction (storage.AuditOutbox).
func (s *Service) Now() time.Time { return s.cfg.Now() }

// SettleParts appends the one entry of a bulk request whose records were each changed in
// a write of their own, every write having stored its part (storage.AuditParts), and
// reports whether there was one. Call it only when KeepsParts.
func (s *Service) SettleParts(ctx context.Context, group string) (bool, error) {
	st, ok := s.store.(storage.AuditPartSettler)
	if !ok {
		return false, errors.New("audit: the store keeps no parts of bulk entries")
	}
	return st.SettleAuditParts(ctx, group)
}

// KeepsParts reports whether the store keeps parts of bulk entries (storage.AuditPartSettler).
func (s *Service) KeepsParts() bool {
	_, ok := s.store.(storage.AuditPartSettler)
	return ok
}

// Close writes every queued entry and stops the writer.
func (s *Service) Close() {
	s.shut()
	<-s.done
	if s.own != nil {
		_ = s.own.Stop(context.Background()) // the writer returned already
	}
}

// run is the writer: it takes the first waiting entry, every other one queued by then (up
// to BatchSize), writes them in one AppendAudit and answers each caller. There is no
// timer: a lone entry is written at once, and entries arriving during a write make the
// next group. Its owner's stop (ctx) is a Close: what waits is written, and it ends.
func (s *Service) run(ctx context.Context) error {
	defer context.AfterFunc(ctx, s.shut)()
	purge := time.NewTicker(purgeEvery)
	defer purge.Stop()
	var recoverC <-chan time.Time
	if _, ok := s.store.(storage.AuditRecoverer); ok {
		t := time.NewTicker(recoverEvery)
		defer t.Stop()
		recoverC = t.C
		s.recoverStaged(0)
	}
	s.purge()
	group := make([]pending, 0, s.cfg.BatchSize)
	entries := make([]storage.AuditEntry, 0, s.cfg.BatchSize)
	defer func() {
		// A panic fails the group's callers, then goes on to the owner, which logs it,
		// counts it and runs the writer again (write itself turns a store's panic into
		// ErrNotStored).
		if p := recover(); p != nil {
			for _, q := range group {
				select {
				case q.stored <- fmt.Errorf("%w: the writer panicked: %v", ErrNotStored, p):
				default: // answered already
				}
			}
			panic(p)
		}
	}()
	for {
		select {
		case p, ok := <-s.queue:
			if !ok {
				s.end()
				return nil
			}
			group = append(group[:0], p)
		more:
			for len(group) < s.cfg.BatchSize {
				select {
				case q, ok := <-s.queue:
					if !ok {
						break more
					}
					group = append(group, q)
				default:
					break more
				}
			}
			entries = entries[:0]
			for _, q := range group {
				entries = append(entries, q.entry)
			}
			err := s.write(entries)
			for _, q := range group {
				q.stored <- err
			}
		case <-purge.C:
			s.purge()
		case <-recoverC:
			s.recoverStaged(recoverMinAge)
		}
	}
}

// write stores a group, retrying a failed write a few times (a retried group writes each
// entry once, see storage.AuditStore); what still fails is logged entry by entry and
// answered as ErrNotStored.
func (s *Service) write(group []storage.AuditEntry) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("audit write panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("%w: write panicked: %v", ErrNotStored, r)
		}
	}()
	for attempt := range writeAttempts {
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		err = s.store.AppendAudit(ctx, group)
		cancel()
		if err == nil {
			return nil
		}
		if attempt+1 < writeAttempts {
			time.Sleep(time.Duration(attempt+1) * 50 * time.Millisecond)
		}
	}
	for _, e := range group {
		s.log.Error("audit entry not stored", "err", err, "id", e.ID, "account", e.AccountID, "route", e.Method+" "+e.Route,
			"record", e.RecordType+"/"+e.RecordID, "actor", e.ActorType+":"+e.ActorName)
	}
	return fmt.Errorf("%w: %w", ErrNotStored, err)
}

// recoverStaged appends the entries a stopped node staged with changes it made
// (storage.AuditRecoverer); a panic goes to the writer's owner.
func (s *Service) recoverStaged(minAge time.Duration) {
	r, ok := s.store.(storage.AuditRecoverer)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := r.RecoverAudit(ctx, minAge)
	if err != nil {
		s.log.Warn("audit: recovering staged entries failed", "err", err)
	} else if n > 0 {
		s.log.Info("audit: appended entries staged by changes of a stopped node", "appended", n)
	}
}

// purge removes the entries past the retention; a panic goes to the writer's owner.
func (s *Service) purge() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := s.store.DeleteAuditBefore(ctx, s.cfg.Now().Add(-s.cfg.Retention))
	if err != nil {
		s.log.Warn("audit retention purge failed", "err", err)
	} else if n > 0 {
		s.log.Info("audit retention purge", "deleted", n)
	}
}

// List answers one page of entries, newest first, and the total.
func (s *Service) List(ctx context.Context, q storage.AuditQuery) ([]storage.AuditEntry, int, error) {
	list, total, err := s.store.ListAudit(ctx, q)
	if err != nil {
		return nil, 0, fmt.Errorf("audit: list: %w", err)
	}
	return list, total, nil
}
