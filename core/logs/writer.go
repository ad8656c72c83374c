// Package logs owns application logs (SPEC 4.8): the writer that turns events into log
// entries off the request path, in batches; the retention janitor; and the owner's log
// queries (list, stats, event types, purge).
package logs

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/storage"
)

// WriterConfig tunes the writer. Zero values take the defaults shown.
type WriterConfig struct {
	Queue    int           // entries waiting at most; default 10,000
	Batch    int           // entries per bulk write; default 500
	Interval time.Duration // longest wait before a partial batch is written; default 500 ms
}

// Writer batches log entries into bulk writes. Add never blocks: when the queue is full the
// entry is dropped and counted (Dropped), and the request that caused it still succeeds.
type Writer struct {
	store   storage.LogStore
	cfg     WriterConfig
	log     *slog.Logger
	ch      chan storage.LogEntry
	dropped atomic.Uint64
	failed  atomic.Uint64
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// NewWriter starts the writer's goroutine; Close stops it after writing what is queued.
func NewWriter(store storage.LogStore, cfg WriterConfig, log *slog.Logger) *Writer {
	if cfg.Queue <= 0 {
		cfg.Queue = 10_000
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 500
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 500 * time.Millisecond
	}
	w := &Writer{store: store, cfg: cfg, log: log, ch: make(chan storage.LogEntry, cfg.Queue),
		stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// Add queues an entry.
func (w *Writer) Add(e storage.LogEntry) {
	select {
	case w.ch <- e:
	default:
		w.dropped.Add(1)
	}
}

// Handle turns an event into a log entry; subscribe it to the event bus.
func (w *Writer) Handle(e events.Event) {
	if e.AppID == "" {
		return
	}
	data := ""
	if len(e.Data) > 0 {
		if b, err := json.Marshal(e.Data); err == nil {
			data = string(b)
		}
	}
	w.Add(storage.LogEntry{ID: uuid.NewString(), AppID: e.AppID, Event: e.Name, Message: e.Message, Username: e.Username,
		IP: e.IP, Country: e.Country, Level: e.Level, Data: data, CreatedAt: storage.Truncate(e.At)})
}

// Dropped counts entries lost to a full queue; Failed counts entries whose bulk write failed.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Failed counts entries lost because the database refused their batch.
func (w *Writer) Failed() uint64 { return w.failed.Load() }

func (w *Writer) run() {
	defer close(w.done)
	batch := make([]storage.LogEntry, 0, w.cfg.Batch)
	t := time.NewTicker(w.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case e := <-w.ch:
			batch = append(batch, e)
			if len(batch) >= w.cfg.Batch {
				batch = w.flush(batch)
			}
		case <-t.C:
			batch = w.flush(batch)
		case <-w.stop:
			for {
				select {
				case e := <-w.ch:
					batch = append(batch, e)
					if len(batch) >= w.cfg.Batch {
						batch = w.flush(batch)
					}
				default:
					w.flush(batch)
					return
				}
			}
		}
	}
}

func (w *Writer) flush(batch []storage.LogEntry) []storage.LogEntry {
	if len(batch) == 0 {
		return batch
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.store.InsertLogs(ctx, batch); err != nil {
		w.failed.Add(uint64(len(batch)))
		w.log.Error("log entries not written", "entries", len(batch), "err", err)
	}
	return batch[:0]
}

// Close writes what is queued and stops. Idempotent.
func (w *Writer) Close() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}
