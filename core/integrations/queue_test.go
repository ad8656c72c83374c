package integrations_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/integrations"
	"github.com/keyward/keyward/core/webhooks"
	"github.com/keyward/keyward/internal/testtls"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/sqlite"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fixture is an app with a CUSTOM integration whose receiver counts requests.
type fixture struct {
	path, appID string
	url         string // the receiver's
	client      *http.Client
	mu          sync.Mutex
	got         []string // X-Keyward-Delivery of each request
	// hold is how long the receiver takes to answer, in nanoseconds (a slow receiver).
	hold atomic.Int64
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{path: filepath.Join(t.TempDir(), "keyward.db")}
	ca := testtls.NewCA(t)
	srv := ca.NewHTTPSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Duration(f.hold.Load()))
		f.mu.Lock()
		f.got = append(f.got, r.Header.Get(webhooks.HeaderDelivery))
		f.mu.Unlock()
	}))
	f.client = webhooks.NewClient(webhooks.Config{AllowPrivate: true, RootCAs: ca.Pool()})
	f.url, f.appID = srv.URL, "app-1"
	s := f.open(t)
	defer s.Close()
	f.seed(t, s)
	return f
}

// seed writes the fixture's account, app and integration into s.
func (f *fixture) seed(t *testing.T, s storage.Store) {
	t.Helper()
	now := storage.Now()
	if err := s.CreateAccount(t.Context(), storage.Account{ID: "acc", Username: "o", Email: "o@example.com", Role: storage.RoleUser,
		Plan: "pro", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateApp(t.Context(), storage.App{ID: f.appID, AccountID: "acc", Name: "A", Enabled: true, SecretHash: "h",
		CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateIntegration(t.Context(), storage.Integration{ID: "int-1", AppID: f.appID, Name: "ops", Kind: webhooks.KindCustom,
		URL: f.url + "/hook", Events: []string{"user.login"}, Enabled: true, Secret: "whsec_test", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) open(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), sqlite.Config{Path: f.path})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *fixture) received() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

func TestQueuedDeliverySurvivesARestart(t *testing.T) {
	f := newFixture(t)
	s := f.open(t)
	d := integrations.NewDispatcher(s, nil, quiet(), nil)
	d.Handle(events.Event{Name: "user.login", AppID: f.appID, Username: "alice", At: time.Now()})
	d.Handle(events.Event{Name: "user.register", AppID: f.appID}) // not subscribed
	if err := s.Close(); err != nil {                             // the node stops before any worker sent it
		t.Fatal(err)
	}

	s = f.open(t)
	defer s.Close()
	w := integrations.NewWorker(s, integrations.WorkerConfig{Client: f.client, Log: quiet()})
	n, err := w.RunOnce(t.Context())
	if err != nil || n != 1 {
		t.Fatalf("after restart: claimed %d, %v; want the 1 queued delivery", n, err)
	}
	if got := f.received(); len(got) != 1 || got[0] == "" {
		t.Fatalf("receiver got %v", got)
	}
	if n, _ := w.RunOnce(t.Context()); n != 0 {
		t.Fatalf("a delivered event was claimed again (%d)", n)
	}
	attempts, total, err := s.ListDeliveryAttempts(t.Context(), f.appID, "int-1", storage.Page{})
	if err != nil || total != 1 || !attempts[0].Success || attempts[0].StatusCode != http.StatusOK {
		t.Fatalf("attempts %+v total %d err %v", attempts, total, err)
	}
}

func TestTwoWorkersNeverSendOneDeliveryTwice(t *testing.T) {
	f := newFixture(t)
	s := f.open(t)
	defer s.Close()
	d := integrations.NewDispatcher(s, nil, quiet(), nil)
	for range 20 {
		d.Handle(events.Event{Name: "user.login", AppID: f.appID})
	}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := integrations.NewWorker(s, integrations.WorkerConfig{Owner: string(rune('A' + i)), Client: f.client, Batch: 3, Log: quiet()})
			for {
				n, err := w.RunOnce(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if n == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	got := f.received()
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Fatalf("event %s delivered twice", id)
		}
		seen[id] = true
	}
	if len(got) != 20 {
		t.Fatalf("%d deliveries, want 20", len(got))
	}
}

func TestDeadWorkersLeaseEndsAndAnotherNodeSends(t *testing.T) {
	f := newFixture(t)
	s := f.open(t)
	defer s.Close()
	integrations.NewDispatcher(s, nil, quiet(), nil).Handle(events.Event{Name: "user.login", AppID: f.appID})
	// A node claims the delivery and dies without sending it.
	claimed, err := s.ClaimDeliveries(t.Context(), "dead-node", storage.Now(), time.Minute, 10)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	now := time.Now()
	clock := func() time.Time { return now }
	w := integrations.NewWorker(s, integrations.WorkerConfig{Client: f.client, Log: quiet(), Now: clock})
	if n, _ := w.RunOnce(t.Context()); n != 0 {
		t.Fatal("a leased delivery was claimed before its lease ended")
	}
	now = now.Add(integrations.DefaultLease + time.Second)
	if n, err := w.RunOnce(t.Context()); n != 1 || err != nil {
		t.Fatalf("after the lease: claimed %d, %v", n, err)
	}
	if len(f.received()) != 1 {
		t.Fatalf("receiver got %v", f.received())
	}
}
