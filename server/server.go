package server

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/keyward/keyward/actors/actorkit"
	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/actors/sockets"
	"github.com/keyward/keyward/cluster"
	clustermemory "github.com/keyward/keyward/cluster/memory"
	clusterredis "github.com/keyward/keyward/cluster/redis"
	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/core/analytics"
	"github.com/keyward/keyward/core/apikeys"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/core/commerce"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/files"
	"github.com/keyward/keyward/core/integrations"
	"github.com/keyward/keyward/core/logs"
	"github.com/keyward/keyward/core/passwords"
	"github.com/keyward/keyward/core/plans"
	"github.com/keyward/keyward/core/rules"
	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/core/usage"
	"github.com/keyward/keyward/core/variables"
	"github.com/keyward/keyward/core/webhooks"
	"github.com/keyward/keyward/core/wshooks"
	httpapi "github.com/keyward/keyward/http"
	"github.com/keyward/keyward/internal/backup"
	"github.com/keyward/keyward/internal/supervise"
	"github.com/keyward/keyward/mail"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/blobs"
	"github.com/keyward/keyward/storage/blobs/fsblobs"
	"github.com/keyward/keyward/storage/blobs/gridfs"
	storagemongo "github.com/keyward/keyward/storage/mongo"
	storagesqlite "github.com/keyward/keyward/storage/sqlite"
	"github.com/keyward/keyward/transport/ws"
	"github.com/keyward/keyward/web"
)

// apiHeadTimeout bounds the wait for a request's head on the API's connections.
const apiHeadTimeout = 10 * time.Second

// Server is one running node.
type Server struct {
	cfg  Config
	log  *slog.Logger
	core *Core

	api        *http.Server
	apiLn      net.Listener
	upgrades   *ws.Listener // under apiLn: the sockets' upgrades
	metrics    *http.Server
	metricsLn  net.Listener
	closeOnce  sync.Once
	closeErr   error
	serveErrCh chan error
}

// OpenStore opens the storage engine the configuration names: MongoDB when a URI is set,
// else SQLite in the data dir. Both encrypt the secrets they must read back with the
// secrets key.
func OpenStore(ctx context.Context, c Config) (storage.Store, string, error) {
	box, err := secretsBox(c)
	if err != nil {
		return nil, "", err
	}
	if c.MongoURI != "" {
		s, err := storagemongo.Open(ctx, storagemongo.Config{URI: c.MongoURI, Database: c.MongoDatabase, Sealer: box, Monitor: c.MongoMonitor, Client: c.MongoClient})
		if err != nil {
			return nil, "", fmt.Errorf("MongoDB at %s: %w", redactURL(c.MongoURI), wrongKeyHint(err))
		}
		return s, "mongo", nil
	}
	if err := ensureDir(c.DataDir, "data dir"); err != nil {
		return nil, "", err
	}
	path := filepath.Join(c.DataDir, "keyward.db")
	// A schema migration first copies the database to <data dir>/backups (OpenCore logs where).
	s, err := storagesqlite.Open(ctx, storagesqlite.Config{Path: path, Sealer: box, BackupBeforeMigrate: filepath.Join(c.DataDir, "backups")})
	if err != nil {
		return nil, "", fmt.Errorf("SQLite at %s: %w", path, wrongKeyHint(err))
	}
	return s, "sqlite:" + path, nil
}

// OpenCluster opens the cluster engine the configuration names: Redis when a URL is set,
// else the in-process memory engine. Its loops (the bus, the janitor) run under owner (the
// node's supervisor; nil: one of the engine's own).
func OpenCluster(ctx context.Context, c Config, owner supervise.Starter) (cluster.Engine, string, error) {
	if c.RedisURL != "" {
		e, err := clusterredis.New(ctx, clusterredis.Config{URL: c.RedisURL, Prefix: c.RedisPrefix, CommandTimeout: c.RedisCommandTimeout, Goroutines: owner})
		if err != nil {
			return nil, "", fmt.Errorf("Redis at %s: %w", redactURL(c.RedisURL), err)
		}
		return e, "redis", nil
	}
	return clustermemory.New(clustermemory.Config{Goroutines: owner}), "memory", nil
}

