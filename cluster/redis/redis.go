package redis

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/cluster/internal/fanout"
	"github.com/keyward/keyward/internal/supervise"
)

// Defaults for Config. They are short on purpose: Redis answers in well under a
// millisecond on a healthy network, and a request that cannot reach it should fail with 503
// within about a second rather than hang behind it. The read and write timeouts bound one
// attempt of a command on a frozen Redis (it accepts connections and never answers); but
// a command also waits for a pooled connection (during a burst every one is stuck on the
// frozen server) and is retried once, so DefaultCommandTimeout bounds a command as a
// whole: the wait for a connection, the attempts and a new connection's handshake. A
// request may meet Redis twice before it answers (the failed call, then the answer's
// signing, which looks up the session's app), so one command gets well under half the
// second. A caller's own earlier deadline wins.
const (
	DefaultPrefix         = "kw:"
	DefaultDialTimeout    = time.Second
	DefaultReadTimeout    = 300 * time.Millisecond
	DefaultWriteTimeout   = 300 * time.Millisecond
	DefaultPoolTimeout    = time.Second
	DefaultCommandTimeout = 400 * time.Millisecond
)

// Config configures New. Only URL is required.
type Config struct {
	// URL names one Redis server, a Sentinel group or a Redis Cluster (see ParseURL), with
	// go-redis's query options (dial_timeout, pool_size, ...).
	URL string
	// Prefix starts every key, so several deployments or tests can share one Redis;
	// DefaultPrefix when empty.
	Prefix string
	// Timeouts; zero means: the URL's value if it sets one, else the Default above.
	DialTimeout  time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// PoolTimeout bounds the wait for a free connection when all are busy.
	PoolTimeout time.Duration
	// CommandTimeout bounds one command or pipeline as a whole (the wait for a connection,
	// the retry, redirects); DefaultCommandTimeout when zero.
	CommandTimeout time.Duration
	// Goroutines owns the bus's receive loops (kind cluster-bus-receive, one per subscriber
	// connection) and its delivery goroutine (fanout.Kind): the node's supervisor, which
	// recovers, counts and restarts them. nil: a supervisor of the engine's own.
	Goroutines supervise.Starter
}

// Engine is the Redis cluster engine. Its methods are safe for concurrent use.
type Engine struct {
	// client is a *goredis.Client for one server or a Sentinel group (the failover client),
	// a *goredis.ClusterClient for a Redis Cluster.
	client  goredis.UniversalClient
	cluster bool // client is a ClusterClient
	prefix  string
	addr    string // Target.String() for error messages; the URL may hold a password

	// busWait bounds how long Subscribe waits for Redis to confirm a subscription.
	busWait time.Duration
	// The bus (bus.go): started by the first Subscribe, stopped by Close. sharded: a Redis
	// Cluster whose servers have sharded Pub/Sub (Redis 7).
	sharded bool
	busMu   sync.Mutex
	closed  bool
	fan     *fanout.Fanout   // nil until the first Subscribe
	buses   map[int]*busConn // bucket → its subscriber connection
	busWG   sync.WaitGroup   // the receive loops
	// goroutines starts the bus's loops; own is the supervisor made when Config has none.
	goroutines supervise.Starter
	own        *supervise.Supervisor

	waitMu  sync.Mutex
	waiters map[string]*waiter // PING payload → Subscribe waiting for its PONG

	closeOnce sync.Once
	closeErr  error
}

var _ cluster.Engine = (*Engine)(nil)

//go:embed allow.lua
var allowLua string

// allowScript runs with EVALSHA and falls back to EVAL when Redis does not know it yet (first
// use, or after a Redis restart emptied its script cache).
var allowScript = goredis.NewScript(allowLua)

// Target is what a Redis URL names: one server, the master of a Sentinel group, or a Redis
// Cluster. Exactly one field is set.
type Target struct {
	// Server is the single server (Options from go-redis's ParseURL); nil for a group.
	Server *goredis.Options
	// Sentinel is the group (FailoverOptions from go-redis's ParseFailoverURL); nil for a
	// single server.
	Sentinel *goredis.FailoverOptions
	// Cluster is a Redis Cluster (ClusterOptions from go-redis's ParseClusterURL); nil
	// otherwise.
	Cluster *goredis.ClusterOptions
}

