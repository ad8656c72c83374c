package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/keyward/keyward/core/logs"
	"github.com/keyward/keyward/internal/supervise"
)

// The node's supervised goroutines and stop steps (doc.go), in the order they start: the
// supervisor stops each before those started before it, so this order is the node's
// shutdown order read backwards. A part starts after what it calls while it stops:
//
//	OpenCore:
//	  cluster-janitor, cluster-bus-fanout, cluster-bus-receive (per connection, as the bus
//	                                 subscribes): the cluster engine's; Close closes it after
//	  mail-last-try, mail            every part may queue a mail: it stops last of the rest
//	  events-writer, events-notifier the log's writer: every producer stops before it
//	  events-close                   (step) the log's last round, before its writer's end
//	  events-unsubscribe             (step) no more wake-ups from the other nodes
//	  audit-writer                   the HTTP server and the sockets record: they stop first
//	  usage-last-flush               (step) after the flusher and what counts calls
//	  app-actors                     (step) after the sockets and sessions, which call them
//	Server:
//	  usage-flusher, webhooks-worker, revocation-purge, log-janitor, backups
//	  client-writer                  the sessions' last round, after the sockets ended
//	  realtime                       (step) the sockets close while the actors still run
//	  events-compaction, events-consumer-NAME
//	                                 the consumers catch up first, while everything they
//	                                 call (sockets, sessions, webhooks, actors) still runs
//	  http-api, http-metrics         Server.Shutdown ends them before Close
const (
	kindMail            = "mail"             // mail.Queue.Run
	kindUsageFlusher    = "usage-flusher"    // usage.Meter.Run
	kindWebhooksWorker  = "webhooks-worker"  // integrations.Worker.Run
	kindRevocationPurge = "revocation-purge" // accounts.Service.RunPurge (revocations and owner sessions)
	kindLogJanitor      = "log-janitor"      // logs.Janitor.Run
	// kindBackups (backup.go) starts after the log janitor: internal/backup.Scheduler.Run.
	kindHTTPAPI     = "http-api"     // the API listener (Server.Run)
	kindHTTPMetrics = "http-metrics" // the metrics listener, when apart (Server.Run)
	// kindHTTPUpgrades counts the panics of the API's upgrade listener's workers (they
	// serve one connection at a time and recover themselves: transport/ws.Listener).
	kindHTTPUpgrades = "http-upgrades"

	// Kinds the services name themselves (they start through the node's starter).
	kindEventsWriter     = "events-writer"
	kindEventsNotifier   = "events-notifier"
	kindEventsCompaction = "events-compaction"
	kindEventsConsumer   = "events-consumer-" // + the consumer's name
	kindAuditWriter      = "audit-writer"
	kindClientWriter     = "client-writer"

	// Stop steps (supervise.OnStop).
	stepMailLastTry         = "mail-last-try"
	stepEventLogClose       = "events-close"
	stepEventLogUnsubscribe = "events-unsubscribe"
	stepUsageLastFlush      = "usage-last-flush"
	stepAppActors           = "app-actors"
	stepRealtime            = "realtime"
)

// starter is the node's supervisor as the services see it (supervise.Starter): what they
// start through it is decorated by the test wrap.
type starter struct {
	g    *supervise.Supervisor
	wrap wrapFunc
}

func (s starter) Go(kind string, policy supervise.Policy, run supervise.Func) error {
	return startGoroutine(s.g, s.wrap, kind, policy, run)
}

// startGoroutines starts Server's part of the node, in the order above.
func (s *Server) startGoroutines(ctx context.Context) error {
	core, c := s.core, s.cfg
	owner := starter{core.Goroutines, core.wrap}
	janitor := logs.NewJanitor(core.Store, logs.RetentionConfig{MaxAge: c.LogMaxAge, MaxPerApp: c.LogMaxPerApp, Now: c.Clock}, s.log)
	err := errors.Join(core.goroutine(kindUsageFlusher, supervise.Restart, core.Meter.Run),
		core.goroutine(kindWebhooksWorker, supervise.Restart, core.Webhooks.Run),
		core.goroutine(kindRevocationPurge, supervise.Restart, core.Accounts.RunPurge),
		core.goroutine(kindLogJanitor, supervise.Restart, janitor.Run),
		core.goroutine(kindBackups, supervise.Restart, core.Backups.Run),
		core.Client.Start(owner))
	if err != nil {
		return err
	}
	if err := core.Realtime.Start(ctx); err != nil {
		return err
	}
	if err := core.Goroutines.OnStop(stepRealtime, func(context.Context) error { core.Realtime.Close(); return nil }); err != nil {
		core.Realtime.Close()
		return err
	}
	core.Bus.Start()
	return nil
}

// wrapFunc decorates a goroutine's body before it starts; tests use it to make each kind
// panic once on purpose. nil in production.
type wrapFunc func(kind string, run supervise.Func) supervise.Func

// goroutine starts run under the node's supervisor.
func (c *Core) goroutine(kind string, policy supervise.Policy, run supervise.Func) error {
	return startGoroutine(c.Goroutines, c.wrap, kind, policy, run)
}

func startGoroutine(g *supervise.Supervisor, wrap wrapFunc, kind string, policy supervise.Policy, run supervise.Func) error {
	if wrap != nil {
		run = wrap(kind, run)
	}
	return g.Go(kind, policy, run)
}

// listen starts a listener's goroutine. A listener cannot be served again once Serve
// returned (Serve closes it), so it runs under Report, and its end tells Run, which shuts
// the node down, as any listener failure does: a Serve error, or a panic (which the
// supervisor also logs and counts). Shutdown's ErrServerClosed is the normal end.
func (s *Server) listen(kind, name string, srv *http.Server, ln net.Listener) error {
	run := func(context.Context) error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.serveErrCh <- fmt.Errorf("%s listener: %w", name, err)
			return err
		}
		return nil
	}
	if s.core.wrap != nil {
		run = s.core.wrap(kind, run)
	}
	return s.core.Goroutines.Go(kind, supervise.Report, func(ctx context.Context) error {
		defer func() {
			if r := recover(); r != nil {
				s.serveErrCh <- fmt.Errorf("%s listener panicked: %v", name, r)
				panic(r) // the supervisor's recover logs it with the stack and counts it
			}
		}()
		return run(ctx)
	})
}