// redactURL hides a password in a connection URL for logs and errors.
func redactURL(u string) string {
	scheme, rest, found := strings.Cut(u, "://")
	if !found {
		return u
	}
	userinfo, host, found := strings.Cut(rest, "@")
	if !found {
		return u
	}
	user, _, _ := strings.Cut(userinfo, ":")
	return scheme + "://" + user + ":***@" + host
}

// openBlobs opens where file bytes live: GridFS in the MongoDB store's database, so every
// node serves them, or <data dir>/files in the embedded mode.
func openBlobs(ctx context.Context, c Config, store storage.Store) (blobs.Store, error) {
	if m, ok := store.(*storagemongo.Store); ok {
		b, err := gridfs.New(ctx, m.Database(), "files")
		if err != nil {
			return nil, fmt.Errorf("GridFS file store: %w", err)
		}
		return b, nil
	}
	b, err := fsblobs.New(filepath.Join(c.DataDir, "files"))
	if err != nil {
		return nil, fmt.Errorf("file store: %w", err)
	}
	return b, nil
}

// jwtSecret returns the configured secret, or the one kept in the data dir (made on first start).
func jwtSecret(c Config) ([]byte, error) {
	return configuredOrKept(c.JWTSecret, c.DataDir, "jwt.secret", "JWT secret")
}

// secretsBox builds the at-rest encryption of stored secrets from the configured key, or
// the one kept in the data dir (made on first start).
func secretsBox(c Config) (*secrets.Box, error) {
	key, err := configuredOrKept(c.SecretsKey, c.DataDir, "secrets.key", "secrets key")
	if err != nil {
		return nil, err
	}
	return secrets.NewBox(key)
}

// wrongKeyHint says what to do when the stored secrets do not open at start.
func wrongKeyHint(err error) error {
	if errors.Is(err, secrets.ErrCannotOpen) {
		return fmt.Errorf("the secrets key (--secrets-key / KEYWARD_SECRETS_KEY, else secrets.key in the data dir) "+
			"is not the one the stored secrets were encrypted with; start with the original key: %w", err)
	}
	return err
}

// configuredOrKept returns the configured value, or the one kept in the file name of the
// data dir, generating it (48 random bytes, 0600) on first start.
func configuredOrKept(configured, dataDir, name, what string) ([]byte, error) {
	if configured != "" {
		return []byte(configured), nil
	}
	if err := ensureDir(dataDir, "data dir"); err != nil {
		return nil, err
	}
	path := filepath.Join(dataDir, name)
	b, err := os.ReadFile(path)
	if err == nil {
		s := strings.TrimSpace(string(b))
		if len(s) < 32 {
			return nil, fmt.Errorf("%s in %s is shorter than 32 bytes", what, path)
		}
		return []byte(s), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading %s %s: %w", what, path, err)
	}
	raw := make([]byte, 48)
	_, _ = rand.Read(raw)
	s := base64.RawURLEncoding.EncodeToString(raw)
	// O_EXCL: two processes starting at once on one data dir must not overwrite each other.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, privateFileMode)
	if errors.Is(err, os.ErrExist) {
		return configuredOrKept(configured, dataDir, name, what)
	} else if err != nil {
		return nil, fmt.Errorf("writing %s %s: %w", what, path, err)
	}
	if _, err := f.WriteString(s + "\n"); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("writing %s %s: %w", what, path, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("writing %s %s: %w", what, path, err)
	}
	return []byte(s), nil
}

// dashboardOutbox is the outbox folder the dashboard names to signed-in owners (its sign-up
// page only says mails go to files): set only when mails go there (no SMTP host).
func dashboardOutbox(c Config) string {
	if c.SMTP.Host != "" {
		return ""
	}
	return c.MailOutbox
}

// newMailQueue builds the mail queue: SMTP when a host is set, else the outbox folder.
func newMailQueue(c Config, log *slog.Logger) (*mail.Queue, string, error) {
	var sender mail.Sender
	desc := ""
	if c.SMTP.Host != "" {
		s, err := mail.NewSMTP(c.SMTP)
		if err != nil {
			return nil, "", err
		}
		sender, desc = s, "smtp:"+c.SMTP.Host
	} else {
		o, err := mail.NewOutbox(c.MailOutbox, log)
		if err != nil {
			return nil, "", err
		}
		sender, desc = o, "outbox:"+c.MailOutbox
	}
	return mail.NewQueue(sender, mail.QueueConfig{From: c.MailFrom}, log), desc, nil
}

