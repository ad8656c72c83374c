package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/keyward/keyward/actors/sockets"
	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/core/analytics"
	"github.com/keyward/keyward/core/apikeys"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/core/commerce"
	"github.com/keyward/keyward/core/files"
	"github.com/keyward/keyward/core/integrations"
	"github.com/keyward/keyward/core/logs"
	"github.com/keyward/keyward/core/rules"
	"github.com/keyward/keyward/core/variables"
	"github.com/keyward/keyward/core/wshooks"
)

// Checker is something /readyz asks: the storage and cluster engines.
type Checker struct {
	Name string
	Ping func(ctx context.Context) error
}

// Deps are what the HTTP edge calls.
type Deps struct {
	Accounts     *accounts.Service
	APIKeys      *apikeys.Service
	Audit        *audit.Service
	Apps         *apps.Service
	Variables    *variables.Service
	Rules        *rules.Service
	Logs         *logs.Service
	Analytics    *analytics.Service
	Files        *files.Service
	Integrations *integrations.Service
	Client       *client.Service
	Realtime     *sockets.Service
	WSHooks      *wshooks.Service
	// Backups answers the administrators' backup routes; nil answers them 503.
	Backups Backups
	// Commerce serves the store receivers and the owner's store routes (issue 23); nil
	// answers them 503.
	Commerce *commerce.Service
	// Portal serves the buyer portal (issue 23); nil answers its routes 503.
	Portal  *commerce.Portal
	Limiter cluster.RateLimiter
	Ready   []Checker
	// Metrics is where request metrics are registered and what /metrics serves.
	Metrics *prometheus.Registry
	Log     *slog.Logger
	// Pages, when set, answers the requests no route matches that ask for a page or an
	// asset of the dashboard (web.Pages), after the middleware; the rest get the 404.
	Pages PageServer
}

// PageServer answers the dashboard's pages and assets; Serve reports whether it did.
type PageServer interface {
	Serve(w http.ResponseWriter, r *http.Request) bool
}

// Config tunes the edge.
type Config struct {
	// TrustedProxies are CIDRs (or addresses) whose X-Forwarded-For is believed.
	TrustedProxies []string
	// MaxBodyBytes caps JSON request bodies; default 1 MiB.
	MaxBodyBytes int64
	// CountryHeader names the trusted proxy's country header (e.g. CF-IPCountry), if any.
	CountryHeader string
	// MetricsOnMain serves /metrics on this handler (false when it has its own listener).
	MetricsOnMain bool
	// BodyTimeout is how long a request body may take to arrive, plus one second per
	// BodyMinRate bytes received (bodyDeadline); defaults DefaultBodyTimeout and
	// DefaultBodyMinRate.
	BodyTimeout time.Duration
	BodyMinRate int64
	// MailOutbox is the folder mails are written to when no SMTP server is set; only
	// signed-in owners are told it (GET /api/auth/mail-outbox). Empty with SMTP.
	MailOutbox string
}

// DefaultMaxBodyBytes is the default cap of a JSON request body.
const DefaultMaxBodyBytes = 1 << 20

// Defaults of the body read bound: 30 s, extended while at least 16 KiB/s arrives.
const (
	DefaultBodyTimeout = 30 * time.Second
	DefaultBodyMinRate = 16 << 10
)

func init() { gin.SetMode(gin.ReleaseMode) }

