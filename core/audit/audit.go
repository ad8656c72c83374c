package audit

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/storage"
)

// Defaults of Config.
const (
	DefaultRetention  = 90 * 24 * time.Hour
	DefaultFlushEvery = 200 * time.Millisecond
	DefaultBatchSize  = 200
	DefaultQueue      = 10_000
	purgeEvery        = time.Hour
)

// Config tunes the writer.
type Config struct {
	// Retention is how long entries are kept; 0 means DefaultRetention.
	Retention  time.Duration
	FlushEvery time.Duration
	BatchSize  int
	Queue      int
	Now        func() time.Time
}

// Service records and lists audit entries.
type Service struct {
	store storage.AuditStore
	cfg   Config
	log   *slog.Logger

	mu     sync.RWMutex // guards closed against Record racing Close
	closed bool
	queue  chan storage.AuditEntry
	done   chan struct{}
}

// New starts the writer; Close stops it.
func New(store storage.AuditStore, cfg Config, log *slog.Logger) *Service {
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.FlushEvery <= 0 {
		cfg.FlushEvery = DefaultFlushEvery
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
	s := &Service{store: store, cfg: cfg, log: log, queue: make(chan storage.AuditEntry, cfg.Queue), done: make(chan struct{})}
	go s.run()
	return s
}

// Record queues e, giving it an id and a time when it has none. After Close the entry is
// written at once, so that nothing recorded late is lost either.
func (s *Service) Record(e storage.AuditEntry) {
	if e.ID == "" {
		e.ID = uuid.NewString()
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = storage.Truncate(s.cfg.Now())
	}
	s.mu.RLock()
	if !s.closed {
		s.queue <- e
		s.mu.RUnlock()
		return
	}
	s.mu.RUnlock()
	s.write([]storage.AuditEntry{e})
}

// Close writes every queued entry and stops the writer.
func (s *Service) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return
	}
	s.closed = true
	close(s.queue)
	s.mu.Unlock()
	<-s.done
}

func (s *Service) run() {
	defer close(s.done)
	flush := time.NewTicker(s.cfg.FlushEvery)
	defer flush.Stop()
	purge := time.NewTicker(purgeEvery)
	defer purge.Stop()
	batch := make([]storage.AuditEntry, 0, s.cfg.BatchSize)
	write := func() {
		if len(batch) > 0 {
			s.write(batch)
			batch = batch[:0]
		}
	}
	s.purge()
	for {
		select {
		case e, ok := <-s.queue:
			if !ok {
				write()
				return
			}
			batch = append(batch, e)
			if len(batch) >= s.cfg.BatchSize {
				write()
			}
		case <-flush.C:
			write()
		case <-purge.C:
			s.purge()
		}
	}
}

// write stores a batch, retrying a failed write a few times (a retried batch writes each
// entry once, see storage.AuditStore); what still fails is logged entry by entry.
func (s *Service) write(batch []storage.AuditEntry) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("audit write panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	var err error
	for attempt := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = s.store.AppendAudit(ctx, batch)
		cancel()
		if err == nil {
			return
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	for _, e := range batch {
		s.log.Error("audit entry not stored", "err", err, "id", e.ID, "account", e.AccountID, "route", e.Method+" "+e.Route,
			"record", e.RecordType+"/"+e.RecordID, "actor", e.ActorType+":"+e.ActorName)
	}
}

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