// Core are the engines and services every entry point (server, admin commands) shares.
type Core struct {
	Store     storage.Store
	Engine    cluster.Engine
	Mail      *mail.Queue
	Accounts  *accounts.Service
	Apps      *apps.Service
	Variables *variables.Service
	Rules     *rules.Service
	Logs      *logs.Service
	Analytics *analytics.Service
	Files     *files.Service
	// Integrations runs the owner's webhook flows; Webhooks sends the queued deliveries
	// (started by Server).
	Integrations *integrations.Service
	Webhooks     *integrations.Worker
	// Client runs the client API; AppActors hold its application snapshots and the
	// apps' compiled WebSocket hooks.
	Client    *client.Service
	AppActors *app.Apps[AppState]
	// Realtime runs the WebSocket channels; Server subscribes it to the cluster bus.
	Realtime *sockets.Service
	// WSHooks keeps the apps' WebSocket hooks and plans their actions with the pipeline
	// of the app's actor.
	WSHooks *wshooks.Service
	// Bus is the durable event log: every change stores its events there before it is
	// acknowledged; its consumers write log entries, queue webhook deliveries, push to
	// sockets and reload app actors (Server starts them).
	Bus *events.Bus
	// Commerce turns store sales into licenses (issue 23).
	Commerce *commerce.Service
	// Country resolves client addresses to countries; nil when not configured.
	Country rules.CountryResolver
	// Audit writes the audit log off the request path; Close writes what is queued.
	Audit *audit.Service
	// Meter counts client API calls; Server starts its flusher.
	Meter *usage.Meter
	// Goroutines owns the node's long-lived goroutines and its stop steps (goroutines.go):
	// OpenCore starts the mail queue, the event log's writer, the audit writer and the app
	// actors, Server the rest; Close stops them all, the last started first.
	Goroutines *supervise.Supervisor
	wrap       wrapFunc
	// Metrics is the node's Prometheus registry: OpenCore registers the services' own
	// metrics, Server the rest.
	Metrics *prometheus.Registry
	// Backups takes the node's backups: on its schedule (Server starts it) and when an
	// admin asks.
	Backups *backup.Scheduler
	// Engines names the engines in use (storage, cluster, mail), for the start-up log line.
	Engines []any
}

// closeTimeout bounds Close's stop of the goroutines: each event consumer may catch up for
// a few seconds, one after the other.
const closeTimeout = 30 * time.Second

// Close stops the node's goroutines and stop steps in the reverse order of their start
// (goroutines.go says the order and why), then releases the engines. The HTTP server is
// shut down before (Server.Shutdown): every change it recorded is queued by then.
func (c *Core) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	goroutinesErr := c.Goroutines.Stop(ctx)
	var geoErr error
	if g, ok := c.Country.(*rules.GeoIP); ok {
		geoErr = g.Close()
	}
	return errors.Join(goroutinesErr, geoErr, c.Engine.Close(), c.Store.Close())
}

// OpenCore opens the engines and builds the services, closing what it opened on failure.
func OpenCore(ctx context.Context, c Config, log *slog.Logger) (*Core, error) {
	return openCore(ctx, c, log, nil)
}

