package actorkit

import (
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metrics are the actor metrics of a node, per kind of actor (label "kind": app, session,
// dashboard...): actors alive, spawned, stopped and passivated, messages handled and
// their handling time, messages in the mailboxes, failures (a panic in Receive), restarts
// (the supervisor's answer to a failure), and dead letters (messages to an actor that had
// stopped). An actor is counted by spawning it with the props options of its kind
// (Props) under the name prefix of its kind (SpawnPrefix(props, kind)), so that a dead
// letter is attributed to the kind of its target.
//
// protoactor-go has metrics of its own through OpenTelemetry, and the actor system takes
// a MeterProvider (actor.WithMetricProviders), but the version in use only tests that
// provider for nil: every instrument is made on the process-global provider
// (otel.Meter), so bridging them into this node's Prometheus registry would tie every
// node of a process (tests run several) to one global registry. Its mailbox gauge also
// registers one callback per spawned actor that is never unregistered (a leak with an
// actor per socket), and it labels by Go type, not by kind. So these are counted here,
// by a receiver middleware and a mailbox middleware, without global state.
type Metrics struct {
	spawned, stopped, passivated, messages, failures, restarts, deadLetters, workPanics *prometheus.CounterVec
	alive, mailbox                                                                      *prometheus.GaugeVec
	handling                                                                            *prometheus.HistogramVec

	mu    sync.Mutex
	kinds map[string]*kindMetrics
}

// NewMetrics registers the actor metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"kind"})
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"kind"})
	}
	m := &Metrics{
		spawned:     counter("keyward_actors_spawned_total", "Actors spawned, by kind (a restart is not a spawn)."),
		stopped:     counter("keyward_actors_stopped_total", "Actors stopped (passivated ones included), by kind."),
		passivated:  counter("keyward_actors_passivated_total", "Actors stopped because they were idle, by kind."),
		messages:    counter("keyward_actor_messages_total", "Messages actors handled, by kind (system messages included)."),
		failures:    counter("keyward_actor_failures_total", "Panics while an actor handled a message, by kind."),
		restarts:    counter("keyward_actor_restarts_total", "Actors restarted by their supervisor after a failure, by kind."),
		deadLetters: counter("keyward_actor_dead_letters_total", "Messages sent to an actor that had stopped, by kind of the target."),
		workPanics: counter("keyward_actor_work_panics_total",
			"Panics in work an actor ran outside its Receive (a snapshot load, an admission, a read, a tick, a socket's I/O), by kind."),
		alive: gauge("keyward_actors_alive", "Actors alive on this node, by kind."),
		mailbox: gauge("keyward_actor_mailbox_messages",
			"Messages posted to the actors' mailboxes and not yet handled (waiting or being handled), by kind."),
		handling: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "keyward_actor_message_seconds",
			Help:    "Time an actor took to handle one message, by kind.",
			Buckets: []float64{.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .05, .1}}, []string{"kind"}),
		kinds: map[string]*kindMetrics{},
	}
	reg.MustRegister(m.spawned, m.stopped, m.passivated, m.messages, m.failures, m.restarts, m.deadLetters, m.workPanics, m.alive, m.mailbox, m.handling)
	return m
}

// kindMetrics are the metrics of one kind, resolved once.
type kindMetrics struct {
	spawned, stopped, passivated, messages, failures, restarts prometheus.Counter
	alive, mailbox                                             prometheus.Gauge
	handling                                                   prometheus.Observer
	// restarting holds the ids of the actors of the kind between Restarting and the
	// Started of their next incarnation, which is not a spawn.
	restarting sync.Map
}

func (m *Metrics) kind(kind string) *kindMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	if k := m.kinds[kind]; k != nil {
		return k
	}
	k := &kindMetrics{spawned: m.spawned.WithLabelValues(kind), stopped: m.stopped.WithLabelValues(kind),
		passivated: m.passivated.WithLabelValues(kind), messages: m.messages.WithLabelValues(kind),
		failures: m.failures.WithLabelValues(kind), restarts: m.restarts.WithLabelValues(kind),
		alive: m.alive.WithLabelValues(kind), mailbox: m.mailbox.WithLabelValues(kind), handling: m.handling.WithLabelValues(kind)}
	m.deadLetters.WithLabelValues(kind) // shown at 0 from the start
	m.kinds[kind] = k
	return k
}

// Props answers the props options that count the actors of kind: a receiver middleware
// (life cycle, messages, handling time, failures, restarts) and an unbounded mailbox (the
// default) that counts the messages in it. Spawn them with SpawnPrefix(props, kind). A
// nil Metrics answers none.
func (m *Metrics) Props(kind string) []actor.PropsOption {
	if m == nil {
		return nil
	}
	k := m.kind(kind)
	return []actor.PropsOption{actor.WithReceiverMiddleware(k.middleware), actor.WithMailbox(actor.Unbounded(mailboxCounter{k.mailbox}))}
}

// Passivated counts an actor of kind stopped for being idle (its owner stops it).
func (m *Metrics) Passivated(kind string) {
	if m != nil {
		m.kind(kind).passivated.Inc()
	}
}

