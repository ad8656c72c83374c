package integrations_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/core/integrations"
	"github.com/keyward/keyward/core/webhooks"
	"github.com/keyward/keyward/storage"
)

// trimCall is one TrimDeliveries the worker made, and what it answered.
type trimCall struct {
	integration   string
	attempts      bool
	keep, n, gone int
}

// trimRecorder is the real store (SQLite or FerretDB), recording the worker's
// TrimDeliveries calls so the test sees the batches.
type trimRecorder struct {
	integrations.Store
	mu    sync.Mutex
	calls []trimCall
}

func (r *trimRecorder) TrimDeliveries(ctx context.Context, appID, integrationID string, keep, n int) (int, error) {
	gone, err := r.Store.TrimDeliveries(ctx, appID, integrationID, keep, n)
	r.mu.Lock()
	r.calls = append(r.calls, trimCall{integration: integrationID, keep: keep, n: n, gone: gone})
	r.mu.Unlock()
	return gone, err
}

func (r *trimRecorder) TrimDeliveryAttempts(ctx context.Context, appID, integrationID string, keep, n int) (int, error) {
	gone, err := r.Store.TrimDeliveryAttempts(ctx, appID, integrationID, keep, n)
	r.mu.Lock()
	r.calls = append(r.calls, trimCall{integration: integrationID, attempts: true, keep: keep, n: n, gone: gone})
	r.mu.Unlock()
	return gone, err
}

func (r *trimRecorder) recorded() []trimCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// TestWorkerBoundsHistoryPerIntegration: the worker's hourly sweep keeps each
// integration's newest MaxPerIntegration finished deliveries and attempts, all well
// inside the retention, and removes the others in batches of TrimBatch; a quieter
// integration and the pending deliveries (older than any finished one) stay. SQLite and
// FerretDB.
func TestWorkerBoundsHistoryPerIntegration(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		f := newFixture(t)
		s := f.open(t)
		defer s.Close()
		boundsHistory(t, f, s)
	})
	t.Run("ferretdb", func(t *testing.T) {
		f := newFixture(t)
		s := openFerretStore(t, "kwtest_trimhook_")
		f.seed(t, s)
		boundsHistory(t, f, s)
	})
}

