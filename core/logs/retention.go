package logs

import (
	"context"
	"log/slog"
	"sync"
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

// Janitor enforces retention in the background.
type Janitor struct {
	store storage.LogStore
	cfg   RetentionConfig
	log   *slog.Logger
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// StartJanitor runs retention now and then every cfg.Every until Close.
func StartJanitor(store storage.LogStore, cfg RetentionConfig, log *slog.Logger) *Janitor {
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
	j := &Janitor{store: store, cfg: cfg, log: log, stop: make(chan struct{}), done: make(chan struct{})}
	go j.run()
	return j
}

func (j *Janitor) run() {
	defer close(j.done)
	t := time.NewTicker(j.cfg.Every)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), j.cfg.Every)
		if err := j.Sweep(ctx); err != nil {
			j.log.Warn("log retention did not complete, will retry", "err", err)
		}
		cancel()
		select {
		case <-j.stop:
			return
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

// Close stops the janitor. Idempotent.
func (j *Janitor) Close() {
	j.once.Do(func() { close(j.stop) })
	<-j.done
}