func openCore(ctx context.Context, c Config, log *slog.Logger, wrap wrapFunc) (_ *Core, err error) {
	var closers []func() error
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				_ = closers[i]()
			}
		}
	}()
	if err := securePrivateDirs(c, log); err != nil {
		return nil, err
	}
	secret, err := jwtSecret(c)
	if err != nil {
		return nil, err
	}
	// The node's supervisor first: the cluster engine's loops start under it, before every
	// other part, so they stop after them (Close then closes the engine).
	reg := prometheus.NewRegistry()
	goroutines, err := supervise.New(supervise.Config{Log: log, Metrics: reg})
	if err != nil {
		return nil, err
	}
	owner := starter{goroutines, wrap}
	store, storeDesc, err := OpenStore(ctx, c)
	if err != nil {
		return nil, err
	}
	closers = append(closers, store.Close)
	if sq, ok := store.(*storagesqlite.Store); ok {
		if m := sq.Migration(); m.From != m.To && m.From > 0 {
			log.Warn("database schema migrated; the database before it was copied aside", "from", m.From, "to", m.To, "copy", m.Backup)
		}
	}
	engine, engineDesc, err := OpenCluster(ctx, c, owner)
	if err != nil {
		return nil, err
	}
	closers = append(closers, engine.Close)
	mailq, mailDesc, err := newMailQueue(c, log)
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() error {
		stopCtx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		return goroutines.Stop(stopCtx)
	})
	// Mail first: every part may queue a mail, so it stops last; its last attempt at what
	// waits comes once its loop ended.
	if err := errors.Join(goroutines.OnStop(stepMailLastTry, func(context.Context) error { mailq.Close(); return nil }),
		owner.Go(kindMail, supervise.Restart, mailq.Run)); err != nil {
		return nil, err
	}
	catalogue, err := plans.New(c.Plans)
	if err != nil {
		return nil, err
	}
	var country rules.CountryResolver
	if c.GeoIPDB != "" {
		g, err := rules.OpenGeoIP(c.GeoIPDB)
		if err != nil {
			return nil, fmt.Errorf("GeoIP database: %w", err)
		}
		closers = append(closers, g.Close)
		country = g
	}
	// The event log's writer and notifier (producers stop before them), then the audit
	// writer (the HTTP server and the sockets, which record, stop before it).
	bus, err := openEventLog(ctx, c, store, engine, owner, log)
	if err != nil {
		return nil, err
	}
	auditLog := audit.New(store, audit.Config{Retention: c.AuditRetention, Now: c.Clock, Goroutines: owner}, log)
	// The log writer also writes this node's notes (ws.connect), which skip the log.
	bus.Consume(events.ConsumerConfig{Name: "logs", Shared: true, Notes: true, Handle: logs.NewWriter(store, log).HandleBatch})
	blobStore, err := openBlobs(ctx, c, store)
	if err != nil {
		return nil, err
	}
	hasher := passwords.NewHasher(c.Argon2, 0)
	appsSvc := apps.New(store, catalogue, hasher, bus, c.Clock, log)
	filesSvc := files.New(store, blobStore, appsSvc, bus, c.MaxUploadBytes, c.Clock)
	backups, err := newBackups(c, store, blobStore, reg, log, c.Version)
	if err != nil {
		return nil, err
	}
	appsSvc.OnDelete(filesSvc.DeleteAppFiles)
	svc, err := accounts.New(accounts.Deps{Store: store, Hasher: hasher, Plans: catalogue, Mailer: mailq,
		Apps: appsSvc, Log: log}, accounts.Config{JWTSecret: secret, TokenTTL: c.JWTTTL, TokenLeeway: c.JWTLeeway, PublicURL: c.PublicURL, Now: c.Clock,
		Breach:  accounts.NewBreachChecker(accounts.BreachConfig{RangeURL: c.BreachRangeURL, FailClosed: c.BreachFailClosed}, log),
		Country: signInCountry(country)})
	if err != nil {
		return nil, err
	}
	svc.SendPlanChanges(bus, store)
	meter := usage.New(engine, store, catalogue, usage.Config{Now: c.Clock}, log)
	// The pending API-call counts are flushed once what counts them (the client API, the
	// sockets, the usage flusher Server starts) has stopped.
	if err := goroutines.OnStop(stepUsageLastFlush, meter.Close); err != nil {
		return nil, err
	}
	hooksClient, err := webhookClient(c)
	if err != nil {
		return nil, err
	}
	worker := integrations.NewWorker(store, integrations.WorkerConfig{Client: hooksClient, Now: c.Clock, Log: log, Bus: bus,
		Retention: c.WebhookRetention, MaxPerIntegration: c.WebhookMaxPerIntegration, Lease: c.WebhookLease})
	dispatcher := integrations.NewDispatcher(store, worker.Wake, log, c.Clock)
	bus.Consume(events.ConsumerConfig{Name: "webhooks", Shared: true, Handle: dispatcher.HandleBatch})
	appActors, err := startAppActors(ctx, store, engine, bus, svc, catalogue, actorkit.NewMetrics(reg), client.SnapshotDefaults{
		SessionTTL: c.ClientSessionTTL, EncryptFiles: c.ClientFileEncryption, CountryAvailable: country != nil || c.CountryHeader != ""}, c.Clock, log)
	if err != nil {
		return nil, err
	}
	// The app actors stop after the sockets and the client sessions, which call them.
	if err := goroutines.OnStop(stepAppActors, func(context.Context) error { appActors.stop(); return nil }); err != nil {
		appActors.stop()
		return nil, err
	}
	clientSvc := client.New(client.Deps{Store: store, Apps: appActors, Sessions: engine, Hasher: hasher, Bus: bus,
		Country: country, Quota: meter, Archive: store, Blobs: blobStore,
		Reset: client.ResetDeps{Tokens: engine, Mailer: mailq, PublicURL: c.PublicURL}, Now: c.Clock, Log: log})
	wsHooks := wshooks.New(store, appsSvc, appActors.PlanHooks, bus, c.Clock, log)
	queueDelay := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "keyward_ws_delivery_queue_seconds",
		Help:    "Time from a delivery's publication (a REST call, an event, a hook) to its frame in the socket queues of this node.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}})
	reg.MustRegister(queueDelay)
	rt := sockets.New(sockets.Deps{Engine: engine, Sessions: clientSvc, Hooks: wsHooks, Ban: appsSvc.BanAsOwner, Events: bus, Registry: appActors.dir, Now: c.Clock, Log: log, LeaseTTL: c.WSLeaseTTL,
		DeliveryDelay: func(d time.Duration) { queueDelay.Observe(d.Seconds()) }})
	// One consumer for the sockets and the client sessions, event by event: a ban reaches
	// the sockets' queue (banned) before the session kill it causes (force_logout).
	bus.Consume(events.ConsumerConfig{Name: "sockets", Shared: true, Types: socketEvents,
		Handle: func(_ context.Context, evs []events.Event) error {
			for _, e := range evs {
				rt.HandleEvent(e)
				clientSvc.HandleEvent(e)
			}
			return nil
		}})
	clientSvc.OnEnd(rt.SessionEnded)
	return &Core{Goroutines: goroutines, wrap: wrap, Audit: auditLog, Realtime: rt, WSHooks: wsHooks, Store: store, Engine: engine, Mail: mailq, Accounts: svc, Apps: appsSvc, Meter: meter,
		Client: clientSvc, AppActors: appActors.dir, Metrics: reg,
		Integrations: integrations.NewService(store, appsSvc, bus, integrations.Options{
			Validator: webhooks.Validator{AllowPrivate: c.WebhooksAllowPrivate}, Client: hooksClient, Now: c.Clock}),
		Webhooks:  worker,
		Variables: variables.New(store, appsSvc, catalogue, bus, c.Clock),
		Rules:     rules.NewService(store, appsSvc, bus, country != nil || c.CountryHeader != "", c.Clock),
		Logs:      logs.NewService(store, appsSvc, c.Clock), Analytics: analytics.New(store, appsSvc, c.Clock), Files: filesSvc, Bus: bus, Country: country,
		Backups:  backups,
		Commerce: commerce.New(commerce.Deps{Store: store, Plans: catalogue, Bus: bus, Mail: mailq, Sockets: rt, Now: c.Clock, Log: log}),
		Engines:  []any{"storage", storeDesc, "cluster", engineDesc, "mail", mailDesc}}, nil
}

