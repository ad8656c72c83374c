package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/internal/supervise"
)

// The kinds of the node's supervised goroutines (doc.go), in the order they start: each
// stops before those started before it.
const (
	kindMail            = "mail"             // mail.Queue.Run (OpenCore: every part may queue a mail)
	kindUsageFlusher    = "usage-flusher"    // usage.Meter.Run
	kindWebhooksWorker  = "webhooks-worker"  // integrations.Worker.Run
	kindRevocationPurge = "revocation-purge" // revocationPurge
	kindLogJanitor      = "log-janitor"      // logs.Janitor.Run
	// kindBackups (backup.go) starts after the log janitor: internal/backup.Scheduler.Run.
	kindHTTPAPI     = "http-api"     // the API listener (Server.Run)
	kindHTTPMetrics = "http-metrics" // the metrics listener, when apart (Server.Run)
)

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

// revocationPurge removes the expired logout revocations now and then every interval,
// until ctx ends (storage refuses a token past its expiry by the expiry alone, so the
// revocation is no longer needed).
func revocationPurge(a *accounts.Service, every time.Duration, log *slog.Logger) supervise.Func {
	return func(ctx context.Context) error {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			pctx, cancel := context.WithTimeout(ctx, every)
			n, err := a.PurgeRevocations(pctx)
			cancel()
			switch {
			case err != nil && ctx.Err() == nil:
				log.Warn("revocation purge failed, will retry", "err", err)
			case n > 0:
				log.Debug("expired revocations purged", "count", n)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
	}
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
