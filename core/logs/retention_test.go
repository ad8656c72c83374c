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

// TestResumePurgesSparesRunningOnes: the janitor's periodic resumption runs only the
// purges not touched for the stale age (a node still running one touches it after each
// chunk), to their own cutoff; at start (stale 0) it runs every one.
func TestResumePurgesSparesRunningOnes(t *testing.T) {
	store, left := purgesLeft(t)
	j := logs.NewJanitor(store, logs.RetentionConfig{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if n, err := j.ResumePurges(t.Context(), 2*time.Minute); err != nil || n != 1 || left("stale") != 0 || left("running") != 2 {
		t.Fatalf("periodic ResumePurges = %d, %v; entries left %d (stale) and %d (running); want 1 finished, 0 and 2", n, err, left("stale"), left("running"))
	}
	if n, err := j.ResumePurges(t.Context(), 0); err != nil || n != 1 || left("running") != 0 {
		t.Fatalf("ResumePurges at start = %d, %v; %d entries left; want 1 and 0", n, err, left("running"))
	}
	if list, err := store.LogPurges(t.Context()); err != nil || len(list) != 0 {
		t.Fatalf("intents left: %v, %v", list, err)
	}
}

// purgesLeft stores two apps' old entries and a purge of each: "stale" last touched 10
// minutes ago (its node stopped), "running" touched now. It answers the store and how
// many entries an app has left.
func purgesLeft(t *testing.T) (*sqlite.Store, func(app string) int) {
	t.Helper()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "k.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	now := storage.Now()
	var entries []storage.LogEntry
	for i, app := range []string{"stale", "running", "stale", "running"} {
		entries = append(entries, storage.LogEntry{ID: string(rune('a' + i)), AppID: app, Event: "user.login", Level: "INFO", CreatedAt: now.Add(-48 * time.Hour)})
	}
	if err := store.InsertLogs(t.Context(), entries); err != nil {
		t.Fatal(err)
	}
	for _, p := range []storage.LogPurge{
		{ID: "p-stale", AppID: "stale", Days: 1, Before: now.Add(-24 * time.Hour), CreatedAt: now.Add(-time.Hour), TouchedAt: now.Add(-10 * time.Minute)},
		{ID: "p-running", AppID: "running", Days: 1, Before: now.Add(-24 * time.Hour), CreatedAt: now, TouchedAt: now},
	} {
		if err := store.BeginLogPurge(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	return store, func(app string) int {
		_, total, err := store.ListLogs(t.Context(), app, storage.LogQuery{})
		if err != nil {
			t.Fatal(err)
		}
		return total
	}
}

// TestResumePurgesJudgesOnTheJanitorsClock: staleness is judged on the janitor's clock
// (RetentionConfig.Now), the one its purges are touched with: an hour behind, no purge has
// gone untouched for 2 minutes yet, and none is resumed.
func TestResumePurgesJudgesOnTheJanitorsClock(t *testing.T) {
	store, left := purgesLeft(t)
	behind := func() time.Time { return time.Now().Add(-time.Hour) }
	j := logs.NewJanitor(store, logs.RetentionConfig{Now: behind}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if n, err := j.ResumePurges(t.Context(), 2*time.Minute); err != nil || n != 0 || left("stale") != 2 {
		t.Fatalf("ResumePurges on a clock an hour behind = %d, %v; %d entries of the stale purge left; want 0, 2", n, err, left("stale"))
	}
}
