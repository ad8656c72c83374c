package server

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/keyward/keyward/cluster/redis"
	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/core/integrations"
	"github.com/keyward/keyward/core/passwords"
	"github.com/keyward/keyward/core/plans"
	"github.com/keyward/keyward/core/realtime"
	"github.com/keyward/keyward/mail"
)

// Config is the whole configuration of a node.
type Config struct {
	// Version is the binary's version (cmd/keyward sets it; backups' manifests name it).
	Version     string
	Addr        string
	MetricsAddr string
	DataDir     string
	PublicURL   string

	MongoURI      string
	MongoDatabase string
	// MongoMonitor, when set, sees every MongoDB command of the store; only the load
	// tool sets it (it counts storage reads).
	MongoMonitor *event.CommandMonitor
	// MongoClient, set by tests only, is a connected client (storagemongo.Connect) to
	// MongoURI's server that the store uses instead of connecting, and leaves connected:
	// the http tests start hundreds of nodes in one process, and each store's connecting
	// warms 64 connections.
	MongoClient *mongo.Client
	RedisURL    string
	RedisPrefix string
	// RedisCommandTimeout bounds one Redis command as a whole (cluster/redis
	// Config.CommandTimeout): short, so that a frozen Redis turns into "try again" within
	// about a second instead of hanging requests behind it.
	RedisCommandTimeout time.Duration

	JWTSecret string
	JWTTTL    time.Duration
	// JWTLeeway is how long after expiry a dashboard JWT is still accepted.
	JWTLeeway time.Duration
	// SecretsKey encrypts at rest the secrets the server reads back (TOTP secrets,
	// integration signing secrets); generated into the data dir when empty, required in a
	// cluster (every node must read what another wrote).
	SecretsKey string

	// BreachRangeURL is the k-anonymity range endpoint new owner passwords are checked
	// against (empty: no check); BreachFailClosed refuses a password when it cannot answer.
	BreachRangeURL   string
	BreachFailClosed bool

	MailOutbox string
	MailFrom   string
	SMTP       mail.SMTPConfig

	TrustedProxies  []string
	MaxBodyBytes    int64
	ShutdownTimeout time.Duration
	// BodyTimeout and BodyMinRate bound how long a request body may take to arrive: the
	// timeout, plus one second per BodyMinRate bytes received.
	BodyTimeout time.Duration
	BodyMinRate int64

	LogLevel  slog.Level
	LogFormat string

	Argon2 passwords.Params
	Plans  plans.Config

	GeoIPDB       string
	CountryHeader string
	LogMaxAge     time.Duration
	// AuditRetention is how long audit entries are kept.
	AuditRetention time.Duration
	// EventRetention is how long the event log keeps events every consumer handled;
	// EventMaxAge bounds it whatever was handled (events.Config KeepFor, MaxAge).
	EventRetention time.Duration
	EventMaxAge    time.Duration
	// WebhookRetention is how long finished webhook deliveries (the history) and their
	// attempts are kept (integrations.WorkerConfig Retention).
	WebhookRetention time.Duration
	// WebhookMaxPerIntegration bounds the finished webhook deliveries (its newest by last
	// update) and the attempts each integration keeps within WebhookRetention
	// (integrations.WorkerConfig MaxPerIntegration).
	WebhookMaxPerIntegration int
	// WebhookLease is how long a node holds the webhook deliveries it claimed: those of a
	// node that died are sent again when it ends (integrations.WorkerConfig Lease).
	WebhookLease   time.Duration
	LogMaxPerApp   int
	MaxUploadBytes int64

	// Backup says where and how often the node backs itself up (backup.go).
	Backup BackupConfig

	// ClientSessionTTL is the idle timeout of client sessions; ClientFileEncryption says
	// whether client file downloads are encrypted (CLIENT-SDKS.md §5).
	ClientSessionTTL     time.Duration
	ClientFileEncryption bool
	// WSLeaseTTL is how long the sockets of a node that died still count as online.
	WSLeaseTTL time.Duration

	// WebhooksAllowPrivate lets integrations target private, loopback and other non-public
	// addresses (tests, private networks); off by default.
	WebhooksAllowPrivate bool
	// WebhooksCAFile names a PEM file of extra root certificates trusted for webhook
	// receivers (a private CA), added to the system roots.
	WebhooksCAFile string

	// Clock is the time source of the services; time.Now when nil. Only tests set it.
	Clock func() time.Time
}

