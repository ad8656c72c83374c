package app

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keyward/keyward/actors/actorkit"

	"github.com/keyward/keyward/internal/testenv"
)

// testSocket records what its actor hands it; a "boom" message panics.
type testSocket struct {
	ref Ref

	mu     sync.Mutex
	got    []any
	failed any
	leave  bool // answer Leaving at once
}

func (s *testSocket) Kind() string    { return "session" }
func (s *testSocket) Spawned(ref Ref) { s.ref = ref }
func (s *testSocket) Receive(sc SocketContext, msg any) {
	if msg == "boom" {
		panic("socket bug")
	}
	if msg == "io" {
		sc.Pipe(testJob("io"))
		return
	}
	if d, ok := msg.(JobDone); ok {
		msg = string(d.Job.(testJob)) // recorded by name
	}
	s.mu.Lock()
	s.got = append(s.got, msg)
	s.mu.Unlock()
	if _, ok := msg.(Leaving); ok {
		sc.Done()
	}
}

// testJob is a test socket's job, by name: its Work answers "<name> done".
type testJob string

func (j testJob) JobName() string { return string(j) }

func (s *testSocket) Work(_ context.Context, j Job) Job { return testJob(j.JobName() + " done") }

func (s *testSocket) Failed(reason, _ any) {
	s.mu.Lock()
	s.failed = reason
	s.mu.Unlock()
}
func (s *testSocket) has(msg any) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.got {
		if m == msg {
			return true
		}
	}
	return false
}
func (s *testSocket) failure() any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// TestSocketActorPanicClosesOnlyItsSocket: a panic in one socket's actor stops that actor
// and tells its socket (which closes), logs the app and the socket and counts a failure of
// kind session; the app's other socket and the app's actor go on, and the failed socket
// leaves as usual.
func TestSocketActorPanicClosesOnlyItsSocket(t *testing.T) {
	var logged testenv.LogBuffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	m := actorkit.NewMetrics(prometheus.NewRegistry())
	f := &fakeApps{version: map[string]int{"a": 1}}
	dir := NewApps(f.load, AppsConfig{Log: log, Metrics: m})
	defer dir.Close()
	ctx := context.Background()
	bad, good := &testSocket{}, &testSocket{}
	if err := dir.Join(ctx, "a", "bad", bad); err != nil {
		t.Fatal(err)
	}
	if err := dir.Join(ctx, "a", "good", good); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the actors' start", func() bool { return bad.has(SocketStarted{}) && good.has(SocketStarted{}) })

	bad.ref.Tell("boom")
	waitFor(t, "the failed socket told", func() bool { return bad.failure() != nil })
	good.ref.Tell("io")
	waitFor(t, "the other socket's I/O result", func() bool { return good.has("io done") })
	bad.ref.Tell("after")
	if v, err := dir.Snapshot(ctx, "a"); err != nil || v != 1 {
		t.Fatalf("the app's actor after a socket failed: %v %v", v, err)
	}
	if bad.has("after") {
		t.Fatal("the failed socket's actor still handles messages")
	}
	if good.failure() != nil {
		t.Fatal("the other socket was told of a failure")
	}
	if n := m.Value("failures", "session"); n != 1 {
		t.Fatalf("session failures counted: %v", n)
	}
	line := logged.String()
	if !strings.Contains(line, "app=a") || !strings.Contains(line, "socket=bad") || !strings.Contains(line, "socket bug") {
		t.Fatalf("log: %s", line)
	}
	// The socket actors are counted under their kinds: the failed one stopped.
	if n := m.Value("alive", "session"); n != 1 {
		t.Fatalf("session actors alive: %v", n)
	}
	// Both leave: the failed one at once, the other once its actor is done.
	if !dir.Leave("a", "bad") || !dir.Leave("a", "good") {
		t.Fatal("a socket was not held")
	}
	if !good.has(Leaving{}) || !good.has(SocketStopping{}) {
		t.Fatal("the socket's actor did not finish before its Leave answered")
	}
	if n, q := m.Value("alive", "session"), m.Value("mailbox", "session"); n != 0 || q != 0 {
		t.Fatalf("after leaving: %v session actors alive, %v messages in their mailboxes", n, q)
	}
}

// stallingSocket starts an I/O that ends while its AppActor restarts: the I/O is let go
// when the actor is stopped for the restart, and the actor waits until the result was
// sent before it finishes stopping.
type stallingSocket struct {
	testSocket
	gate chan struct{}
	sent chan struct{}
	once sync.Once
}

func (s *stallingSocket) Work(ctx context.Context, j Job) Job {
	if j == testJob("slow io") {
		<-s.gate
		defer close(s.sent)
	}
	return s.testSocket.Work(ctx, j)
}

func (s *stallingSocket) Receive(sc SocketContext, msg any) {
	switch msg {
	case "slow io":
		sc.Pipe(testJob("slow io"))
		return
	}
	if _, ok := msg.(SocketStopping); ok {
		s.once.Do(func() {
			close(s.gate)
			<-s.sent
			time.Sleep(20 * time.Millisecond) // the result is on its way
		})
	}
	s.testSocket.Receive(sc, msg)
}

// TestIOResultDuringAnAppActorRestartIsNotLost: the result of a socket's I/O that comes
// back while its AppActor restarts (its actor stopped, not yet spawned again) reaches the
// socket's new actor.
func TestIOResultDuringAnAppActorRestartIsNotLost(t *testing.T) {
	f := &fakeApps{version: map[string]int{"a": 1}}
	dir := NewApps(f.load, AppsConfig{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer dir.Close()
	pr := newProbe(t, dir)
	s := &stallingSocket{gate: make(chan struct{}), sent: make(chan struct{})}
	if err := dir.Join(context.Background(), "a", "s", s); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the actor's start", func() bool { return s.has(SocketStarted{}) })
	s.ref.Tell("slow io")
	pr.send(t, "a", "panic")
	waitFor(t, "the I/O's result after the restart", func() bool { return s.has("slow io done") })
}
