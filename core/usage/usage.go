// Package usage counts the client API calls of each owner account and enforces the
// monthly quota of its plan (SPEC 2: apiCallsUsed, apiCallsResetAt, maxApiCallsMonth)
// without a database write per call.
//
// How: every call adds 1 to the account's counter in the cluster engine (one Redis
// HINCRBY, or a map update in memory). Each node's flusher periodically takes the pending
// counters (atomically, cluster-wide) and adds them to the accounts in storage, starting a
// new month when the stored period is over. A call is allowed while stored + pending stays
// within the quota; each node caches the stored figure and reloads it after every flush.
//
// Precision: the total is exact (every counted call reaches storage), except that a node
// killed between taking counters and writing them loses that one batch. The quota check
// can let through at most the calls made in one flush interval (default 10 s) after
// another node's flush, while this node's cached stored figure is older than that flush.
// apiCallsUsed as shown to the owner lags by at most one flush interval.
//
// Outages: the cached figures are reloaded by the flusher, never on the request path, and
// a reload that fails keeps the figures it had; so counting a call of an account this node
// has seen needs the cluster engine only, and calls that need no database (nonce,
// heartbeat) keep working while storage is down. An account not yet cached whose figures
// cannot be read because storage is unavailable is let through (counted, checked at the
// next load): the quota is a monthly budget, not a guard worth refusing service for.
package usage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/plans"
	"github.com/keyward/keyward/storage"
)

// group names the cluster counters of API calls.
const group = "apicalls"

// DefaultFlushInterval is how often pending counts are written to storage.
const DefaultFlushInterval = 10 * time.Second

// PeriodEnd is when a monthly counter that runs at t resets: the first instant of the next
// calendar month, UTC.
func PeriodEnd(t time.Time) time.Time {
	y, m, _ := t.UTC().Date()
	return time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
}

// Config tunes a Meter. Zero values take the defaults.
type Config struct {
	FlushInterval time.Duration
	Now           func() time.Time
}

// Meter counts calls and checks quotas. Run is its flusher, on a goroutine its owner starts
// and stops (the node's supervisor); Close makes the last flush once Run has returned.
type Meter struct {
	counters cluster.Counters
	store    storage.AccountStore
	plans    *plans.Catalogue
	log      *slog.Logger
	cfg      Config

	mu    sync.Mutex
	cache map[string]stored // account id → what storage said at the last load

	closeOnce sync.Once
}

type stored struct {
	used    int64
	resetAt time.Time
	limit   int64
	// called says a call used the figure since the last reload; figures no call used for
	// a whole flush interval are dropped rather than reloaded.
	called bool
}

// New builds a meter; Run flushes periodically.
func New(counters cluster.Counters, store storage.AccountStore, catalogue *plans.Catalogue, cfg Config, log *slog.Logger) *Meter {
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = DefaultFlushInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Meter{counters: counters, store: store, plans: catalogue, log: log, cfg: cfg,
		cache: map[string]stored{}}
}

// Count records one call of the account and refuses it with QUOTA_EXCEEDED (not counted)
// beyond the plan's monthly quota.
func (m *Meter) Count(ctx context.Context, accountID string) error {
	s, known, err := m.stored(ctx, accountID)
	if err != nil {
		return err
	}
	pending, err := m.counters.AddCount(ctx, group, accountID, 1)
	if err != nil {
		return fmt.Errorf("usage: count: %w", err)
	}
	if !known {
		return nil
	}
	used := s.used
	if !m.cfg.Now().Before(s.resetAt) {
		used = 0 // the stored month is over; the next flush starts a new one
	}
	if used+pending > s.limit {
		if _, err := m.counters.AddCount(ctx, group, accountID, -1); err != nil {
			m.log.Warn("could not uncount a refused call", "accountId", accountID, "err", err)
		}
		return core.E(core.CodeQuotaExceeded, "the monthly quota of %d API calls of this application's owner is used up", s.limit)
	}
	return nil
}