// option is one setting: its flag, its environment variable, its default and its help.
type option struct {
	flag, env, def, usage string
	value                 string
}

// options lists every setting in the order `keyward serve --help` shows them.
func options() []*option {
	return append([]*option{
		{flag: "addr", env: "KEYWARD_ADDR", def: ":8080", usage: "listen address of the API"},
		{flag: "metrics-addr", env: "KEYWARD_METRICS_ADDR", usage: "separate listen address for /metrics (default: served on the API address)"},
		{flag: "data-dir", env: "KEYWARD_DATA_DIR", def: "./data", usage: "folder for the SQLite database, the generated JWT secret and the mail outbox"},
		{flag: "public-url", env: "KEYWARD_PUBLIC_URL", usage: "base URL owners reach this server at, used in mailed links (default: http://localhost:PORT, the port of --addr)"},
		{flag: "mongo-uri", env: "KEYWARD_MONGO_URI", usage: "MongoDB URI; when set, MongoDB replaces the embedded SQLite store"},
		{flag: "mongo-database", env: "KEYWARD_MONGO_DATABASE", usage: "MongoDB database name (default: the one in the URI, else keyward)"},
		{flag: "redis-url", env: "KEYWARD_REDIS_URL", usage: "Redis URL: one server (redis://[:password@]host:port/db) a Sentinel group (redis://sentinel1:26379/db?master_name=NAME&addr=sentinel2:26379&addr=sentinel3:26379[&password=...]) or a Redis Cluster (redis://[:password@]node1:6379?addr=node2:6379&addr=node3:6379&cluster=true); when set, Redis replaces the single-node memory cluster engine"},
		{flag: "redis-prefix", env: "KEYWARD_REDIS_PREFIX", def: "kw:", usage: "prefix of every Redis key, so several deployments can share one Redis"},
		{flag: "redis-command-timeout", env: "KEYWARD_REDIS_COMMAND_TIMEOUT", def: "400ms", usage: "bound of one Redis command as a whole (waiting for a connection, a retry): past it a request answers 503 \"try again\" rather than hang behind a frozen Redis"},
		{flag: "jwt-secret", env: "KEYWARD_JWT_SECRET", usage: "secret (32+ bytes) signing dashboard JWTs; generated once into the data dir when unset; required with --redis-url (all nodes must share it)"},
		{flag: "secrets-key", env: "KEYWARD_SECRETS_KEY", usage: "key (32+ bytes) encrypting stored TOTP and integration signing secrets; generated once into the data dir (secrets.key) when unset; required with --redis-url (all nodes must share it); keep it with your backups"},
		{flag: "jwt-ttl", env: "KEYWARD_JWT_TTL", def: "24h", usage: "lifetime of dashboard JWTs"},
		{flag: "jwt-leeway", env: "KEYWARD_JWT_LEEWAY", def: "5s", usage: "how long after its expiry a dashboard JWT is still accepted, for clock differences between the nodes of a cluster (0s for none, at most 1m)"},
		{flag: "breach-range-url", env: "KEYWARD_BREACH_RANGE_URL", usage: "k-anonymity range URL owner passwords are checked against at registration, change and reset (only the first 5 hex digits of the SHA-1 are sent; e.g. https://api.pwnedpasswords.com/range/); unset: no check"},
		{flag: "breach-fail-closed", env: "KEYWARD_BREACH_FAIL_CLOSED", def: "false", usage: "refuse a new owner password when the breach range service does not answer within 2s (default: accept it and log)"},
		{flag: "mail-outbox", env: "KEYWARD_MAIL_OUTBOX", usage: "folder where mails are written as .eml files when no SMTP host is set (default <data dir>/outbox)"},
		{flag: "mail-from", env: "KEYWARD_MAIL_FROM", def: "Keyward <no-reply@localhost>", usage: "sender address of mails"},
		{flag: "smtp-host", env: "KEYWARD_SMTP_HOST", usage: "SMTP server host; when set, mails are delivered through it"},
		{flag: "smtp-port", env: "KEYWARD_SMTP_PORT", usage: "SMTP port (default 587, or 465 with --smtp-tls=tls)"},
		{flag: "smtp-username", env: "KEYWARD_SMTP_USERNAME", usage: "SMTP user name (enables authentication)"},
		{flag: "smtp-password", env: "KEYWARD_SMTP_PASSWORD", usage: "SMTP password"},
		{flag: "smtp-tls", env: "KEYWARD_SMTP_TLS", def: "starttls", usage: "SMTP TLS mode: starttls, tls, opportunistic or none"},
		{flag: "trusted-proxies", env: "KEYWARD_TRUSTED_PROXIES", usage: "comma-separated CIDRs whose X-Forwarded-For header is believed"},
		{flag: "max-body-bytes", env: "KEYWARD_MAX_BODY_BYTES", def: "1048576", usage: "largest JSON request body accepted"},
		{flag: "body-timeout", env: "KEYWARD_BODY_TIMEOUT", def: "30s", usage: "how long a request body may take to arrive (extended while it keeps arriving at --body-min-rate); a slower body is refused with 408 and its connection closed"},
		{flag: "body-min-rate", env: "KEYWARD_BODY_MIN_RATE", def: "16384", usage: "bytes per second a request body (a file upload) must keep arriving at once past --body-timeout"},
		{flag: "shutdown-timeout", env: "KEYWARD_SHUTDOWN_TIMEOUT", def: "30s", usage: "how long in-flight requests may take to finish on shutdown"},
		{flag: "log-level", env: "KEYWARD_LOG_LEVEL", def: "info", usage: "debug, info, warn or error"},
		{flag: "log-format", env: "KEYWARD_LOG_FORMAT", def: "text", usage: "text or json"},
		{flag: "geoip-db", env: "KEYWARD_GEOIP_DB", usage: "MaxMind-format GeoIP database (GeoLite2-Country or -City) for the country of client addresses"},
		{flag: "country-header", env: "KEYWARD_COUNTRY_HEADER", usage: "header a trusted proxy sets to the client's country, e.g. CF-IPCountry (used when no GeoIP database is set)"},
		{flag: "log-max-age", env: "KEYWARD_LOG_MAX_AGE", def: "2160h", usage: "application log entries older than this are removed"},
		{flag: "audit-retention", env: "KEYWARD_AUDIT_RETENTION", def: "2160h", usage: "audit log entries older than this are removed"},
		{flag: "event-retention", env: "KEYWARD_EVENT_RETENTION", def: "1h", usage: "events every consumer (log, webhooks, sockets) handled are kept this long in the event log"},
		{flag: "webhook-lease", env: "KEYWARD_WEBHOOK_LEASE", def: "1m", usage: "how long a node holds the webhook deliveries it claimed: those of a node that died are sent again when it ends (at least 15s: one attempt and its record)"},
		{flag: "webhook-retention", env: "KEYWARD_WEBHOOK_RETENTION", def: "168h", usage: "finished webhook deliveries and their attempts older than this are removed (hourly)"},
		{flag: "webhook-max-per-integration", env: "KEYWARD_WEBHOOK_MAX_PER_INTEGRATION", def: "10000", usage: "finished webhook deliveries, and delivery attempts, kept per integration within the retention (the oldest go first, hourly, in batches; pending deliveries are never removed)"},
		{flag: "event-max-age", env: "KEYWARD_EVENT_MAX_AGE", def: "168h", usage: "events older than this leave the event log even if a consumer has not handled them"},
		{flag: "log-max-per-app", env: "KEYWARD_LOG_MAX_PER_APP", def: "1000000", usage: "application log entries kept per application (the oldest go first)"},
		{flag: "max-upload-bytes", env: "KEYWARD_MAX_UPLOAD_BYTES", def: "104857600", usage: "largest file upload accepted"},
		{flag: "client-session-ttl", env: "KEYWARD_CLIENT_SESSION_TTL", def: "30m", usage: "idle timeout of client sessions: a session without any call for this long expires"},
		{flag: "ws-lease-ttl", env: "KEYWARD_WS_LEASE_TTL", def: "10s", usage: "how long the WebSocket sockets of a node that died still count as online (presence leases, renewed every third of it for all the sockets of an app in one call; at least 3s)"},
		{flag: "client-file-encryption", env: "KEYWARD_CLIENT_FILE_ENCRYPTION", def: "true", usage: "encrypt client file downloads as the official SDKs expect (plain bytes still go to clients that cannot decrypt)"},
		{flag: "webhooks-allow-private", env: "KEYWARD_WEBHOOKS_ALLOW_PRIVATE", def: "false", usage: "let webhook integrations reach private, loopback and link-local addresses (tests and private networks only)"},
		{flag: "webhooks-ca-file", env: "KEYWARD_WEBHOOKS_CA_FILE", usage: "PEM file of extra root certificates trusted for webhook receivers (a private CA)"},
		{flag: "argon2-memory-kib", env: "KEYWARD_ARGON2_MEMORY_KIB", def: strconv.Itoa(int(passwords.OWASP.MemoryKiB)), usage: "argon2id memory cost of password hashes"},
		{flag: "argon2-iterations", env: "KEYWARD_ARGON2_ITERATIONS", def: strconv.Itoa(int(passwords.OWASP.Iterations)), usage: "argon2id time cost of password hashes"},
		{flag: "plan-pro-max-apps", env: "KEYWARD_PLAN_PRO_MAX_APPS", def: strconv.Itoa(plans.DefaultProMaxApps), usage: "applications per account on the pro plan"},
		{flag: "plan-pro-max-users", env: "KEYWARD_PLAN_PRO_MAX_USERS", def: strconv.Itoa(plans.DefaultProMaxUsersPerApp), usage: "users per application on the pro plan"},
		{flag: "plan-pro-max-api-calls", env: "KEYWARD_PLAN_PRO_MAX_API_CALLS", def: strconv.Itoa(plans.DefaultProMaxAPICallsMonth), usage: "client API calls per month on the pro plan"},
		{flag: "plan-business-max-apps", env: "KEYWARD_PLAN_BUSINESS_MAX_APPS", def: strconv.Itoa(plans.DefaultBusinessMaxApps), usage: "applications per account on the business plan"},
		{flag: "plan-business-max-users", env: "KEYWARD_PLAN_BUSINESS_MAX_USERS", def: strconv.Itoa(plans.DefaultBusinessMaxUsersPerApp), usage: "users per application on the business plan"},
		{flag: "plan-business-max-api-calls", env: "KEYWARD_PLAN_BUSINESS_MAX_API_CALLS", def: strconv.Itoa(plans.DefaultBusinessMaxAPICallsMonth), usage: "client API calls per month on the business plan"},
	}, backupOptions()...)
}

