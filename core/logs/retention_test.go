package logs_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/keyward/keyward/core/logs"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/sqlite"
)

// TestJanitorRunSweepsAndStops: Run applies the maximum age and the per-app cap at once,
// and returns nil when its context ends.
func TestJanitorRunSweepsAndStops(t *testing.T) {
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "k.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	now := time.Now().UTC().Truncate(time.Millisecond)
	var entries []storage.LogEntry
	for i, age := range []time.Duration{48 * time.Hour, 47 * time.Hour, 3 * time.Minute, 2 * time.Minute, time.Minute} {
		entries = append(entries, storage.LogEntry{ID: string(rune('a' + i)), AppID: "app", Event: "user.login", Level: "INFO", CreatedAt: now.Add(-age)})
	}
	if err := store.InsertLogs(t.Context(), entries); err != nil {
		t.Fatal(err)
	}
	j := logs.NewJanitor(store, logs.RetentionConfig{MaxAge: 24 * time.Hour, MaxPerApp: 2}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- j.Run(ctx) }()
	for i := 0; ; i++ {
		list, total, err := store.ListLogs(t.Context(), "app", storage.LogQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if total == 2 {
			if list[0].ID != "e" || list[1].ID != "d" {
				t.Fatalf("kept %s and %s, want the newest e and d", list[0].ID, list[1].ID)
			}
			break
		}
		if i == 1000 {
			t.Fatalf("%d entries left, want 2", total)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-ran; err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
}