// stored answers the cached storage figures of the account, loading them when missing.
// ok is false when storage is unavailable and nothing is cached: the call is not checked.
func (m *Meter) stored(ctx context.Context, accountID string) (s stored, ok bool, err error) {
	m.mu.Lock()
	s, ok = m.cache[accountID]
	if ok && !s.called {
		s.called = true
		m.cache[accountID] = s
	}
	m.mu.Unlock()
	if ok {
		return s, true, nil
	}
	s, err = m.load(ctx, accountID)
	if errors.Is(err, storage.ErrUnavailable) {
		m.log.Warn("usage: storage unavailable; call not checked against the quota", "accountId", accountID, "err", err)
		return stored{}, false, nil
	}
	if err != nil {
		return stored{}, false, err
	}
	s.called = true
	m.mu.Lock()
	m.cache[accountID] = s
	m.mu.Unlock()
	return s, true, nil
}

func (m *Meter) load(ctx context.Context, accountID string) (stored, error) {
	a, err := m.store.GetAccount(ctx, accountID)
	if err != nil {
		return stored{}, fmt.Errorf("usage: load account: %w", err)
	}
	return stored{used: a.APICallsUsed, resetAt: a.APICallsResetAt, limit: int64(m.plans.MustGet(a.Plan).Limits.MaxAPICallsMonth)}, nil
}

// reload refreshes the cached figures calls used since the last reload, and drops the
// others. A figure that cannot be read is kept (storage may be down: calls go on being
// checked against the last known figures); a deleted account is dropped.
func (m *Meter) reload(ctx context.Context) {
	m.mu.Lock()
	ids := make([]string, 0, len(m.cache))
	for id, s := range m.cache {
		if !s.called {
			delete(m.cache, id)
			continue
		}
		s.called = false
		m.cache[id] = s
		ids = append(ids, id)
	}
	m.mu.Unlock()
	for _, id := range ids {
		s, err := m.load(ctx, id)
		m.mu.Lock()
		switch {
		case err == nil:
			if cur, ok := m.cache[id]; ok {
				s.called = cur.called
			}
			m.cache[id] = s
		case errors.Is(err, storage.ErrNotFound):
			delete(m.cache, id)
		}
		m.mu.Unlock()
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			m.log.Warn("usage: cannot reload quota figures; keeping the last known", "accounts", len(ids), "err", err)
			return // storage is likely down: the next flush tries again
		}
	}
}

// Flush takes every pending count and adds it to its account in storage. A count that
// cannot be written is put back for the next flush.
func (m *Meter) Flush(ctx context.Context) error {
	counts, err := m.counters.TakeCounts(ctx, group)
	if err != nil {
		return fmt.Errorf("usage: take counts: %w", err)
	}
	var errs []error
	for accountID, n := range counts {
		if n == 0 {
			continue
		}
		now := storage.Truncate(m.cfg.Now())
		_, err := m.store.UpdateAccount(ctx, accountID, func(a *storage.Account) error {
			if !now.Before(a.APICallsResetAt) {
				a.APICallsUsed, a.APICallsResetAt = 0, PeriodEnd(now)
			}
			a.APICallsUsed += n
			return nil
		})
		switch {
		case errors.Is(err, storage.ErrNotFound):
			// The account was deleted: its calls have nowhere to go.
		case err != nil:
			errs = append(errs, fmt.Errorf("usage: write %d calls of %s: %w", n, accountID, err))
			if _, err := m.counters.AddCount(ctx, group, accountID, n); err != nil {
				m.log.Error("API calls lost: could not put them back", "accountId", accountID, "calls", n, "err", err)
			}
		}
	}
	// This node's view includes every flush so far, without a load on the request path.
	m.reload(ctx)
	return errors.Join(errs...)
}

// Run flushes the pending counts every FlushInterval until ctx ends, then returns nil
// (Close makes the last flush). A failed flush keeps its counts for the next one.
func (m *Meter) Run(ctx context.Context) error {
	t := time.NewTicker(m.cfg.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.FlushInterval)
			if err := m.Flush(fctx); err != nil {
				m.log.Warn("API call counts not flushed, will retry", "err", err)
			}
			cancel()
		}
	}
}

// Close flushes what is pending, once: call it after Run returned. Idempotent.
func (m *Meter) Close(ctx context.Context) error {
	var err error
	m.closeOnce.Do(func() { err = m.Flush(ctx) })
	return err
}