// LoadConfig reads settings from args (flags win), then the environment, then defaults.
// It writes usage to out for --help and answers flag.ErrHelp then.
func LoadConfig(name string, args []string, getenv func(string) string, out io.Writer) (Config, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	opts := options()
	for _, o := range opts {
		o.value = o.def
		if v := getenv(o.env); v != "" {
			o.value = v
		}
		fs.StringVar(&o.value, o.flag, o.value, o.usage)
	}
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: %s [flags]\n\nEvery flag can also be set by the environment variable shown in brackets;\na flag wins over its variable.\n\nFlags:\n", name)
		printOptions(out, opts)
	}
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	v := map[string]string{}
	for _, o := range opts {
		v[o.flag] = strings.TrimSpace(o.value)
	}
	return parse(v)
}

// printOptions lists the settings in their order with their built-in defaults. It is not
// flag.PrintDefaults: that shows the value a flag starts with, which is the environment's
// when a variable is set (a secret such as KEYWARD_JWT_SECRET would be printed), and it
// would repeat the default already given here.
func printOptions(out io.Writer, opts []*option) {
	for _, o := range opts {
		def := ""
		if o.def != "" {
			def = fmt.Sprintf(" (default %q)", o.def)
		}
		fmt.Fprintf(out, "  --%s value\n    \t%s [$%s]%s\n", o.flag, o.usage, o.env, def)
	}
}

