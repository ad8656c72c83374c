package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/storage"
)

// eventsTopic is the cluster bus topic on which a node says it stored events, so that the
// other nodes' consumers read the log at once (without it they read it within a second).
// The payload is the node's id; a node ignores its own.
const eventsTopic = "events-stored"

// socketEvents are the events the sockets and the client sessions act on.
var socketEvents = events.NewSet(events.VariableCreate, events.VariableUpdate, events.VariableDelete,
	events.UserBan, events.UserDelete, events.UserSessionKill)

// openEventLog opens the node's event log on the store, with the cluster engine electing
// the node that runs each shared consumer, and the cluster bus carrying "events stored"
// between nodes. Its loops run under owner; its close and the bus subscription's end are
// stop steps there, after the parts started later (which publish) have stopped.
func openEventLog(ctx context.Context, c Config, store storage.Store, engine cluster.Engine, owner starter, log *slog.Logger) (*events.Bus, error) {
	node := uuid.NewString()
	notify := func() {
		nctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := engine.Publish(nctx, eventsTopic, []byte(node)); err != nil {
			log.Debug("events: cannot tell the other nodes; they read the log within a second", "err", err)
		}
	}
	bus := events.NewBus(events.Config{Store: store, Leases: engine, Node: node, Notify: notify,
		KeepFor: c.EventRetention, MaxAge: c.EventMaxAge, Now: c.Clock, Log: log, Goroutines: owner})
	if err := owner.g.OnStop(stepEventLogClose, func(context.Context) error { bus.Close(); return nil }); err != nil {
		bus.Close()
		return nil, err
	}
	unsubscribe, err := engine.Subscribe(ctx, eventsTopic, func(p []byte) {
		if string(p) != node {
			bus.Wake()
		}
	})
	if err != nil {
		return nil, err
	}
	if err := owner.g.OnStop(stepEventLogUnsubscribe, func(context.Context) error { unsubscribe(); return nil }); err != nil {
		unsubscribe()
		return nil, err
	}
	return bus, nil
}

// eventLogMetrics reports each consumer's lag and failures.
type eventLogMetrics struct{ bus *events.Bus }

var (
	eventLagDesc = prometheus.NewDesc("keyward_event_log_lag",
		"Events stored in the event log that the consumer has not handled yet (0 on the nodes that do not run a shared consumer).", []string{"consumer"}, nil)
	eventFailuresDesc = prometheus.NewDesc("keyward_event_consumer_failures_total",
		"Failed attempts of an event log consumer (the events are handed again).", []string{"consumer"}, nil)
	eventHandledDesc = prometheus.NewDesc("keyward_event_consumer_handled_total",
		"Events an event log consumer handled on this node.", []string{"consumer"}, nil)
)

func (m eventLogMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- eventLagDesc
	ch <- eventFailuresDesc
	ch <- eventHandledDesc
}

func (m eventLogMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.bus.Consumers() {
		ch <- prometheus.MustNewConstMetric(eventLagDesc, prometheus.GaugeValue, float64(c.Lag()), c.Name())
		ch <- prometheus.MustNewConstMetric(eventFailuresDesc, prometheus.CounterValue, float64(c.Failures()), c.Name())
		ch <- prometheus.MustNewConstMetric(eventHandledDesc, prometheus.CounterValue, float64(c.Handled()), c.Name())
	}
}