// clusterOption marks a Redis Cluster URL. It is ours, not go-redis's (ParseClusterURL
// rejects options it does not know), and is removed before the URL is handed over.
const clusterOption = "cluster"

// ParseURL reads the three forms KEYWARD_REDIS_URL takes:
//
//   - one server: redis://[user:password@]host:port/db (rediss:// for TLS);
//   - a Sentinel group, told apart by its master_name option:
//     redis://[sentinel-user:sentinel-password@]sentinel1:26379/db?master_name=NAME&addr=sentinel2:26379&addr=sentinel3:26379
//     The host part and every addr= are sentinels (any that answers will do); the
//     credentials before @ are the sentinels' own, and the master's and replicas' go in
//     the username= and password= options.
//   - a Redis Cluster, told apart by its cluster=true option:
//     redis://[user:password@]node1:6379?addr=node2:6379&addr=node3:6379&cluster=true
//     The host part and every addr= are seed nodes (go-redis's ParseClusterURL form): any
//     that answers will do, the client learns the others and the slot map from it. A
//     cluster has only database 0, so the path must be empty or /0.
//
// All accept go-redis's query options (dial_timeout, pool_size, ...). Errors never quote a
// password.
func ParseURL(rawURL string) (Target, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return Target{}, fmt.Errorf("cluster/redis: invalid URL (want redis://[user:password@]host:port/db): not a URL")
	}
	q := u.Query()
	if q.Has(clusterOption) {
		on, err := strconv.ParseBool(q.Get(clusterOption))
		if err != nil {
			return Target{}, fmt.Errorf("cluster/redis: invalid Redis Cluster URL: option cluster=%q is not true or false", q.Get(clusterOption))
		}
		if on {
			return parseClusterURL(rawURL, u)
		}
		q.Del(clusterOption)
		u.RawQuery = q.Encode()
		rawURL = u.String()
	}
	if q.Get("master_name") != "" {
		fo, err := goredis.ParseFailoverURL(rawURL)
		if err != nil {
			return Target{}, fmt.Errorf("cluster/redis: invalid Sentinel URL (want redis://sentinel:26379/db?master_name=NAME&addr=sentinel2:26379...): %s",
				redact(rawURL, err))
		}
		return Target{Sentinel: fo}, nil
	}
	opts, err := goredis.ParseURL(rawURL)
	if err != nil {
		return Target{}, fmt.Errorf("cluster/redis: invalid URL (want redis://[user:password@]host:port/db): %s",
			redact(rawURL, err))
	}
	return Target{Server: opts}, nil
}

// parseClusterURL reads a Redis Cluster URL (ParseURL) whose cluster option is true.
func parseClusterURL(rawURL string, u *url.URL) (Target, error) {
	const want = "want redis://node1:6379?addr=node2:6379&addr=node3:6379&cluster=true"
	q := u.Query()
	if q.Has("master_name") {
		return Target{}, fmt.Errorf("cluster/redis: invalid Redis Cluster URL (%s): master_name names a Sentinel group, not a cluster", want)
	}
	if p := strings.TrimPrefix(u.Path, "/"); p != "" && p != "0" {
		return Target{}, fmt.Errorf("cluster/redis: invalid Redis Cluster URL (%s): database %q, but a cluster has only database 0", want, p)
	}
	q.Del(clusterOption)
	bare := *u
	bare.Path, bare.RawPath = "", ""
	bare.RawQuery = q.Encode()
	co, err := goredis.ParseClusterURL(bare.String())
	if err != nil {
		return Target{}, fmt.Errorf("cluster/redis: invalid Redis Cluster URL (%s): %s", want, redact(rawURL, err))
	}
	return Target{Cluster: co}, nil
}

// String names the target for messages, without credentials.
func (t Target) String() string {
	if t.Cluster != nil {
		return "Redis Cluster with seeds " + strings.Join(t.Cluster.Addrs, ",")
	}
	if t.Sentinel != nil {
		return fmt.Sprintf("master %q of sentinels %s", t.Sentinel.MasterName, strings.Join(t.Sentinel.SentinelAddrs, ","))
	}
	if t.Server != nil {
		return t.Server.Addr
	}
	return "no Redis"
}

