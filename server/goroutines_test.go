package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/internal/supervise"
	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/mail"
	"github.com/keyward/keyward/storage"
)

// restartedKinds are the goroutine kinds a node restarts after a panic.
var restartedKinds = []string{kindMail, kindUsageFlusher, kindWebhooksWorker, kindRevocationPurge, kindLogJanitor, kindBackups,
	kindEventsWriter, kindEventsNotifier, kindEventsCompaction, "events-notes", kindAuditWriter, kindClientWriter,
	kindEventsConsumer + "logs", kindEventsConsumer + "webhooks", kindEventsConsumer + "sockets", kindEventsConsumer + "app-actors",
	"cluster-janitor", "cluster-bus-fanout"}

// panicOnce makes the first run of each of kinds panic on purpose; later runs are the
// real body.
func panicOnce(kinds ...string) wrapFunc {
	var mu sync.Mutex
	done := map[string]bool{}
	return func(kind string, run supervise.Func) supervise.Func {
		return func(ctx context.Context) error {
			mu.Lock()
			first := !done[kind]
			done[kind] = true
			mu.Unlock()
			if first && contains(kinds, kind) {
				panic("on purpose in " + kind)
			}
			return run(ctx)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func testConfig(t *testing.T, extra map[string]string) Config {
	t.Helper()
	vars := map[string]string{"KEYWARD_ADDR": "127.0.0.1:0", "KEYWARD_DATA_DIR": t.TempDir(),
		"KEYWARD_ARGON2_MEMORY_KIB": "1024", "KEYWARD_ARGON2_ITERATIONS": "1"}
	for k, v := range extra {
		vars[k] = v
	}
	c, err := LoadConfig("t", nil, func(k string) string { return vars[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// eventually polls cond every 10 ms, failing the test after a generous bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i == 3000 {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// TestEveryGoroutineKindSurvivesAPanic: each kind of the node's restarted goroutines
// panics once on purpose as it starts; an event published and an audit entry recorded
// meanwhile wait for the restarted writers and are stored (no waiter hangs); the node keeps
// serving HTTP, each panic is counted (on /metrics too), each goroutine runs again, the
// restarted mail queue delivers, and the node stops cleanly.
func TestEveryGoroutineKindSurvivesAPanic(t *testing.T) {
	t.Run("memory", func(t *testing.T) { everyKindSurvivesAPanic(t, nil, restartedKinds) })
	t.Run("redis", func(t *testing.T) {
		// The Redis engine's bus runs a receive loop per subscriber connection instead of
		// the memory engine's janitor.
		kinds := append(slices.DeleteFunc(slices.Clone(restartedKinds), func(k string) bool { return k == "cluster-janitor" }), "cluster-bus-receive")
		everyKindSurvivesAPanic(t, map[string]string{"KEYWARD_REDIS_URL": testenv.RedisURL(t), "KEYWARD_REDIS_PREFIX": testenv.UniqueName("kwtest:") + ":",
			"KEYWARD_JWT_SECRET": strings.Repeat("x", 40), "KEYWARD_SECRETS_KEY": strings.Repeat("s", 40)}, kinds)
	})
}

func everyKindSurvivesAPanic(t *testing.T, extra map[string]string, restartedKinds []string) {
	cfg := testConfig(t, extra)
	s, err := newServer(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), panicOnce(restartedKinds...))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()
	g := s.core.Goroutines
	wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
	defer wcancel()
	if err := s.core.Bus.Publish(wctx, events.Event{Name: events.UserLogin, AppID: "app", Message: "across the panic"}); err != nil {
		t.Fatalf("Publish across the writer's panic: %v", err)
	}
	if err := s.core.Audit.Record(wctx, storage.AuditEntry{AccountID: "acc", Method: "POST", Route: "/api/apps"}); err != nil {
		t.Fatalf("audit Record across the writer's panic: %v", err)
	}
	for _, kind := range restartedKinds {
		eventually(t, kind+" restarted after its panic", func() bool {
			return g.Panics(kind) == 1 && g.Restarts(kind) == 1 && g.Running(kind) == 1
		})
	}
	base := "http://" + s.Addr()
	if code, body := get(t, base+"/healthz"); code != http.StatusOK {
		t.Fatalf("GET /healthz after the panics = %d %s", code, body)
	}
	_, metrics := get(t, base+"/metrics")
	for _, kind := range restartedKinds {
		for _, want := range []string{
			fmt.Sprintf(`keyward_goroutine_panics_total{kind=%q} 1`, kind),
			fmt.Sprintf(`keyward_goroutine_restarts_total{kind=%q} 1`, kind),
			fmt.Sprintf(`keyward_goroutines{kind=%q} 1`, kind),
		} {
			if !strings.Contains(metrics, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	}
	if g.Panics(kindHTTPAPI) != 0 || g.Running(kindHTTPAPI) != 1 {
		t.Fatalf("the API listener: %d panics, %d running", g.Panics(kindHTTPAPI), g.Running(kindHTTPAPI))
	}
	// The restarted mail queue still delivers (to the outbox folder).
	s.core.Mail.Enqueue(mail.Message{To: "owner@example.com", Subject: "after the panic", Text: "hello"})
	eventually(t, "the mail written to the outbox", func() bool {
		entries, _ := os.ReadDir(cfg.MailOutbox)
		return len(entries) == 1
	})
	stop()
	if err := <-ran; err != nil {
		t.Fatalf("Run = %v", err)
	}
	for _, kind := range append(restartedKinds, kindHTTPAPI) {
		if n := g.Running(kind); n != 0 {
			t.Errorf("%s still running after the shutdown: %d", kind, n)
		}
	}
}

// TestListenerPanicIsReported: a listener cannot be served again, so a panic in one is
// counted, kept as a failure (not restarted), and ends Run with an error instead of
// leaving the node half up.
func TestListenerPanicIsReported(t *testing.T) {
	cfg := testConfig(t, map[string]string{"KEYWARD_METRICS_ADDR": "127.0.0.1:0"})
	s, err := newServer(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), panicOnce(kindHTTPMetrics))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	err = s.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "metrics listener panicked") {
		t.Fatalf("Run = %v, want the metrics listener's panic", err)
	}
	g := s.core.Goroutines
	if g.Panics(kindHTTPMetrics) != 1 || g.Restarts(kindHTTPMetrics) != 0 {
		t.Fatalf("metrics listener: %d panics, %d restarts; want 1, 0", g.Panics(kindHTTPMetrics), g.Restarts(kindHTTPMetrics))
	}
	failures := g.Failures()
	if len(failures) != 1 || !strings.Contains(failures[0].Error(), "on purpose in http-metrics") {
		t.Fatalf("failures = %v", failures)
	}
}

// TestShutdownStopsInDependencyOrder: the node's goroutines end in the reverse order of
// their start (goroutines.go): the event consumers while what they call still runs, the
// client-session writer before the audit writer, the event log's writer after every
// producer, the mail queue after it, and the cluster engine's loops last.
func TestShutdownStopsInDependencyOrder(t *testing.T) {
	var mu sync.Mutex
	var ended []string
	wrap := func(kind string, run supervise.Func) supervise.Func {
		return func(ctx context.Context) error {
			err := run(ctx)
			mu.Lock()
			ended = append(ended, kind)
			mu.Unlock()
			return err
		}
	}
	s, err := newServer(context.Background(), testConfig(t, nil), slog.New(slog.NewTextHandler(io.Discard, nil)), wrap)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()
	eventually(t, "the API listener running", func() bool { return s.core.Goroutines.Running(kindHTTPAPI) == 1 })
	stop()
	if err := <-ran; err != nil {
		t.Fatalf("Run = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	at := func(kind string) int {
		i := slices.Index(ended, kind)
		if i < 0 {
			t.Fatalf("%s never ended; ended: %v", kind, ended)
		}
		return i
	}
	order := []string{kindHTTPAPI, kindEventsConsumer + "sockets", kindClientWriter, kindUsageFlusher, kindAuditWriter,
		kindEventsWriter, kindMail, "cluster-bus-fanout"}
	for i := 1; i < len(order); i++ {
		if at(order[i-1]) > at(order[i]) {
			t.Errorf("%s ended after %s; ended: %v", order[i-1], order[i], ended)
		}
	}
}
