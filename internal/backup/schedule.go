package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/blobs"
)

// Object is a stored backup.
type Object struct {
	Name      string    `json:"name"`
	Size      int64     `json:"size"`
	CreatedAt time.Time `json:"createdAt"`
}

// Destination keeps backups: a folder (Folder) or an S3-compatible bucket (S3).
type Destination interface {
	// Put stores the file at path under name.
	Put(ctx context.Context, name, path string) error
	// List answers the stored backups, any order.
	List(ctx context.Context) ([]Object, error)
	// Open answers a backup's bytes and size; os.ErrNotExist when there is none.
	Open(ctx context.Context, name string) (io.ReadCloser, int64, error)
	// Delete removes a backup.
	Delete(ctx context.Context, name string) error
	// String says where, for logs and the page.
	String() string
}

// Retention says which backups a Scheduler keeps: at most Keep (0: all) and none older
// than MaxAge (0: any age). The newest backup is always kept.
type Retention struct {
	Keep   int
	MaxAge time.Duration
}

// Result is the outcome of one backup.
type Result struct {
	Name     string        `json:"name,omitempty"`
	Size     int64         `json:"size"`
	At       time.Time     `json:"at"`
	Duration time.Duration `json:"-"`
	Millis   int64         `json:"durationMs"`
	Error    string        `json:"error,omitempty"`
	Manual   bool          `json:"manual"`
}

// Scheduler takes the node's backups every interval (and when asked), stores them at a
// Destination and applies the Retention. One backup runs at a time.
type Scheduler struct {
	store storage.Store
	blobs blobs.Store
	dest  Destination
	every time.Duration
	keep  Retention
	info  Info
	log   *slog.Logger
	now   func() time.Time

	run  sync.Mutex // held while a backup runs
	mu   sync.Mutex // guards last
	last Result

	lastSuccess, lastSize prometheus.Gauge
	failures              prometheus.Counter
	duration              prometheus.Gauge
	interval              prometheus.Gauge
}

// SchedulerConfig builds a Scheduler.
type SchedulerConfig struct {
	Store storage.Store
	Blobs blobs.Store
	Dest  Destination
	// Every is the interval of scheduled backups; 0 takes them only when asked.
	Every     time.Duration
	Retention Retention
	Info      Info
	Log       *slog.Logger
	// Metrics, when set, gets keyward_backup_* metrics.
	Metrics prometheus.Registerer
}

// NewScheduler builds a Scheduler; Run starts its schedule.
func NewScheduler(cfg SchedulerConfig) (*Scheduler, error) {
	s := &Scheduler{store: cfg.Store, blobs: cfg.Blobs, dest: cfg.Dest, every: cfg.Every, keep: cfg.Retention,
		info: cfg.Info, log: cfg.Log, now: time.Now,
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Name: "keyward_backup_last_success_timestamp_seconds",
			Help: "When the last backup that succeeded finished (unix seconds); 0 before the first."}),
		lastSize: prometheus.NewGauge(prometheus.GaugeOpts{Name: "keyward_backup_last_size_bytes",
			Help: "Size of the last backup that succeeded."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "keyward_backup_failures_total",
			Help: "Backups that failed (taken, stored or pruned)."}),
		duration: prometheus.NewGauge(prometheus.GaugeOpts{Name: "keyward_backup_last_duration_seconds",
			Help: "How long the last backup took."}),
		interval: prometheus.NewGauge(prometheus.GaugeOpts{Name: "keyward_backup_interval_seconds",
			Help: "The interval of scheduled backups (KEYWARD_BACKUP_EVERY); 0 when this node takes none on its own."}),
	}
	s.interval.Set(cfg.Every.Seconds())
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics != nil {
		for _, c := range []prometheus.Collector{s.lastSuccess, s.lastSize, s.failures, s.duration, s.interval} {
			if err := cfg.Metrics.Register(c); err != nil {
				return nil, fmt.Errorf("backup metrics: %w", err)
			}
		}
	}
	return s, nil
}

// Run takes a backup every interval until ctx ends (the node's supervisor owns it). At
// start it reads the newest stored backup (its time is the last success) and takes one at
// once when that is older than the interval, so a node that was down misses none and the
// stale-backup alert only speaks of failures. A failed backup is logged and counted; the
// next one comes at the next tick.
func (s *Scheduler) Run(ctx context.Context) error {
	if s.every <= 0 {
		<-ctx.Done()
		return nil
	}
	newest := time.Time{}
	if list, err := s.List(ctx); err != nil {
		s.log.Warn("stored backups cannot be listed", "dest", s.dest.String(), "err", err)
	} else if len(list) > 0 {
		newest = list[0].CreatedAt
		s.lastSuccess.Set(float64(newest.Unix()))
		s.lastSize.Set(float64(list[0].Size))
	}
	if s.now().Sub(newest) >= s.every {
		_, _ = s.TakeNow(ctx, false)
	}
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			_, _ = s.TakeNow(ctx, false)
		}
	}
}