// WorkPanicked counts a panic in work an actor of kind ran outside its Receive; the work
// was recovered and its waiters answered.
func (m *Metrics) WorkPanicked(kind string) {
	if m != nil {
		m.workPanics.WithLabelValues(kind).Inc()
	}
}

// KindMetrics are the metrics of one kind of actor, for actors that count themselves
// rather than through Props' middleware (a socket's actor: a props middleware gives every
// actor a context extension of its own, about 260 bytes a socket): they call Receive
// around their handling and put CountingMailbox on their mailbox.
type KindMetrics = kindMetrics

// Kind answers the metrics of kind (nil for a nil Metrics).
func (m *Metrics) Kind(kind string) *KindMetrics {
	if m == nil {
		return nil
	}
	return m.kind(kind)
}

// Receive counts msg, received by the actor self, and times its handling by handle.
func (k *kindMetrics) Receive(self *actor.PID, msg any, handle func()) { k.receive(self, msg, handle) }

// CountingMailbox is the mailbox middleware that counts the messages in the mailboxes of
// the kind.
func (k *kindMetrics) CountingMailbox() actor.MailboxMiddleware { return mailboxCounter{k.mailbox} }

// Value reads one series of kind, for tests and tools: a counter ("spawned", "stopped",
// "passivated", "messages", "failures", "restarts", "deadLetters", "workPanics"), a gauge
// ("alive", "mailbox") or the number of handling times observed ("handling"); 0 for a
// nil Metrics or another name.
func (m *Metrics) Value(series, kind string) float64 {
	if m == nil {
		return 0
	}
	var d dto.Metric
	var err error
	counters := map[string]*prometheus.CounterVec{"spawned": m.spawned, "stopped": m.stopped, "passivated": m.passivated,
		"messages": m.messages, "failures": m.failures, "restarts": m.restarts, "deadLetters": m.deadLetters, "workPanics": m.workPanics}
	switch series {
	case "alive", "mailbox":
		g := m.alive
		if series == "mailbox" {
			g = m.mailbox
		}
		err = g.WithLabelValues(kind).Write(&d)
		if err != nil {
			return 0
		}
		return d.GetGauge().GetValue()
	case "handling":
		if err = m.handling.WithLabelValues(kind).(prometheus.Histogram).Write(&d); err != nil {
			return 0
		}
		return float64(d.GetHistogram().GetSampleCount())
	}
	c := counters[series]
	if c == nil || c.WithLabelValues(kind).Write(&d) != nil {
		return 0
	}
	return d.GetCounter().GetValue()
}

// middleware counts the messages of an actor and times their handling.
func (k *kindMetrics) middleware(next actor.ReceiverFunc) actor.ReceiverFunc {
	return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
		k.receive(c.Self(), env.Message, func() { next(c, env) })
	}
}

// receive counts msg, received by the actor self, and times its handling by handle.
func (k *kindMetrics) receive(self *actor.PID, msg any, handle func()) {
	switch msg.(type) {
	case *actor.Started:
		if _, restarted := k.restarting.LoadAndDelete(self.Id); !restarted {
			k.spawned.Inc()
			k.alive.Inc()
		}
	case *actor.Stopped:
		k.stopped.Inc()
		k.alive.Dec()
	case *actor.Restarting:
		k.restarts.Inc()
		k.restarting.Store(self.Id, struct{}{})
	}
	start := time.Now()
	defer func() {
		k.handling.Observe(time.Since(start).Seconds())
		k.messages.Inc()
		if r := recover(); r != nil {
			k.failures.Inc()
			// The mailbox does not report a message whose handling panicked as received.
			k.mailbox.Dec()
			panic(r) // the supervisor decides
		}
	}()
	handle()
}

// mailboxCounter counts the messages posted to the mailboxes of a kind and not yet
// handled (protoactor-go's mailbox statistics).
type mailboxCounter struct{ n prometheus.Gauge }

func (c mailboxCounter) MailboxStarted()     {}
func (c mailboxCounter) MessagePosted(any)   { c.n.Inc() }
func (c mailboxCounter) MessageReceived(any) { c.n.Dec() }
func (c mailboxCounter) MailboxEmpty()       {}

// kindOf answers the kind of the actor pid names, from the name prefix it was spawned
// with ("app$12", "app$12/session$40"), or "other" (futures, kinds without Props).
func (m *Metrics) kindOf(pid *actor.PID) string {
	if pid == nil {
		return "other"
	}
	name := pid.Id
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	kind, _, _ := strings.Cut(name, "$")
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.kinds[kind] == nil {
		return "other"
	}
	return kind
}

// WatchDeadLetters counts the dead letters of system by kind of their target; the answer
// unsubscribes. A nil Metrics watches nothing.
func (m *Metrics) WatchDeadLetters(system *actor.ActorSystem) func() {
	if m == nil {
		return func() {}
	}
	sub := system.EventStream.Subscribe(func(evt any) {
		if d, ok := evt.(*actor.DeadLetterEvent); ok {
			m.deadLetters.WithLabelValues(m.kindOf(d.PID)).Inc()
		}
	})
	return func() { system.EventStream.Unsubscribe(sub) }
}