func parse(v map[string]string) (Config, error) {
	var errs []error
	dur := func(name string) time.Duration {
		d, err := time.ParseDuration(v[name])
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("--%s: %q is not a positive duration", name, v[name]))
		}
		return d
	}
	num := func(name string, min int64) int64 {
		if v[name] == "" {
			return 0
		}
		n, err := strconv.ParseInt(v[name], 10, 64)
		if err != nil || n < min {
			errs = append(errs, fmt.Errorf("--%s: %q is not an integer >= %d", name, v[name], min))
		}
		return n
	}
	c := Config{
		Addr: v["addr"], MetricsAddr: v["metrics-addr"], DataDir: v["data-dir"], PublicURL: v["public-url"],
		MongoURI: v["mongo-uri"], MongoDatabase: v["mongo-database"], RedisURL: v["redis-url"], RedisPrefix: v["redis-prefix"],
		RedisCommandTimeout: dur("redis-command-timeout"), JWTSecret: v["jwt-secret"], JWTTTL: dur("jwt-ttl"), SecretsKey: v["secrets-key"],
		MailOutbox: v["mail-outbox"], MailFrom: v["mail-from"],
		SMTP: mail.SMTPConfig{Host: v["smtp-host"], Port: int(num("smtp-port", 1)), Username: v["smtp-username"],
			Password: v["smtp-password"], TLS: v["smtp-tls"]},
		MaxBodyBytes: num("max-body-bytes", 1024), ShutdownTimeout: dur("shutdown-timeout"),
		BodyTimeout: dur("body-timeout"), BodyMinRate: num("body-min-rate", 1),
		LogFormat: v["log-format"],
		GeoIPDB:   v["geoip-db"], CountryHeader: v["country-header"], LogMaxAge: dur("log-max-age"), AuditRetention: dur("audit-retention"),
		EventRetention: dur("event-retention"), EventMaxAge: dur("event-max-age"), WebhookRetention: dur("webhook-retention"),
		WebhookMaxPerIntegration: int(num("webhook-max-per-integration", 1)),
		LogMaxPerApp:             int(num("log-max-per-app", 1000)), MaxUploadBytes: num("max-upload-bytes", 1),
		WebhooksCAFile: v["webhooks-ca-file"],
		Argon2: passwords.Params{MemoryKiB: uint32(num("argon2-memory-kib", 64)), Iterations: uint32(num("argon2-iterations", 1)),
			Parallelism: 1},
		Plans: plans.Config{
			ProMaxApps: int(num("plan-pro-max-apps", 1)), ProMaxUsersPerApp: int(num("plan-pro-max-users", 1)),
			ProMaxAPICallsMonth:      int(num("plan-pro-max-api-calls", 1)),
			BusinessMaxApps:          int(num("plan-business-max-apps", 1)),
			BusinessMaxUsersPerApp:   int(num("plan-business-max-users", 1)),
			BusinessMaxAPICallsMonth: int(num("plan-business-max-api-calls", 1)),
		},
	}
	if d, err := time.ParseDuration(v["jwt-leeway"]); err != nil || d < 0 || d > accounts.MaxTokenLeeway {
		errs = append(errs, fmt.Errorf("--jwt-leeway: %q is not a duration from 0s to %s", v["jwt-leeway"], accounts.MaxTokenLeeway))
	} else {
		c.JWTLeeway = d
	}
	c.Backup, errs = parseBackup(v, errs)
	c.ClientSessionTTL = dur("client-session-ttl")
	c.WSLeaseTTL = dur("ws-lease-ttl")
	c.WebhookLease = dur("webhook-lease")
	if b, err := strconv.ParseBool(v["client-file-encryption"]); err != nil {
		errs = append(errs, fmt.Errorf("--client-file-encryption: %q is not true or false", v["client-file-encryption"]))
	} else {
		c.ClientFileEncryption = b
	}
	c.BreachRangeURL = v["breach-range-url"]
	if b, err := strconv.ParseBool(v["breach-fail-closed"]); err != nil {
		errs = append(errs, fmt.Errorf("--breach-fail-closed: %q is not true or false", v["breach-fail-closed"]))
	} else {
		c.BreachFailClosed = b
	}
	if b, err := strconv.ParseBool(v["webhooks-allow-private"]); err != nil {
		errs = append(errs, fmt.Errorf("--webhooks-allow-private: %q is not true or false", v["webhooks-allow-private"]))
	} else {
		c.WebhooksAllowPrivate = b
	}
	if c.PublicURL == "" {
		c.PublicURL = publicURLOf(c.Addr)
	}
	if c.Addr == "" {
		errs = append(errs, errors.New("--addr must not be empty"))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("--data-dir must not be empty"))
	}
	if c.WSLeaseTTL > 0 && c.WSLeaseTTL < realtime.MinLeaseTTL {
		errs = append(errs, fmt.Errorf("--ws-lease-ttl must be at least %s", realtime.MinLeaseTTL))
	}
	if c.WebhookLease > 0 && c.WebhookLease < integrations.MinLease {
		errs = append(errs, fmt.Errorf("--webhook-lease must be at least %s", integrations.MinLease))
	}
	if c.MailOutbox == "" {
		c.MailOutbox = filepath.Join(c.DataDir, "outbox")
	}
	if err := c.LogLevel.UnmarshalText([]byte(v["log-level"])); err != nil {
		errs = append(errs, fmt.Errorf("--log-level: %q is not debug, info, warn or error", v["log-level"]))
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("--log-format: %q is not text or json", c.LogFormat))
	}
	for _, p := range strings.Split(v["trusted-proxies"], ",") {
		if p = strings.TrimSpace(p); p != "" {
			c.TrustedProxies = append(c.TrustedProxies, p)
		}
	}
	if c.JWTSecret != "" && len(c.JWTSecret) < 32 {
		errs = append(errs, errors.New("--jwt-secret must be at least 32 bytes"))
	}
	if c.RedisURL != "" {
		if _, err := redis.ParseURL(c.RedisURL); err != nil {
			errs = append(errs, fmt.Errorf("--redis-url: %w", err))
		}
	}
	if c.RedisURL != "" && c.JWTSecret == "" {
		errs = append(errs, errors.New("--jwt-secret (KEYWARD_JWT_SECRET) is required with --redis-url: every node of a cluster must sign with the same secret"))
	}
	if c.SecretsKey != "" && len(c.SecretsKey) < 32 {
		errs = append(errs, errors.New("--secrets-key must be at least 32 bytes"))
	}
	if c.RedisURL != "" && c.SecretsKey == "" {
		errs = append(errs, errors.New("--secrets-key (KEYWARD_SECRETS_KEY) is required with --redis-url: every node of a cluster must read the secrets the others encrypted"))
	}
	if c.SMTP.Host != "" {
		if _, err := mail.NewSMTP(c.SMTP); err != nil {
			errs = append(errs, err)
		}
	}
	return c, errors.Join(errs...)
}

// NewLogger builds the process logger from the configuration.
func NewLogger(c Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.LogLevel}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// publicURLOf answers the URL mailed links use when --public-url is unset: this server's
// own listen address, so a server on :8091 mails links to :8091 (a wildcard or empty host
// is localhost).
func publicURLOf(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://localhost:8080"
	}
	switch host {
	case "", "0.0.0.0", "::":
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}