// TakeNow takes a backup now, stores it and prunes the old ones. It waits for a backup
// already running.
func (s *Scheduler) TakeNow(ctx context.Context, manual bool) (Result, error) {
	s.run.Lock()
	defer s.run.Unlock()
	start := s.now()
	res := Result{At: storage.Truncate(start), Manual: manual}
	name, size, err := s.take(ctx, start)
	res.Name, res.Size = name, size
	res.Duration = time.Since(start)
	res.Millis = res.Duration.Milliseconds()
	if err == nil {
		if perr := s.prune(ctx); perr != nil {
			err = fmt.Errorf("backup %s stored, pruning the old ones failed: %w", name, perr)
		}
	}
	s.duration.Set(res.Duration.Seconds())
	if err != nil {
		res.Error = err.Error()
		s.failures.Inc()
		s.log.Error("backup failed", "dest", s.dest.String(), "err", err)
	} else {
		s.lastSuccess.Set(float64(s.now().Unix()))
		s.lastSize.Set(float64(size))
		s.log.Info("backup stored", "dest", s.dest.String(), "name", name, "bytes", size, "took", res.Duration.Round(time.Millisecond))
	}
	s.mu.Lock()
	s.last = res
	s.mu.Unlock()
	return res, err
}

// NamePrefix starts the name of every backup a Scheduler stores; pruning only ever
// removes names that have it.
const NamePrefix = "keyward-backup-"

func (s *Scheduler) take(ctx context.Context, at time.Time) (string, int64, error) {
	name := NamePrefix + at.UTC().Format(nameTime) + ".tar.gz"
	tmp, err := os.CreateTemp("", "keyward-backup-*.tar.gz")
	if err != nil {
		return name, 0, err
	}
	defer os.Remove(tmp.Name())
	if _, err := Take(ctx, s.store, s.blobs, tmp, s.info); err != nil {
		_ = tmp.Close()
		return name, 0, err
	}
	size, err := tmp.Seek(0, io.SeekCurrent)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return name, 0, err
	}
	if err := s.dest.Put(ctx, name, tmp.Name()); err != nil {
		return name, size, fmt.Errorf("store %s at %s: %w", name, s.dest, err)
	}
	return name, size, nil
}

// prune removes the backups past the retention, never the newest.
func (s *Scheduler) prune(ctx context.Context) error {
	objs, err := s.List(ctx)
	if err != nil {
		return err
	}
	now := s.now()
	var errs []error
	for i, o := range objs {
		if i == 0 {
			continue
		}
		if (s.keep.Keep > 0 && i >= s.keep.Keep) || (s.keep.MaxAge > 0 && now.Sub(o.CreatedAt) > s.keep.MaxAge) {
			if err := s.dest.Delete(ctx, o.Name); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// List answers the stored backups, newest first.
func (s *Scheduler) List(ctx context.Context) ([]Object, error) {
	all, err := s.dest.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []Object
	for _, o := range all {
		// The age is the name's: the same on every destination (S3 has no creation time).
		if t, ok := NameTime(o.Name); ok {
			o.CreatedAt = t
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name > out[j].Name })
	return out, nil
}

// Open answers a stored backup's bytes; os.ErrNotExist for a name that is not one.
func (s *Scheduler) Open(ctx context.Context, name string) (io.ReadCloser, int64, error) {
	if !ValidName(name) {
		return nil, 0, os.ErrNotExist
	}
	return s.dest.Open(ctx, name)
}

// Last answers the last backup's result (zero before the first).
func (s *Scheduler) Last() Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// Where says where backups go and how often.
func (s *Scheduler) Where() (dest string, every time.Duration, keep Retention) {
	return s.dest.String(), s.every, s.keep
}

// nameTime is the layout of the time in a backup's name.
const nameTime = "20060102T150405.000Z"

// NameTime answers the time in a name a Scheduler gives; ok false for any other name (a
// path, another file).
func NameTime(name string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(name, NamePrefix)
	if !ok {
		return time.Time{}, false
	}
	stamp, ok := strings.CutSuffix(rest, ".tar.gz")
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(nameTime, stamp)
	return t, err == nil
}

// ValidName reports whether name is one a Scheduler gives.
func ValidName(name string) bool {
	_, ok := NameTime(name)
	return ok
}

// Folder keeps backups in a local folder.
type Folder struct{ Dir string }

// Put implements Destination: copied to a temporary name in the folder, then renamed.
func (f Folder) Put(_ context.Context, name, path string) error {
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return err
	}
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := filepath.Join(f.Dir, "."+name+".partial")
	if err := writeFile(tmp, src); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, filepath.Join(f.Dir, name))
}

// List implements Destination.
func (f Folder) List(context.Context) ([]Object, error) {
	entries, err := os.ReadDir(f.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Object
	for _, e := range entries {
		if e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				out = append(out, Object{Name: e.Name(), Size: fi.Size(), CreatedAt: fi.ModTime().UTC()})
			}
		}
	}
	return out, nil
}

// Open implements Destination.
func (f Folder) Open(_ context.Context, name string) (io.ReadCloser, int64, error) {
	file, err := os.Open(filepath.Join(f.Dir, name))
	if err != nil {
		return nil, 0, err
	}
	st, err := file.Stat()
	if err != nil {
		_ = file.Close()
		return nil, 0, err
	}
	return file, st.Size(), nil
}

// Delete implements Destination.
func (f Folder) Delete(_ context.Context, name string) error {
	return os.Remove(filepath.Join(f.Dir, name))
}

func (f Folder) String() string { return "folder " + f.Dir }
