package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the actor metrics of a node, per kind of actor (label "kind"): spawned,
// stopped and passivated actors, messages handled and their handling time, failures (a
// panic in Receive), restarts (the supervisor's answer to a failure), and dead letters (messages to an actor that had stopped). Actors
// alive are a gauge of each directory (keyward_app_actors).
//
// protoactor-go has metrics of its own through OpenTelemetry, but the version in use reads
// the process-global meter provider (otel.Meter), not the one given to the actor system:
// bridging it would tie every node of a process (tests run several) to one registry
// through global state. These are counted here instead, by a receiver middleware.
type Metrics struct {
	spawned, stopped, passivated, messages, failures, restarts, deadLetters *prometheus.CounterVec
	handling                                                                *prometheus.HistogramVec
}

// NewMetrics registers the actor metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"kind"})
	}
	m := &Metrics{
		spawned:     counter("keyward_actors_spawned_total", "Actors spawned, by kind."),
		stopped:     counter("keyward_actors_stopped_total", "Actors stopped (passivated ones included), by kind."),
		passivated:  counter("keyward_actors_passivated_total", "Actors stopped because they were idle, by kind."),
		messages:    counter("keyward_actor_messages_total", "Messages actors handled, by kind (system messages included)."),
		failures:    counter("keyward_actor_failures_total", "Panics while an actor handled a message, by kind."),
		restarts:    counter("keyward_actor_restarts_total", "Actors restarted by their supervisor after a failure, by kind."),
		deadLetters: counter("keyward_actor_dead_letters_total", "Messages sent to an actor that had stopped, by kind of sender's target."),
		handling: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "keyward_actor_message_seconds",
			Help:    "Time an actor took to handle one message, by kind.",
			Buckets: []float64{.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .05, .1}}, []string{"kind"}),
	}
	reg.MustRegister(m.spawned, m.stopped, m.passivated, m.messages, m.failures, m.restarts, m.deadLetters, m.handling)
	return m
}

// middleware counts the messages of actors of one kind and times their handling.
func (m *Metrics) middleware(kind string) actor.ReceiverMiddleware {
	messages, handling, failures := m.messages.WithLabelValues(kind), m.handling.WithLabelValues(kind), m.failures.WithLabelValues(kind)
	spawned, stopped, restarts := m.spawned.WithLabelValues(kind), m.stopped.WithLabelValues(kind), m.restarts.WithLabelValues(kind)
	return func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			switch env.Message.(type) {
			case *actor.Started:
				spawned.Inc()
			case *actor.Stopped:
				stopped.Inc()
			case *actor.Restarting:
				restarts.Inc()
			}
			start := time.Now()
			defer func() {
				handling.Observe(time.Since(start).Seconds())
				messages.Inc()
				if r := recover(); r != nil {
					failures.Inc()
					panic(r) // the supervisor decides
				}
			}()
			next(c, env)
		}
	}
}

// passivation counts an actor of kind stopped for being idle.
func (m *Metrics) passivation(kind string) {
	if m != nil {
		m.passivated.WithLabelValues(kind).Inc()
	}
}

// watchDeadLetters counts the system's dead letters under kind; the answer unsubscribes.
func (m *Metrics) watchDeadLetters(system *actor.ActorSystem, kind string) func() {
	c := m.deadLetters.WithLabelValues(kind)
	sub := system.EventStream.Subscribe(func(evt any) {
		if _, ok := evt.(*actor.DeadLetterEvent); ok {
			c.Inc()
		}
	})
	return func() { system.EventStream.Unsubscribe(sub) }
}
