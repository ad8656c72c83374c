package actorkit

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// value reads a counter.
func value(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gauge reads a gauge.
func gauge(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

// blocker is an actor of a test kind: "block" waits on its gate, "panic" panics.
type blocker struct{ gate chan struct{} }

func (b *blocker) Receive(c actor.Context) {
	switch c.Message() {
	case "block":
		<-b.gate
	case "panic":
		panic("on purpose")
	}
}

// TestMetricsOfAnyKind: the props of a kind count its actors alive (a restart is neither
// a spawn nor a death), the messages in their mailboxes (posted, not yet handled),
// failures and restarts, and the dead letters sent to them, under the kind's label.
func TestMetricsOfAnyKind(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }))
	defer system.Shutdown()
	defer m.WatchDeadLetters(system)()
	const kind = "session"
	gate := make(chan struct{})
	props := actor.PropsFromProducer(func() actor.Actor { return &blocker{gate: gate} }, m.Props(kind)...)
	a, b := system.Root.SpawnPrefix(props, kind), system.Root.SpawnPrefix(props, kind)
	if !strings.HasPrefix(a.Id, kind+"$") {
		t.Fatalf("pid %q does not name its kind", a.Id)
	}
	k := m.kind(kind)
	waitFor(t, "two actors alive", func() bool { return gauge(t, k.alive) == 2 })

	// One message being handled and five waiting: six in the mailbox.
	system.Root.Send(a, "block")
	for range 5 {
		system.Root.Send(a, "next")
	}
	waitFor(t, "six messages in the mailbox", func() bool { return gauge(t, k.mailbox) == 6 })
	close(gate)
	waitFor(t, "an empty mailbox", func() bool { return gauge(t, k.mailbox) == 0 })

	// A panic: a failure and a restart, still two alive and two spawned.
	system.Root.Send(b, "panic")
	waitFor(t, "a restart", func() bool { return value(t, k.restarts) == 1 })
	waitFor(t, "the restarted actor's start", func() bool { return gauge(t, k.mailbox) == 0 })
	if f, s, al := value(t, k.failures), value(t, k.spawned), gauge(t, k.alive); f != 1 || s != 2 || al != 2 {
		t.Fatalf("after a restart: failures %v, spawned %v, alive %v; want 1, 2, 2", f, s, al)
	}

	// A stop, then a message to the stopped actor: a dead letter of the kind.
	if err := system.Root.StopFuture(a).Wait(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "one actor alive", func() bool { return gauge(t, k.alive) == 1 && value(t, k.stopped) == 1 })
	system.Root.Send(a, "late")
	waitFor(t, "a dead letter of the kind", func() bool { return value(t, m.deadLetters.WithLabelValues(kind)) == 1 })
	if got := value(t, m.deadLetters.WithLabelValues("app")); got != 0 {
		t.Fatalf("dead letters of kind app: %v", got)
	}
}
