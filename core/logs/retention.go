package logs

import (
	"context"
	"log/slog"
	"time"

	"github.com/keyward/keyward/storage"
)

// RetentionConfig bounds how much log an installation keeps. Zero values take the defaults.
type RetentionConfig struct {
	MaxAge    time.Duration // default 90 days
	MaxPerApp int           // default 1,000,000 entries
	Every     time.Duration // how often the janitor runs; default 1 hour
	Now       func() time.Time
}

// Janitor enforces retention in the background: Run, on a goroutine its owner starts and
// stops (the node's supervisor).
type Janitor struct {
	store storage.LogStore
	cfg   RetentionConfig
	log   *slog.Logger
}

// NewJanitor builds a janitor; Run applies retention.
func NewJanitor(store storage.LogStore, cfg RetentionConfig, log *slog.Logger) *Janitor {
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = 90 * 24 * time.Hour
	}
	if cfg.MaxPerApp <= 0 {
		cfg.MaxPerApp = 1_000_000
	}
	if cfg.Every <= 0 {
		cfg.Every = time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Janitor{store: store, cfg: cfg, log: log}
}

// Run applies retention now and then every cfg.Every until ctx ends (a sweep under way is
// cut short: the next start finishes it), then returns nil.
func (j *Janitor) Run(ctx context.Context) error {
	t := time.NewTicker(j.cfg.Every)
	defer t.Stop()
	for {
		sctx, cancel := context.WithTimeout(ctx, j.cfg.Every)
		if err := j.Sweep(sctx); err != nil && ctx.Err() == nil {
			j.log.Warn("log retention did not complete, will retry", "err", err)
		}
		cancel()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
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
