package logs

import (
	"context"
	"log/slog"
	"time"
)

// RetentionConfig bounds how much log an installation keeps. Zero values take the defaults.
type RetentionConfig struct {
	MaxAge    time.Duration // default 90 days
	MaxPerApp int           // default 1,000,000 entries
	Every     time.Duration // how often the janitor runs; default 1 hour
	// PurgeEvery is how often the janitor resumes the purges no node is running (default
	// 30 s, as the audit log's recovery); one not touched for PurgeStale (default 2
	// minutes; a chunk of 10,000 entries takes well under a second) has no node running it.
	PurgeEvery time.Duration
	PurgeStale time.Duration
	Now        func() time.Time
}

// Janitor enforces retention and finishes the purges a stopped node left (ResumePurges)
// in the background: Run, on a goroutine its owner starts and stops (the node's
// supervisor).
type Janitor struct {
	store Store
	cfg   RetentionConfig
	log   *slog.Logger
}

// NewJanitor builds a janitor; Run applies retention.
func NewJanitor(store Store, cfg RetentionConfig, log *slog.Logger) *Janitor {
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = 90 * 24 * time.Hour
	}
	if cfg.MaxPerApp <= 0 {
		cfg.MaxPerApp = 1_000_000
	}
	if cfg.Every <= 0 {
		cfg.Every = time.Hour
	}
	if cfg.PurgeEvery <= 0 {
		cfg.PurgeEvery = 30 * time.Second
	}
	if cfg.PurgeStale <= 0 {
		cfg.PurgeStale = 2 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Janitor{store: store, cfg: cfg, log: log}
}

// Run resumes the purges left by a stopped node and applies retention now, then resumes
// purges every cfg.PurgeEvery and applies retention every cfg.Every until ctx ends (a
// sweep under way is cut short: the next start finishes it), then returns nil.
//
// At start every stored purge is resumed, as the audit log's recovery appends every
// staged entry at start: on a cluster, another node may be running one of them still;
// both runs then delete its entries once between them (only that node's answer counts
// fewer). Later runs resume only the purges not touched for cfg.PurgeStale.
func (j *Janitor) Run(ctx context.Context) error {
	t := time.NewTicker(j.cfg.Every)
	defer t.Stop()
	p := time.NewTicker(j.cfg.PurgeEvery)
	defer p.Stop()
	j.resume(ctx, 0)
	for {
		sctx, cancel := context.WithTimeout(ctx, j.cfg.Every)
		if err := j.Sweep(sctx); err != nil && ctx.Err() == nil {
			j.log.Warn("log retention did not complete, will retry", "err", err)
		}
		cancel()
	wait:
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-p.C:
				j.resume(ctx, j.cfg.PurgeStale)
			case <-t.C:
				break wait
			}
		}
	}
}

func (j *Janitor) resume(ctx context.Context, stale time.Duration) {
	if _, err := j.ResumePurges(ctx, stale); err != nil && ctx.Err() == nil {
		j.log.Warn("log purges left by a stopped node did not complete, will retry", "err", err)
	}
}

// ResumePurges runs to their end the stored purges (storage.LogPurge) not touched for
// stale (0: every one) and answers how many it finished. Each ends at the cutoff it was
// asked with; its audit entry was stored with it.
func (j *Janitor) ResumePurges(ctx context.Context, stale time.Duration) (int, error) {
	list, err := j.store.LogPurges(ctx)
	if err != nil {
		return 0, err
	}
	done := 0
	for _, p := range list {
		if stale > 0 && j.cfg.Now().Sub(p.TouchedAt) < stale {
			continue // its node is running it
		}
		n, err := j.store.RunLogPurge(ctx, p)
		if err != nil {
			return done, err
		}
		j.log.Info("log purge resumed", "purge", p.ID, "app", p.AppID, "before", p.Before, "deleted", n, "requestId", p.RequestID)
		done++
	}
	return done, nil
}

// Sweep applies the maximum age to every app, then the per-app cap.
func (j *Janitor) Sweep(ctx context.Context) error {
	if _, err := j.store.DeleteLogsBefore(ctx, "", j.cfg.Now().Add(-j.cfg.MaxAge)); err != nil {
		return err
	}
	apps, err := j.store.LogApps(ctx, j.cfg.MaxPerApp)
	if err != nil {
		return err
	}
	for _, app := range apps {
		if _, err := j.store.TrimLogs(ctx, app, j.cfg.MaxPerApp); err != nil {
			return err
		}
	}
	return nil
}