func boundsHistory(t *testing.T, f *fixture, s storage.Store) {
	ctx := t.Context()
	now := storage.Now()
	if err := s.CreateIntegration(ctx, storage.Integration{ID: "int-2", AppID: f.appID, Name: "quiet", Kind: webhooks.KindCustom,
		URL: f.url + "/quiet", Events: []string{"user.login"}, Enabled: true, Secret: "whsec_quiet", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	delivery := func(integration, id string, state string, updated time.Time) storage.Delivery {
		return storage.Delivery{ID: id, AppID: f.appID, IntegrationID: integration, EventID: "evt-" + id, Event: "user.login",
			Payload: []byte(`{"id":"evt-` + id + `"}`), State: state, Attempts: 1, NextAttemptAt: now.Add(time.Hour),
			CreatedAt: updated, UpdatedAt: updated}
	}
	const busy, keep, batch = 25, 10, 4
	var ds []storage.Delivery
	var newest []string // the busy integration's finished deliveries that must stay
	for k := range busy {
		id := fmt.Sprintf("busy-%02d", k)
		ds = append(ds, delivery("int-1", id, storage.DeliveryDelivered, now.Add(-time.Duration(busy-k)*time.Minute)))
		if k >= busy-keep {
			newest = append(newest, id)
		}
	}
	var pending []string // not due for an hour; older than every finished one
	for k := range 3 {
		id := fmt.Sprintf("pending-%d", k)
		ds = append(ds, delivery("int-1", id, storage.DeliveryPending, now.Add(-time.Duration(48+k)*time.Hour)))
		pending = append(pending, id)
	}
	quietIDs := []string{"quiet-0", "quiet-1", "quiet-2"}
	for k, id := range quietIDs {
		ds = append(ds, delivery("int-2", id, storage.DeliveryFailed, now.Add(-time.Duration(k+1)*time.Hour)))
	}
	if err := s.CreateDeliveries(ctx, ds); err != nil {
		t.Fatal(err)
	}
	// Attempts: 14 of the busy integration's (4 over the bound), 2 of the quiet one's.
	const busyAttempts = 14
	var newestAttempts []string
	for k := range busyAttempts {
		id := fmt.Sprintf("att-%02d", k)
		if err := s.AddDeliveryAttempt(ctx, storage.DeliveryAttempt{ID: id, AppID: f.appID, IntegrationID: "int-1",
			DeliveryID: "busy-00", Event: "user.login", Attempt: k + 1, CreatedAt: now.Add(-time.Duration(busyAttempts-k) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if k >= busyAttempts-keep {
			newestAttempts = append(newestAttempts, id)
		}
	}
	for k := range 2 {
		if err := s.AddDeliveryAttempt(ctx, storage.DeliveryAttempt{ID: fmt.Sprintf("att-quiet-%d", k), AppID: f.appID,
			IntegrationID: "int-2", DeliveryID: "quiet-0", Event: "user.login", Attempt: k + 1, CreatedAt: now.Add(-time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}

	rec := &trimRecorder{Store: s}
	w := integrations.NewWorker(rec, integrations.WorkerConfig{Client: f.client, Log: quiet(), Poll: 20 * time.Millisecond,
		MaxPerIntegration: keep, TrimBatch: batch})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	// The sweep is done once a batch of attempts came back short (they come last).
	deadline := time.Now().Add(60 * time.Second)
	for {
		calls := rec.recorded()
		if len(calls) > 0 && calls[len(calls)-1].attempts && calls[len(calls)-1].gone < batch {
			break
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("no short batch within 60 s; calls %+v", calls)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	// Bounded batches: every call asked for at most TrimBatch with the configured bound,
	// only for the integration over it, and together they removed what was over it.
	gone := map[bool]int{}
	calls := map[bool]int{}
	for _, c := range rec.recorded() {
		if c.integration != "int-1" || c.keep != keep || c.n != batch || c.gone > batch {
			t.Errorf("trim call %+v, want int-1 keeping %d in batches of %d", c, keep, batch)
		}
		gone[c.attempts] += c.gone
		calls[c.attempts]++
	}
	if calls[false] != (busy-keep)/batch+1 || gone[false] != busy-keep {
		t.Errorf("%d calls removed %d finished deliveries, want %d in batches of %d", calls[false], gone[false], busy-keep, batch)
	}
	if calls[true] != (busyAttempts-keep)/batch+1 || gone[true] != busyAttempts-keep {
		t.Errorf("%d calls removed %d attempts, want %d in batches of %d", calls[true], gone[true], busyAttempts-keep, batch)
	}

	ids := func(kind string) []string {
		var out []string
		if err := s.(storage.ArchiveStore).ArchiveRecords(ctx, kind, func(r any) error {
			out = append(out, r.(storage.Delivery).ID)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(out)
		return out
	}
	wantHistory := slices.Sorted(slices.Values(append(slices.Clone(newest), quietIDs...)))
	if got := ids(storage.KindDeliveryHistory); !slices.Equal(got, wantHistory) {
		t.Errorf("history after the sweep = %v, want the busy integration's newest %d and the quiet one's %d: %v",
			got, keep, len(quietIDs), wantHistory)
	}
	if got := ids(storage.KindDeliveries); !slices.Equal(got, pending) {
		t.Errorf("queue after the sweep = %v, want the pending %v untouched", got, pending)
	}
	attemptIDs := func(integration string) []string {
		as, total, err := s.ListDeliveryAttempts(ctx, f.appID, integration, storage.Page{})
		if err != nil || total != len(as) {
			t.Fatalf("ListDeliveryAttempts(%s): %d of %d, %v", integration, len(as), total, err)
		}
		var out []string
		for _, a := range as {
			out = append(out, a.ID)
		}
		slices.Sort(out)
		return out
	}
	if got := attemptIDs("int-1"); !slices.Equal(got, newestAttempts) {
		t.Errorf("busy attempts after the sweep = %v, want the newest %d: %v", got, keep, newestAttempts)
	}
	if got := attemptIDs("int-2"); len(got) != 2 {
		t.Errorf("quiet attempts after the sweep = %v, want its 2", got)
	}
}

// TestTrimFigures measures the count bound's sweep on a big history: it seeds
// KEYWARD_TEST_TRIM_HISTORY finished deliveries of about a kilobyte to one integration
// (skipped when unset), then trims them to DefaultMaxPerIntegration in batches of
// DefaultTrimBatch and logs the rate and the longest batch (on SQLite, how long one batch
// holds the writer). SQLite; FerretDB too with KEYWARD_TEST_TRIM_FERRET=1.
func TestTrimFigures(t *testing.T) {
	v := os.Getenv("KEYWARD_TEST_TRIM_HISTORY")
	if v == "" {
		t.Skip("KEYWARD_TEST_TRIM_HISTORY=N measures trimming N finished deliveries")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= integrations.DefaultMaxPerIntegration {
		t.Fatalf("KEYWARD_TEST_TRIM_HISTORY=%q: want a count over %d", v, integrations.DefaultMaxPerIntegration)
	}
	measure := func(t *testing.T, f *fixture, s storage.Store) {
		seedDeliveries(t, f, s, n)
		var longest time.Duration
		begun, gone, batches := time.Now(), 0, 0
		for {
			at := time.Now()
			k, err := s.TrimDeliveries(t.Context(), f.appID, "int-1", integrations.DefaultMaxPerIntegration, integrations.DefaultTrimBatch)
			if err != nil {
				t.Fatal(err)
			}
			longest, gone, batches = max(longest, time.Since(at)), gone+k, batches+1
			if k < integrations.DefaultTrimBatch {
				break
			}
		}
		took := time.Since(begun)
		if gone != n-integrations.DefaultMaxPerIntegration {
			t.Errorf("trimmed %d, want %d", gone, n-integrations.DefaultMaxPerIntegration)
		}
		t.Logf("trimmed %d of %d finished deliveries in %d batches in %v: %.0f/s, longest batch %v",
			gone, n, batches, took.Round(time.Millisecond), float64(gone)/took.Seconds(), longest.Round(time.Millisecond))
	}
	t.Run("sqlite", func(t *testing.T) {
		f := newFixture(t)
		s := f.open(t)
		defer s.Close()
		measure(t, f, s)
	})
	t.Run("ferretdb", func(t *testing.T) {
		if os.Getenv("KEYWARD_TEST_TRIM_FERRET") == "" {
			t.Skip("KEYWARD_TEST_TRIM_FERRET=1 measures FerretDB too")
		}
		f := newFixture(t)
		s := openFerretStore(t, "kwtest_trimfig_")
		f.seed(t, s)
		measure(t, f, s)
	})
}