// New connects to Redis and pings it, so a wrong URL or an unreachable server fails start
// with a clear error rather than the first request. An unreachable server's error wraps
// cluster.ErrUnavailable. A Sentinel URL gives a go-redis failover client: it asks the
// sentinels for the master, and moves to the new master when they promote a replica.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	if cfg.URL == "" {
		return nil, errors.New("cluster/redis: no URL configured")
	}
	target, err := ParseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	var client goredis.UniversalClient
	var t timeouts
	if co := target.Cluster; co != nil {
		t = cfg.timeouts(co.DialTimeout, co.ReadTimeout, co.WriteTimeout, co.PoolTimeout)
		co.DialTimeout, co.ReadTimeout, co.WriteTimeout, co.PoolTimeout = t.dial, t.read, t.write, t.pool
		// The same bounds as for one server (below, with the reasons). A command the
		// cluster redirects (MOVED, ASK, a master being replaced) is retried by the
		// client up to MaxRedirects (3) times, each within these timeouts.
		co.ContextTimeoutEnabled = true
		co.MaxRetries = 1
		co.DialerRetries = 2
		co.DialerRetryTimeout = 50 * time.Millisecond
		co.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		client = goredis.NewClusterClient(co)
	} else if fo := target.Sentinel; fo != nil {
		t = cfg.timeouts(fo.DialTimeout, fo.ReadTimeout, fo.WriteTimeout, fo.PoolTimeout)
		fo.DialTimeout, fo.ReadTimeout, fo.WriteTimeout, fo.PoolTimeout = t.dial, t.read, t.write, t.pool
		// The same bounds as for one server (below, with the reasons): while the
		// sentinels have not yet promoted a replica, a call fails within about a second
		// instead of waiting for the failover.
		fo.ContextTimeoutEnabled = true
		fo.MaxRetries = 1
		fo.DialerRetries = 2
		fo.DialerRetryTimeout = 50 * time.Millisecond
		// (The failover client turns maintenance notifications off itself.)
		client = goredis.NewFailoverClient(fo)
	} else {
		opts := target.Server
		t = cfg.timeouts(opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout, opts.PoolTimeout)
		opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout, opts.PoolTimeout = t.dial, t.read, t.write, t.pool
		// A caller's context deadline also bounds the socket, so a request budget shorter
		// than the timeouts above is honoured.
		opts.ContextTimeoutEnabled = true
		// One retry covers a pooled connection that Redis closed while idle (restart,
		// timeout); more would multiply the time a request waits on a Redis that is really
		// down.
		opts.MaxRetries = 1
		// Dialing a refused port fails at once; two attempts 50ms apart are enough for a
		// Redis that is restarting, and keep an outage answer within a few dial timeouts.
		opts.DialerRetries = 2
		opts.DialerRetryTimeout = 50 * time.Millisecond
		// Maintenance notifications are a Redis Enterprise/Cloud feature; the handshake
		// costs a round trip per connection on plain Redis and its relaxed timeouts would
		// lengthen ours.
		opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		client = goredis.NewClient(opts)
	}

	commandTimeout := cfg.CommandTimeout
	if commandTimeout <= 0 {
		commandTimeout = DefaultCommandTimeout
	}
	client.AddHook(commandBudget{limit: commandTimeout})

	_, isCluster := client.(*goredis.ClusterClient)
	e := &Engine{
		client:  client,
		cluster: isCluster,
		prefix:  cfg.Prefix,
		addr:    target.String(),
		busWait: max(3*time.Second, t.dial+t.read+t.write),
		waiters: make(map[string]*waiter),
		buses:   make(map[int]*busConn),

		goroutines: cfg.Goroutines,
	}
	if e.goroutines == nil {
		e.own, _ = supervise.New(supervise.Config{}) // no metrics: it cannot fail
		e.goroutines = e.own
	}
	if e.prefix == "" {
		e.prefix = DefaultPrefix
	}
	// Start-up is not a request: the first connection (a Redis Cluster's slot map too) is
	// bounded by the caller's ctx and the socket timeouts, not by the command budget, and
	// tried a few times, so a node starting on a busy machine is not refused by a bound
	// meant for answers under a frozen server.
	startCtx := context.WithValue(ctx, unbudgeted{}, true)
	for attempt := 0; attempt < startAttempts; attempt++ {
		if err = e.client.Ping(startCtx).Err(); err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		_ = e.client.Close()
		return nil, e.wrap(ctx, "connect", err)
	}
	if e.cluster {
		sharded, err := e.hasShardedPubSub(startCtx)
		if err != nil {
			_ = e.client.Close()
			return nil, e.wrap(ctx, "connect", err)
		}
		e.sharded = sharded
	}
	return e, nil
}