// New builds the handler with every route of the route table (route_table.go).
func New(d Deps, cfg Config) (http.Handler, error) {
	if d.Accounts == nil || d.APIKeys == nil || d.Audit == nil || d.Apps == nil || d.Variables == nil || d.Rules == nil || d.Logs == nil || d.Analytics == nil || d.Files == nil || d.Integrations == nil || d.Client == nil || d.Realtime == nil || d.WSHooks == nil || d.Limiter == nil || d.Metrics == nil || d.Log == nil {
		return nil, errors.New("httpapi: missing dependency")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.BodyMinRate <= 0 {
		cfg.BodyMinRate = DefaultBodyMinRate
	}
	r := gin.New()
	r.HandleMethodNotAllowed = true
	// A path with a trailing slash is an unknown route (404 envelope), not a redirect with
	// an HTML body: every answer is the envelope, and the SDKs never add the slash.
	r.RedirectTrailingSlash = false
	r.ContextWithFallback = true
	// Only X-Forwarded-For, and only from trusted proxies (none by default).
	r.RemoteIPHeaders = []string{"X-Forwarded-For"}
	if err := r.SetTrustedProxies(cfg.TrustedProxies); err != nil {
		return nil, fmt.Errorf("httpapi: trusted proxies: %w", err)
	}
	metrics := newHTTPMetrics(d.Metrics)
	r.Use(requestID(), trackUpgrades(), recovery(d.Log), accessLog(d.Log), metrics.middleware(),
		bodyDeadline(cfg.BodyTimeout, cfg.BodyMinRate),
		// Uploads stream through, capped by the upload limit plus room for the multipart framing.
		bodyLimit(cfg.MaxBodyBytes, map[string]int64{"POST " + uploadRoute: d.Files.MaxBytes() + 64<<10}))
	r.NoRoute(func(c *gin.Context) {
		if d.Pages != nil && d.Pages.Serve(c.Writer, c.Request) {
			return
		}
		fail(c, core.E(core.CodeNotFound, "no route %s %s", c.Request.Method, c.Request.URL.Path))
	})
	r.NoMethod(func(c *gin.Context) {
		fail(c, core.E(core.CodeNoMethod, "method %s is not allowed on %s", c.Request.Method, c.Request.URL.Path))
	})

	// Owner routes take a session, the account key or a scoped key (checkScope). Changes
	// through the routes the table audits go to the audit log (after requireOwner: refused
	// requests are not recorded).
	owners := ownerAuth{Authenticator: d.Accounts, keys: d.APIKeys}
	docs, err := newAPIDocs()
	if err != nil {
		return nil, err
	}
	ch := &clientHandlers{svc: d.Client, tokens: d.Apps, limiter: d.Limiter, countryHeader: cfg.CountryHeader}
	wsh := newWSHandlers(d.Realtime, d.WSHooks, d.Apps, d.Accounts, d.Limiter, d.Metrics, d.Log)
	wsh.audit = d.Audit
	written := newAuditWritten(d.Metrics) // the REST routes' entries and the dashboard sockets'
	wsh.auditWritten = written
	portal, err := newPortalHandlers(d.Portal, d.Limiter)
	if err != nil {
		return nil, err
	}
	handlers := &handlerSet{
		accounts:     &accountHandlers{svc: d.Accounts, limiter: d.Limiter, outbox: cfg.MailOutbox},
		apiKeys:      &apiKeyHandlers{svc: d.APIKeys},
		audit:        &auditHandlers{svc: d.Audit},
		apps:         &appHandlers{svc: d.Apps, sessions: d.Client, files: d.Client.LicenseFiles(), seats: d.Client},
		data:         &appDataHandlers{vars: d.Variables, rules: d.Rules, logs: d.Logs},
		analytics:    &analyticsHandlers{svc: d.Analytics, sessions: d.Client},
		files:        &fileHandlers{svc: d.Files},
		client:       ch,
		integrations: &integrationHandlers{svc: d.Integrations},
		ws:           wsh,
		hooks:        &wsHookHandlers{svc: d.WSHooks},
		stores:       newStoreHandlers(d.Commerce, d.Apps, d.Analytics),
		portal:       portal,
		docs:         docs,
		backups:      &backupHandlers{svc: d.Backups},
		readyz:       readyz(d.Ready),
		metrics:      gin.WrapH(promhttp.HandlerFor(d.Metrics, promhttp.HandlerOpts{})),
	}
	err = register(r, routeTable(handlers), edge{
		owner: requireOwner(owners), admin: requireAdmin(), audit: auditChangesWritten(d.Audit, d.Log, written),
		// /metrics has its own listener unless MetricsOnMain.
		skip: func(rt route) bool { return rt.path == metricsPath && !cfg.MetricsOnMain },
	})
	if err != nil {
		return nil, err
	}
	if missing := unscopedRoutes(r.Routes()); len(missing) > 0 {
		return nil, errUnscoped(missing)
	}
	return r, nil
}

// healthz answers that the process serves.
func healthz(c *gin.Context) { ok(c, http.StatusOK, gin.H{"status": "ok"}) }

// readyz answers 200 when every checker answers within 2 s, else 503 naming the failures.
func readyz(checks []Checker) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
		defer cancel()
		status := gin.H{}
		var failed []string
		for _, ch := range checks {
			if err := ch.Ping(ctx); err != nil {
				status[ch.Name] = "unavailable"
				failed = append(failed, ch.Name)
				slog.Warn("readiness check failed", "check", ch.Name, "err", err)
				continue
			}
			status[ch.Name] = "ok"
		}
		if len(failed) > 0 {
			fail(c, core.E(core.CodeUnavailable, "not ready: %v unavailable", failed))
			return
		}
		ok(c, http.StatusOK, status)
	}
}