// webhookClient is the delivery client of the configuration: the destination policy, and
// the extra roots of WebhooksCAFile.
func webhookClient(c Config) (*http.Client, error) {
	cfg := webhooks.Config{AllowPrivate: c.WebhooksAllowPrivate}
	if c.WebhooksCAFile != "" {
		pem, err := os.ReadFile(c.WebhooksCAFile)
		if err != nil {
			return nil, fmt.Errorf("webhooks CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("webhooks CA file %s: no PEM certificate in it", c.WebhooksCAFile)
		}
		cfg.RootCAs = pool
	}
	return webhooks.NewClient(cfg), nil
}

// New opens everything and binds the listeners, so that bad configuration, unreachable
// engines and a port in use all fail here with a clear message, before Run.
func New(ctx context.Context, c Config, log *slog.Logger) (*Server, error) {
	return newServer(ctx, c, log, nil)
}

func newServer(ctx context.Context, c Config, log *slog.Logger, wrap wrapFunc) (*Server, error) {
	core, err := openCore(ctx, c, log, wrap)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: c, log: log, core: core, serveErrCh: make(chan error, 2)}
	reg := core.Metrics
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "keyward_ws_sockets", Help: "WebSocket sockets held by this node.",
			ConstLabels: prometheus.Labels{"channel": "client"}},
			func() float64 { n, _ := core.Realtime.Held(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "keyward_ws_sockets", Help: "WebSocket sockets held by this node.",
			ConstLabels: prometheus.Labels{"channel": "dashboard"}},
			func() float64 { _, n := core.Realtime.Held(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "keyward_ws_bus_deliveries_total",
			Help: "Socket deliveries this node published to or received from the cluster bus.", ConstLabels: prometheus.Labels{"direction": "published"}},
			func() float64 { n, _ := core.Realtime.Traffic(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "keyward_ws_bus_deliveries_total",
			Help: "Socket deliveries this node published to or received from the cluster bus.", ConstLabels: prometheus.Labels{"direction": "received"}},
			func() float64 { _, n := core.Realtime.Traffic(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "keyward_ws_revalidation_closes_total",
			Help: "Client sockets closed because a check of their session failed (expired, banned, app paused...)."},
			func() float64 { return float64(core.Realtime.Stats().RevalidationClosed) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "keyward_ws_revalidation_failures_total",
			Help: "Client socket checks that could not be made (the cluster engine or storage did not answer)."},
			func() float64 { return float64(core.Realtime.Stats().RevalidationFailed) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "keyward_ws_internal_errors_total",
			Help: "Socket admissions, revalidations and dashboard actions that failed on a bug (closed or answered with INTERNAL, logged)."},
			func() float64 { return float64(core.Realtime.Stats().InternalErrors) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "keyward_ws_lease_renewal_errors_total",
			Help: "Failed presence lease renewals (one per app and attempt)."},
			func() float64 { return float64(core.Realtime.Stats().LeaseErrors) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "keyward_ws_bus_topics",
			Help: "Application bus topics this node is subscribed to (the apps it holds sockets of)."},
			func() float64 { return float64(core.Realtime.Topics()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "keyward_cluster_bus_dropped_total",
			Help: "Cluster bus messages this node dropped because its subscribers fell behind."},
			func() float64 {
				if d, ok := core.Engine.(interface{ BusDropped() uint64 }); ok {
					return float64(d.BusDropped())
				}
				return 0
			}),
		eventLogMetrics{core.Bus})
	// The owners' dashboard answers "/" and its assets, behind the API's middleware.
	pages, err := web.New(web.Options{MailToFiles: dashboardOutbox(c) != ""})
	if err != nil {
		_ = core.Close()
		return nil, err
	}
	handler, err := httpapi.New(httpapi.Deps{
		Accounts: core.Accounts, APIKeys: apikeys.New(core.Store, c.Clock), Audit: core.Audit, Apps: core.Apps, Variables: core.Variables, Rules: core.Rules, Logs: core.Logs, Analytics: core.Analytics, Files: core.Files,
		Integrations: core.Integrations, Client: core.Client, Realtime: core.Realtime, WSHooks: core.WSHooks, Backups: core.Backups, Limiter: core.Engine, Metrics: reg, Log: log,
		Commerce: core.Commerce,
		Portal:   core.Commerce.Portal(commerce.PortalDeps{Engine: core.Engine, Seats: core.Client, Files: core.Files, Resetter: core.Apps, Audit: core.Audit}),
		Ready:    []httpapi.Checker{{Name: "storage", Ping: core.Store.Ping}, {Name: "cluster", Ping: core.Engine.Ping}}, Pages: pages,
	}, httpapi.Config{CountryHeader: c.CountryHeader, TrustedProxies: c.TrustedProxies, MaxBodyBytes: c.MaxBodyBytes, MetricsOnMain: c.MetricsAddr == "",
		BodyTimeout: c.BodyTimeout, BodyMinRate: c.BodyMinRate, MailOutbox: dashboardOutbox(c)})
	if err != nil {
		_ = core.Close()
		return nil, err
	}
	// No TCP keep-alive on the API's connections: net/http's idle timeout ends an idle
	// HTTP connection and the pinger a silent socket, and the four setsockopt calls that
	// configuring it costs at each accept were 3 % of a socket's opening CPU.
	ln, err := (&net.ListenConfig{KeepAlive: -1}).Listen(context.Background(), "tcp", c.Addr)
	if err != nil {
		_ = core.Close()
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("cannot listen on %s: the port is in use by another program: set KEYWARD_ADDR (or --addr) to a free one, e.g. KEYWARD_ADDR=:8091: %w", c.Addr, err)
		}
		return nil, fmt.Errorf("cannot listen on %s: %w", c.Addr, err)
	}
	// The sockets' upgrades are served off net/http's connection machinery (the transport's
	// listener, on workers it owns); net/http's own answers to malformed requests become
	// error envelopes too.
	core.Goroutines.DeclareRecovered(kindHTTPUpgrades)
	s.upgrades = ws.NewListener(ln, ws.ListenerConfig{Handler: handler, Match: httpapi.SocketPath, HeadTimeout: apiHeadTimeout,
		Recovered: func(v any, stack []byte) { core.Goroutines.Recovered(kindHTTPUpgrades, v, stack) }, Log: log})
	s.apiLn = httpapi.EnvelopeListener(s.upgrades, log)
	// "OPTIONS *" goes to the router too (a 404 envelope), not to net/http's empty 200.
	s.api = &http.Server{Handler: handler, ReadHeaderTimeout: apiHeadTimeout, IdleTimeout: 120 * time.Second, DisableGeneralOptionsHandler: true,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	if c.MetricsAddr != "" {
		s.metricsLn, err = net.Listen("tcp", c.MetricsAddr)
		if err != nil {
			_ = s.apiLn.Close()
			_ = core.Close()
			return nil, fmt.Errorf("cannot listen on metrics address %s: %w", c.MetricsAddr, err)
		}
		s.metrics = &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 10 * time.Second}
	}
	if err := s.startGoroutines(ctx); err != nil {
		_ = s.apiLn.Close()
		if s.metricsLn != nil {
			_ = s.metricsLn.Close()
		}
		_ = core.Close()
		return nil, err
	}
	log.Info("keyward ready", append(core.Engines, "listen", s.apiLn.Addr().String(), "metrics", s.metricsAddr(),
		"dashboard", strings.TrimSuffix(c.PublicURL, "/")+"/")...)
	return s, nil
}

func (s *Server) metricsAddr() string {
	if s.metricsLn != nil {
		return s.metricsLn.Addr().String()
	}
	return "on the API address"
}

// Addr is the address the API listens on (useful with port 0).
func (s *Server) Addr() string { return s.apiLn.Addr().String() }

// Accounts is the account service, for tests and admin tooling.
func (s *Server) Accounts() *accounts.Service { return s.core.Accounts }

// Core answers the engines and services, for tools that prepare data in-process (the
// client load tool).
func (s *Server) Core() *Core { return s.core }

// Run serves until ctx is cancelled or a listener fails, then shuts down gracefully.
func (s *Server) Run(ctx context.Context) error {
	var runErr error
	err := s.listen(kindHTTPAPI, "API", s.api, s.apiLn)
	if err == nil && s.metrics != nil {
		err = s.listen(kindHTTPMetrics, "metrics", s.metrics, s.metricsLn)
	}
	if err != nil {
		runErr = fmt.Errorf("serving: %w", err)
	} else {
		select {
		case <-ctx.Done():
			s.log.Info("shutting down", "timeout", s.cfg.ShutdownTimeout)
		case err := <-s.serveErrCh:
			runErr = fmt.Errorf("serving: %w", err)
		}
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	return errors.Join(runErr, s.Shutdown(shutdownCtx))
}

// Shutdown stops the node in order: HTTP (in-flight requests finish), then the API-call
// meter (a last flush), mail, the cluster engine and storage. It is idempotent.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closeOnce.Do(func() {
		var errs []error
		if err := s.api.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
		// The upgrades under way off net/http end too (Shutdown closed their listener).
		_ = s.upgrades.Close()
		if err := s.upgrades.Wait(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
		if s.metrics != nil {
			if err := s.metrics.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("metrics shutdown: %w", err))
			}
		}
		if err := s.core.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing engines: %w", err))
		}
		s.closeErr = errors.Join(errs...)
		s.log.Info("stopped")
	})
	return s.closeErr
}

// signInCountry names the country of an owner's sign-in address for the new sign-in mail;
// nil without a GeoIP database.
func signInCountry(r rules.CountryResolver) func(ip string) string {
	if r == nil {
		return nil
	}
	return func(ip string) string {
		addr, err := netip.ParseAddr(ip)
		if err != nil {
			return ""
		}
		cc, _ := r.Country(addr)
		return cc
	}
}