// startAttempts is how many times New tries its first Ping.
const startAttempts = 3

// unbudgeted marks a context whose commands the command budget leaves alone (start-up).
type unbudgeted struct{}

// commandBudget is a go-redis hook that puts a deadline on every command and pipeline of
// the engine's client (ContextTimeoutEnabled makes the pool wait and the socket honour it):
// the per-attempt timeouts bound neither the wait for a pooled connection nor the retry,
// which made answers take 1.2-3.7 s while Redis was frozen under a burst. A caller's
// deadline that comes sooner is kept.
type commandBudget struct{ limit time.Duration }

func (b commandBudget) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Value(unbudgeted{}) != nil {
		return ctx, func() {}
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= b.limit {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, b.limit)
}

// DialHook implements goredis.Hook; dials keep their own timeout.
func (commandBudget) DialHook(next goredis.DialHook) goredis.DialHook { return next }

// ProcessHook implements goredis.Hook.
func (b commandBudget) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		ctx, cancel := b.bound(ctx)
		defer cancel()
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements goredis.Hook.
func (b commandBudget) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		ctx, cancel := b.bound(ctx)
		defer cancel()
		return next(ctx, cmds)
	}
}

// timeouts are the client's socket and pool timeouts.
type timeouts struct{ dial, read, write, pool time.Duration }

// timeouts picks each timeout: explicit config, then the URL's, then the default.
func (cfg Config) timeouts(dial, read, write, pool time.Duration) timeouts {
	return timeouts{
		dial:  pick(cfg.DialTimeout, dial, DefaultDialTimeout),
		read:  pick(cfg.ReadTimeout, read, DefaultReadTimeout),
		write: pick(cfg.WriteTimeout, write, DefaultWriteTimeout),
		pool:  pick(cfg.PoolTimeout, pool, DefaultPoolTimeout),
	}
}

// redact returns err's text without the URL's password, which parse errors may quote.
func redact(rawURL string, err error) string {
	u, perr := url.Parse(rawURL)
	if perr != nil {
		// url.Parse's own error quotes the whole URL; say nothing more specific.
		return "not a URL"
	}
	msg := err.Error()
	if pw, ok := u.User.Password(); ok && pw != "" {
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
	}
	// The Sentinel form carries the master's password as an option.
	for _, pw := range u.Query()["password"] {
		if pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return msg
}

// pick returns the first positive duration: explicit config, then the URL's, then default.
func pick(cfg, fromURL, def time.Duration) time.Duration {
	switch {
	case cfg > 0:
		return cfg
	case fromURL > 0:
		return fromURL
	default:
		return def
	}
}

// Name implements cluster.Engine.
func (e *Engine) Name() string { return "redis" }

// AddHook adds a go-redis hook to the engine's client (not to its bus connection): the
// load tool counts the round trips of the periodic work with it.
func (e *Engine) AddHook(h goredis.Hook) { e.client.AddHook(h) }

// Ping implements cluster.Engine.
func (e *Engine) Ping(ctx context.Context) error {
	return e.wrap(ctx, "ping", e.client.Ping(ctx).Err())
}

// Close stops the bus (waiting for a subscriber callback already running: none starts after
// Close returns, and a callback must not call Close) and releases the connections. It is
// idempotent: later calls return the first result, and every other method answers
// ErrUnavailable after it.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.stopBus()
		if e.own != nil {
			_ = e.own.Stop(context.Background()) // the bus's loops returned already
		}
		if err := e.client.Close(); err != nil {
			e.closeErr = fmt.Errorf("cluster/redis: close: %w", err)
		}
	})
	return e.closeErr
}

// Allow implements cluster.RateLimiter with allow.lua.
func (e *Engine) Allow(ctx context.Context, key string, limit int, window time.Duration) (cluster.Decision, error) {
	if limit < 1 {
		return cluster.Decision{}, fmt.Errorf("cluster/redis: allow: limit %d is below 1", limit)
	}
	if window < time.Millisecond {
		return cluster.Decision{}, fmt.Errorf("cluster/redis: allow: window %v is below 1ms", window)
	}
	// Unique within the microsecond the script reads from TIME, across all nodes.
	suffix := strconv.FormatUint(rand.Uint64(), 36)
	res, err := allowScript.Run(ctx, e.client, []string{e.prefix + "rl:" + key},
		limit, window.Microseconds(), suffix).Int64Slice()
	if err != nil {
		return cluster.Decision{}, e.wrap(ctx, "allow", err)
	}
	if len(res) != 3 {
		return cluster.Decision{}, fmt.Errorf("cluster/redis: allow: script returned %d values, want 3", len(res))
	}
	return cluster.Decision{
		Allowed:    res[0] == 1,
		Remaining:  int(max(res[1], 0)),
		RetryAfter: time.Duration(res[2]) * time.Microsecond,
	}, nil
}

