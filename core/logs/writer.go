package logs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/internal/jsontext"
	"github.com/keyward/keyward/storage"
)

// Writer writes the log entries of events. It keeps no queue: the event log is the queue,
// and the writer is its "logs" consumer (HandleBatch).
type Writer struct {
	store storage.LogStore
	log   *slog.Logger
}

// NewWriter builds the writer.
func NewWriter(store storage.LogStore, log *slog.Logger) *Writer {
	if log == nil {
		log = slog.Default()
	}
	return &Writer{store: store, log: log}
}

// Entry is the log entry of an event: its id is the event's, so an event written twice
// (handed again after a crash) is one entry.
func Entry(e events.Event) storage.LogEntry {
	data := ""
	if len(e.Data) > 0 {
		// Most events carry a few strings (a socket's connect note: its user id): those
		// are written without encoding/json's reflection, byte for byte as it would.
		if b, ok := jsontext.AppendObject(make([]byte, 0, 64), e.Data); ok {
			data = string(b)
		} else if b, err := json.Marshal(e.Data); err == nil {
			data = string(b)
		}
	}
	return storage.LogEntry{ID: e.ID, AppID: e.AppID, Event: string(e.Name), Message: e.Message, Username: e.Username,
		IP: e.IP, Country: e.Country, Level: e.Level, Data: data, CreatedAt: storage.Truncate(e.At)}
}

// HandleBatch writes the entries of the events of apps in one bulk write. Entries written
// before (the same event id) are skipped. An error makes the event log hand the same
// events again.
func (w *Writer) HandleBatch(ctx context.Context, evs []events.Event) error {
	entries := make([]storage.LogEntry, 0, len(evs))
	for _, e := range evs {
		if e.AppID == "" || events.Internal.Has(e.Name) {
			continue
		}
		entries = append(entries, Entry(e))
	}
	if len(entries) == 0 {
		return nil
	}
	err := w.store.InsertLogs(ctx, entries)
	if !errors.Is(err, storage.ErrConflict) {
		if err != nil {
			return fmt.Errorf("logs: write %d entries: %w", len(entries), err)
		}
		return nil
	}
	// Some were written before a crash: write the others one by one.
	for _, e := range entries {
		if err := w.store.InsertLogs(ctx, []storage.LogEntry{e}); err != nil && !errors.Is(err, storage.ErrConflict) {
			return fmt.Errorf("logs: write entry %s: %w", e.ID, err)
		}
	}
	return nil
}