// PutToken implements cluster.OneTimeTokens with SET PX.
func (e *Engine) PutToken(ctx context.Context, key, value string, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("cluster/redis: put token: ttl %v is below 1ms", ttl)
	}
	// Round up to whole milliseconds (Redis's unit): a token never dies early.
	px := (ttl + time.Millisecond - 1).Truncate(time.Millisecond)
	return e.wrap(ctx, "put token", e.client.Set(ctx, e.prefix+"tok:"+key, value, px).Err())
}

// TakeToken implements cluster.OneTimeTokens with GETDEL, which Redis runs atomically: of
// concurrent takers exactly one gets the value.
func (e *Engine) TakeToken(ctx context.Context, key string) (string, bool, error) {
	v, err := e.client.GetDel(ctx, e.prefix+"tok:"+key).Result()
	if errors.Is(err, goredis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, e.wrap(ctx, "take token", err)
	}
	return v, true, nil
}

// AddCount implements cluster.Counters with HINCRBY on one hash per group.
func (e *Engine) AddCount(ctx context.Context, group, field string, delta int64) (int64, error) {
	n, err := e.client.HIncrBy(ctx, e.prefix+"cnt:"+group, field, delta).Result()
	if err != nil {
		return 0, e.wrap(ctx, "add count", err)
	}
	return n, nil
}

// takeScript reads and deletes a hash in one step, so no HINCRBY falls between the two.
var takeScript = goredis.NewScript(`local v = redis.call('HGETALL', KEYS[1]); redis.call('DEL', KEYS[1]); return v`)

// TakeCounts implements cluster.Counters with takeScript.
func (e *Engine) TakeCounts(ctx context.Context, group string) (map[string]int64, error) {
	flat, err := takeScript.Run(ctx, e.client, []string{e.prefix + "cnt:" + group}).StringSlice()
	if err != nil {
		return nil, e.wrap(ctx, "take counts", err)
	}
	out := make(map[string]int64, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		n, err := strconv.ParseInt(flat[i+1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("cluster/redis: take counts: field %q holds %q: %w", flat[i], flat[i+1], err)
		}
		out[flat[i]] = n
	}
	return out, nil
}

// wrap adds context to a go-redis error and decides whether it means "Redis cannot be
// reached" (wrapping cluster.ErrUnavailable, with the original error still in the chain).
func (e *Engine) wrap(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if unavailable(ctx, err) {
		if e.cluster {
			// go-redis fetches the slot map again by itself only now and then (every
			// minute): after a master died, a call on its slots must make it look now,
			// or they would fail until then although a replica took over in seconds.
			e.reloadSlots(ctx)
		}
		return fmt.Errorf("cluster/redis: %s at %s: %w: %w", op, e.addr, cluster.ErrUnavailable, err)
	}
	return fmt.Errorf("cluster/redis: %s at %s: %w", op, e.addr, err)
}

// unavailable classifies an error. A reply from Redis is a bug or a rejected command,
// except the replies of a Redis that cannot serve right now (loading its data set, a
// read-only replica after failover, out of clients). Anything else that is not a reply is
// the network or the client: dial and I/O errors, timeouts, pool timeouts, a closed client.
// The caller's own cancellation is not Redis's fault and is returned as it is.
func unavailable(ctx context.Context, err error) bool {
	if errors.Is(err, context.Canceled) && errors.Is(ctx.Err(), context.Canceled) {
		return false
	}
	var reply goredis.Error
	if errors.As(err, &reply) {
		return goredis.IsLoadingError(err) || goredis.IsReadOnlyError(err) ||
			goredis.IsMasterDownError(err) || goredis.IsMaxClientsError(err) ||
			goredis.IsTryAgainError(err) || goredis.IsClusterDownError(err)
	}
	return true
}
