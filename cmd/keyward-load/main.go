// Command keyward-load measures the client API on the embedded default (`make bench-client`).
//
// It starts a node in-process on loopback (SQLite in a temp dir, memory cluster engine,
// OWASP argon2id parameters) and drives it the way the SDKs do, with bounded runs:
//
//   - heartbeats: a fresh nonce, then the heartbeat, per request pair, over many sessions;
//     reported per second with the heartbeat's p50/p99;
//   - the same load against a trivial gin handler that answers the same envelopes: the
//     ceiling of HTTP + JSON on this machine; the report gives the ratio;
//   - license logins (returning users: key lookup, user update, session) per second;
//   - password logins per second, next to the argon2id verifications per second the
//     machine does on all cores (the login bound);
//   - WebSocket fan-out: 500 client sockets (the per-app limit, opened and read by a
//     child process, so that the CPU figure is the server's), broadcasts one after
//     another, each timed until the last socket has read it.
//
// With -max-idle-sockets it opens as many idle client sockets as the open-file limit allows
// (less -fd-margin: about 19,500 with 20,000 files per process) over 40 apps, from 4
// loopback source addresses (127.0.0.2-127.0.0.5: ephemeral ports of their own), and
// reports memory per socket (RSS after a full GC with freed pages returned to the system,
// and live heap plus goroutine stacks), idle server CPU per socket per second, the connect
// rate and server CPU per connect, and each at 100,000 sockets (per socket × 100,000).
//
// With -vs-centrifugo PATH it only makes broadcast runs, side by side with the Centrifugo
// binary at PATH (started on loopback with a config of its own in a temp dir; install it
// outside the repo, e.g. `GOBIN=/tmp/cf GOFLAGS=-mod=mod go install
// github.com/centrifugal/centrifugo/v6@v6.9.1`): for each count of -vs-sockets (500,2000)
// client sockets on each server, broadcasts one after another for -duration, p50/p99 from
// the call until the last socket read it, and each server's CPU per delivery. A lost
// message fails the run. The runs are pinned (-vs-pin, 0/1 by default): this process
// (Keyward's node, the publisher) and Centrifugo on the first core, each with GOMAXPROCS
// 1, the child reading the sockets on the second, so that neither server's latency
// includes the 500 readers' work on its core. With -idle-sockets N as well it makes the
// idle run side by side instead: N sockets opened on each server by the same child, the
// time to open them, each server's CPU per connect, and RSS per socket after a GC.
//
// With -idle-sockets N it only opens N idle client sockets (whose sessions exist) from a
// child process and reports their connect rate (upgrade and admission), the server's CPU
// per socket while they open and its memory per socket; -periodic-window D then counts,
// for D with the sockets open, the Redis round trips and commands of the node's cluster
// engine and the MongoDB commands of its store (what idle sockets cost: lease renewals,
// revalidation, snapshot refreshes), per socket and minute. -redis and -mongo put the node
// on loopback engines (`bash deploy/testenv.sh sh -c 'keyward-load -idle-sockets 1000
// -redis "$KEYWARD_TEST_REDIS_URL" -mongo "$KEYWARD_TEST_MONGO_URI" -periodic-window 60s'`).
//
// Client addresses come from X-Forwarded-For (loopback, 127.0.0.0/8, is a trusted proxy: the
// sockets come from several of its addresses), one per
// session, so SPEC 8's per-IP limits apply as in production without throttling the run.
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/passwords"
	"github.com/keyward/keyward/core/realtime"
	"github.com/keyward/keyward/server"
	"github.com/keyward/keyward/storage"
)

func main() {
	// Version 4 UUIDs (request, socket and event ids: three per socket opened) take their
	// randomness from a buffer refilled from crypto/rand 16 ids at a time, rather than a
	// getrandom(2) each. It is process-wide, so it is set here, before anything runs.
	uuid.EnableRandPool()
	dur := flag.Duration("duration", 5*time.Second, "length of each measured run")
	conc := flag.Int("concurrency", 32, "concurrent client connections")
	sessions := flag.Int("sessions", 4000, "client sessions for the heartbeat run")
	profile := flag.String("cpuprofile", "", "write a CPU profile to this file (of the whole run, or of -profile-run)")
	flag.StringVar(&profileRun, "profile-run", "", "profile only this run: heartbeat, license, password, broadcast, connect (the opening of -idle-sockets), idle (-idle-cpu-window), or with -runs init or appupdate")
	flag.BoolVar(&wsOnly, "ws-only", false, "run only the WebSocket broadcast run")
	flag.BoolVar(&storesOnly, "stores", false, "run only the store sales run: signed Stripe sales to one node's receiver (orders/s, event to keys and mail queued)")
	flag.IntVar(&idleCount, "idle-sockets", 0, "measure only the server's memory per idle client socket, with this many sockets")
	flag.StringVar(&idleProfile, "idle-memprofile", "", "with -idle-sockets, write a heap profile with the sockets open to this file, one before they open to this file + \".before\" (for pprof -diff_base), and their goroutines to this file + \".goroutines\"")
	flag.BoolVar(&idleMax, "max-idle-sockets", false, "measure only idle client sockets, as many as the open-file limit allows (less -fd-margin) over -idle-apps apps from -idle-sources loopback addresses: memory, idle CPU and connect cost per socket, and the same at 100,000")
	flag.IntVar(&idleApps, "idle-apps", 0, "with -idle-sockets, spread the sockets over this many apps (0: 500 per app; -max-idle-sockets: 40)")
	flag.IntVar(&idleSources, "idle-sources", 0, "with -idle-sockets, open the sockets from this many loopback source addresses, 127.0.0.2 on (0: 127.0.0.1; -max-idle-sockets: 4)")
	flag.DurationVar(&idleCPUWindow, "idle-cpu-window", 0, "with -idle-sockets, measure the server's idle CPU over this window with the sockets open (-max-idle-sockets: 30s, a round of pings)")
	flag.IntVar(&fdMargin, "fd-margin", 500, "with -max-idle-sockets, the open files left to the node beside its sockets")
	idleList := flag.String("idle-client", "", "(internal) the child process of -idle-sockets: open the sockets listed in this file")
	idleAddr := flag.String("idle-addr", "", "(internal) the server address for -idle-client and -fanout-client")
	fanoutList := flag.String("fanout-client", "", "(internal) the child process of the broadcast run: open the sockets listed in this file and read the broadcasts")
	fanoutProto := flag.String("fanout-proto", "keyward", "(internal) the protocol of -fanout-client's sockets: keyward or centrifugo")
	flag.StringVar(&versusCentrifugo, "vs-centrifugo", "", "run only the broadcast runs side by side with the Centrifugo binary at this path (started on loopback in a temp dir): -vs-sockets sockets each, p50/p99 and server CPU per delivery; with -idle-sockets N, the idle run side by side instead: N sockets opened on each, time, CPU per connect and RSS per socket")
	flag.StringVar(&versusSockets, "vs-sockets", "500,2000", "with -vs-centrifugo, the socket counts of the broadcast runs (Keyward: 500 per app, the per-app limit, one broadcast to each app)")
	flag.StringVar(&versusRates, "vs-rates", "0", "with -vs-centrifugo, the broadcast rates of the runs, per second, comma-separated (0: flat out; 20,50: each server at 20 then 50 broadcasts a second, p99 at a stated load)")
	flag.StringVar(&versusPin, "vs-pin", "0/1", "with -vs-centrifugo, SERVER/READERS: taskset core lists for the server side (this process with Keyward, and Centrifugo, each with GOMAXPROCS that many) and for the fan-out child's socket readers, so that neither server shares its cores with the readers (off: not pinned)")
	flag.BoolVar(&signResponses, "sign", false, "turn on signResponses for the app (Ed25519 signature on every client answer)")
	flag.DurationVar(&idleSettle, "idle-settle", 2*time.Second, "with -idle-sockets, how long the sockets are held open before their memory is measured (30s takes every socket through a round of the server's pings)")
	flag.DurationVar(&periodicWindow, "periodic-window", 0, "with -idle-sockets, then count the Redis round trips and storage commands of the idle sockets over this window")
	flag.StringVar(&redisURL, "redis", "", "run the node on this Redis (loopback) instead of the memory engine")
	flag.StringVar(&selectedRuns, "runs", "", "make only these runs, comma-separated: init, license, licseq (init + nonce + license), appupdate")
	flag.StringVar(&mongoURI, "mongo", "", "run the node on this MongoDB (loopback) instead of SQLite")
	flag.Parse()
	if *idleList != "" {
		if err := idleClient(*idleList, *idleAddr, *conc, idleSources, *fanoutProto); err != nil {
			fmt.Fprintln(os.Stderr, "keyward-load idle client:", err)
			os.Exit(1)
		}
		return
	}
	if *fanoutList != "" {
		if err := fanoutClient(*fanoutList, *idleAddr, *conc, *fanoutProto); err != nil {
			fmt.Fprintln(os.Stderr, "keyward-load fan-out client:", err)
			os.Exit(1)
		}
		return
	}
	if versusCentrifugo != "" {
		var err error
		if pins, err = parsePin(versusPin); err == nil {
			err = pinSelf(pins)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "keyward-load:", err)
			os.Exit(1)
		}
	}
	if idleProfile != "" {
		// One sample per 512 bytes: the default (512 KiB) is too coarse to tell apart
		// what a socket holds, a few hundred bytes each.
		runtime.MemProfileRate = 512
	}
	profileFile = *profile
	if *profile != "" && profileRun == "" {
		f, err := os.Create(*profile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "keyward-load:", err)
			os.Exit(1)
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if err := run(*dur, *conc, *sessions); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "keyward-load:", err)
		os.Exit(1)
	}
}

// profileRun, when set, names the one run to profile into profileFile.
var profileRun, profileFile string

// wsOnly skips every run but the WebSocket broadcast; idleCount > 0 every run but the
// idle sockets' memory.
var (
	wsOnly      bool
	idleCount   int
	idleProfile string
	idleSettle  time.Duration
	// -max-idle-sockets and the shape of an idle run.
	idleMax               bool
	idleApps, idleSources int
	idleCPUWindow         time.Duration
	fdMargin              int
)

// signResponses turns on the app's response signing before the runs (-sign).
var signResponses bool

// periodicWindow, redisURL and mongoURI: see their flags.
var (
	periodicWindow     time.Duration
	redisURL, mongoURI string
)

// profiled runs fn under the CPU profiler when it is the run asked for.
func profiled(name string, fn func() result) result {
	if profileRun != name || profileFile == "" {
		return fn()
	}
	f, err := os.Create(profileFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "keyward-load:", err)
		return fn()
	}
	defer f.Close()
	_ = pprof.StartCPUProfile(f)
	defer pprof.StopCPUProfile()
	return allocProfiled(fn)
}

// result is one measured run.
type result struct {
	name     string
	ops      int
	errs     int
	elapsed  time.Duration
	lat      []time.Duration
	firstErr string
	// exhausted: the prepared sessions ran out before the duration did.
	exhausted bool
	// cpu is the process's CPU time over the run, when measured (processCPU).
	cpu time.Duration
}

func (r result) rate() float64 { return float64(r.ops) / r.elapsed.Seconds() }

func (r result) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	slices.Sort(r.lat)
	return r.lat[min(len(r.lat)-1, int(float64(len(r.lat))*p))]
}

func (r result) String() string {
	s := fmt.Sprintf("%-28s %9.0f/s  p50 %7.2f ms  p99 %7.2f ms  (%d ops, %d errors)", r.name, r.rate(),
		float64(r.pct(0.50).Microseconds())/1000, float64(r.pct(0.99).Microseconds())/1000, r.ops, r.errs)
	if r.firstErr != "" {
		s += "\n    first error: " + r.firstErr
	}
	if r.exhausted {
		s += fmt.Sprintf("\n    ended after %.1f s: every prepared session was used", r.elapsed.Seconds())
	}
	return s
}

// load runs fn from conc workers for d (bounded: it stops by itself) and collects
// latencies; fn answers the latency to record and whether the operation succeeded.
func load(name string, conc int, d time.Duration, fn func(worker, i int) (time.Duration, error)) result {
	var (
		mu       sync.Mutex
		res      = result{name: name}
		wg       sync.WaitGroup
		deadline = time.Now().Add(d)
		seq      atomic.Int64
	)
	start := time.Now()
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			ops, errs := 0, 0
			var first string
			ranOut := false
			for time.Now().Before(deadline) {
				l, err := fn(w, int(seq.Add(1)-1))
				if errors.Is(err, errExhausted) {
					// The run ends early; its rate is over the time it took.
					ranOut = true
					break
				}
				if err != nil {
					errs++
					if first == "" {
						first = err.Error()
					}
					continue
				}
				ops++
				lat = append(lat, l)
			}
			mu.Lock()
			res.ops += ops
			res.errs += errs
			res.exhausted = res.exhausted || ranOut
			res.lat = append(res.lat, lat...)
			if res.firstErr == "" {
				res.firstErr = first
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

var errExhausted = errors.New("no prepared session left")

// License logins prepared for the license run (init and nonce made ahead), and licenses
// left for the full init+nonce+license run: enough for several seconds of each at the
// rates seen on 2 cores; a run that uses them all up ends early and says so.
const (
	preparedLicenseLogins = 40000
	fullLicenseLogins     = 20000
)

// parallel runs fn(0..n-1) from conc workers and answers the first error.
func parallel(conc, n int, fn func(i int) error) error {
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// client posts JSON the way SDKs do.
type client struct {
	base string
	http *http.Client
}

func newClient(base string, conc int) *client {
	tr := &http.Transport{MaxIdleConns: conc * 2, MaxIdleConnsPerHost: conc * 2, IdleConnTimeout: time.Minute,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext}
	return &client{base: base, http: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

type envelope struct {
	Success bool            `json:"success"`
	Data    json.RawMessage `json:"data"`
	Error   *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c *client) post(path, ip, nonce string, body any, out any) error {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, c.base+"/api/client/"+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Forwarded-For", ip)
	if nonce != "" {
		req.Header.Set("X-Nonce", nonce)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return fmt.Errorf("%s: not JSON: %q", path, b)
	}
	if !env.Success {
		if env.Error != nil {
			return fmt.Errorf("%s: %s: %s", path, env.Error.Code, env.Error.Message)
		}
		return fmt.Errorf("%s: failed: %s", path, b)
	}
	if out != nil {
		return json.Unmarshal(env.Data, out)
	}
	return nil
}

// ipOf gives session i its own address.
func ipOf(i int) string { return fmt.Sprintf("10.%d.%d.%d", (i>>16)&255, (i>>8)&255, i&255) }

func (c *client) initSession(secret string, i int) (string, error) {
	var d struct {
		SessionToken string `json:"sessionToken"`
	}
	err := c.post("init", ipOf(i), "", map[string]string{"secret": secret, "version": "1.0.0", "hwid": "load-" + ipOf(i)}, &d)
	return d.SessionToken, err
}

func (c *client) nonce(token, ip string) (string, error) {
	var d struct {
		Nonce string `json:"nonce"`
	}
	err := c.post("nonce", ip, "", map[string]string{"sessionToken": token}, &d)
	return d.Nonce, err
}

// heartbeat is one SDK heartbeat: a fresh nonce, then the call; the latency is the
// heartbeat's own.
func (c *client) heartbeat(token, ip string) (time.Duration, error) {
	n, err := c.nonce(token, ip)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	err = c.post("heartbeat", ip, n, map[string]string{"sessionToken": token}, nil)
	return time.Since(start), err
}

func run(d time.Duration, conc, nSessions int) error {
	runtime.GOMAXPROCS(runtime.NumCPU())
	fmt.Printf("keyward-load: %d CPUs, %d connections, %s per run, loopback only\n\n", runtime.NumCPU(), conc, d)
	dir, err := os.MkdirTemp("", "keyward-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env := map[string]string{
		"KEYWARD_ADDR": "127.0.0.1:0", "KEYWARD_DATA_DIR": dir, "KEYWARD_TRUSTED_PROXIES": "127.0.0.0/8",
		"KEYWARD_LOG_LEVEL": "error", "KEYWARD_PLAN_BUSINESS_MAX_API_CALLS": "2000000000",
		"KEYWARD_PLAN_BUSINESS_MAX_USERS": "10000000",
	}
	for _, u := range []string{redisURL, mongoURI} {
		if u == "" {
			continue
		}
		if err := loopbackOnly(u); err != nil {
			return err
		}
		// A node on shared engines needs the keys every node shares.
		env["KEYWARD_JWT_SECRET"] = "load-secret-" + strings.Repeat("x", 40)
		env["KEYWARD_SECRETS_KEY"] = "load-secrets-key-" + strings.Repeat("k", 40)
	}
	run := uuid.NewString()[:8]
	if redisURL != "" {
		env["KEYWARD_REDIS_URL"], env["KEYWARD_REDIS_PREFIX"] = redisURL, "kwload:"+run+":"
	}
	if mongoURI != "" {
		env["KEYWARD_MONGO_URI"], env["KEYWARD_MONGO_DATABASE"] = mongoURI, "kwload_"+run
	}
	if webhookEvents > 0 {
		if err := webhookReceiverConfig(dir, env); err != nil { // a loopback HTTPS receiver (webhooks.go)
			return err
		}
	}
	cfg, err := server.LoadConfig("keyward-load", nil, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		return err
	}
	counts := newPeriodicCounts()
	cfg.MongoMonitor = counts.monitor()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	node, err := server.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- node.Run(ctx) }()
	defer func() { cancel(); <-done }()

	core := node.Core()
	if h, ok := core.Engine.(interface{ AddHook(goredis.Hook) }); ok {
		h.AddHook(counts)
	}
	owner, appID, secret, err := prepare(ctx, core)
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	c := newClient("http://"+node.Addr(), conc)
	if versusCentrifugo != "" && idleCount > 0 {
		return versusIdle(ctx, node, c, owner, idleOptions{n: idleCount, apps: idleApps, sources: idleSources}, conc)
	}
	if versusCentrifugo != "" {
		return versusRun(ctx, core, node.Addr(), c, owner, d)
	}
	if idleMax {
		if idleCount, err = maxIdleSockets(fdMargin); err != nil {
			return err
		}
		idleApps = cmp.Or(idleApps, 40)
		idleSources = cmp.Or(idleSources, 4)
		idleCPUWindow = cmp.Or(idleCPUWindow, 30*time.Second)
	}
	if idleCount > 0 {
		opts := idleOptions{n: idleCount, apps: idleApps, sources: idleSources, cpuWindow: idleCPUWindow, extrapolate: idleMax}
		nApps := (idleCount + realtime.MaxClientsPerApp - 1) / realtime.MaxClientsPerApp
		if idleApps > 0 {
			nApps = idleApps
		}
		_, err := idleSockets(ctx, node, c, owner, opts, conc, func() {
			if periodicWindow > 0 {
				counts.window(periodicWindow, idleCount, nApps, redisURL != "", mongoURI != "")
			}
		})
		return err
	}
	if signResponses {
		if err := enableSigning(ctx, core, owner, appID, "http://"+node.Addr(), secret); err != nil {
			return err
		}
		fmt.Println("signResponses on: every client answer carries an Ed25519 signature")
	}
	if webhookEvents > 0 {
		return webhookLatencyRun(ctx, core, owner, appID)
	}
	if storesOnly {
		return storesRun(ctx, core, node.Addr(), owner, appID, c, conc, d)
	}
	if selectedRuns != "" {
		runs, err := parseRuns(selectedRuns)
		if err != nil {
			return err
		}
		return runSelected(ctx, core, c, owner, appID, secret, runs, conc, d)
	}
	if wsOnly {
		fan, err := webSocketRun(ctx, core, node.Addr(), owner, appID, secret, c, 0, d)
		if err != nil {
			return err
		}
		fmt.Println(fan)
		return nil
	}

	// Heartbeats over prepared sessions.
	tokens := make([]string, nSessions)
	for i := range tokens {
		if tokens[i], err = c.initSession(secret, i); err != nil {
			return fmt.Errorf("init session %d: %w", i, err)
		}
	}
	hb := profiled("heartbeat", func() result {
		return load("heartbeat (nonce + beat)", conc, d, func(_, i int) (time.Duration, error) {
			k := i % nSessions
			return c.heartbeat(tokens[k], ipOf(k))
		})
	})

	// The ceiling: a trivial gin handler with the same envelopes.
	ceilURL, stopCeil, err := startCeiling()
	if err != nil {
		return err
	}
	cc := newClient(ceilURL, conc)
	ceil := load("ceiling (trivial gin)", conc, d, func(_, i int) (time.Duration, error) {
		return cc.heartbeat("t", ipOf(i%nSessions))
	})
	stopCeil()

	lic, licSeq, base, err := licenseRuns(ctx, core, c, owner, appID, secret, nSessions, preparedLicenseLogins, fullLicenseLogins, conc, d)
	if err != nil {
		return err
	}

	// Password logins against the argon2id bound.
	users, err := passwordUsers(ctx, core, owner, appID, 2000)
	if err != nil {
		return err
	}
	pw := load("password login", conc, d, func(_, i int) (time.Duration, error) {
		if i >= len(users) {
			return 0, errExhausted
		}
		ip := ipOf(base + i)
		tok, err := c.initSession(secret, base+i)
		if err != nil {
			return 0, err
		}
		n, err := c.nonce(tok, ip)
		if err != nil {
			return 0, err
		}
		start := time.Now()
		err = c.post("login", ip, n, map[string]string{"sessionToken": tok, "username": users[i], "password": loadPassword,
			"licenseKey": "", "hwid": "h", "pcName": ""}, nil)
		return time.Since(start), err
	})
	hashes := hashRate(d)
	base += len(users)

	fan, err := webSocketRun(ctx, core, node.Addr(), owner, appID, secret, c, base, d)
	if err != nil {
		return err
	}

	fmt.Println(hb)
	fmt.Println(ceil)
	fmt.Println(lic)
	fmt.Println(licSeq)
	fmt.Println(pw)
	fmt.Println(fan)
	fmt.Printf("%-28s %9.0f/s  (argon2id m=%d KiB t=%d on %d cores)\n\n", "argon2id verifications", hashes,
		passwords.OWASP.MemoryKiB, passwords.OWASP.Iterations, runtime.NumCPU())
	fmt.Printf("heartbeat / ceiling          %6.2f  (target >= 0.50; heartbeat p99 %.2f ms, target < 10)\n",
		hb.rate()/ceil.rate(), float64(hb.pct(0.99).Microseconds())/1000)
	fmt.Printf("license logins               %6.0f/s (target >= 2000)\n", lic.rate())
	fmt.Printf("password logins / hashes     %6.2f  (target >= 0.80)\n", pw.rate()/hashes)
	return nil
}

// licenseRuns measures license logins: returning users (nPre prepared sessions whose init
// and nonce are made before the timed run) and the full SDK sequence (nFull keys). base
// is the first client address index free; the next free one is answered.
func licenseRuns(ctx context.Context, core *server.Core, c *client, owner apps.Owner, appID, secret string, base, nPre, nFull, conc int,
	d time.Duration) (lic, licSeq result, next int, err error) {
	// License logins: returning users, each on a fresh session whose init and nonce are
	// made before the timed run, so the rate is of license calls alone; the full SDK
	// sequence (init, nonce, license) is measured too.
	keys, err := licenses(ctx, core, owner, appID, nPre+nFull)
	if err != nil {
		return result{}, result{}, 0, err
	}
	type ready struct{ token, nonce, ip, key string }
	pre := make([]ready, nPre)
	if err := parallel(conc, len(pre), func(i int) error {
		ip := ipOf(base + i)
		tok, err := c.initSession(secret, base+i)
		if err != nil {
			return fmt.Errorf("prepare license session: %w", err)
		}
		n, err := c.nonce(tok, ip)
		if err != nil {
			return fmt.Errorf("prepare license nonce: %w", err)
		}
		pre[i] = ready{tok, n, ip, keys[i]}
		return nil
	}); err != nil {
		return result{}, result{}, 0, err
	}
	cpu := processCPU()
	lic = profiled("license", func() result {
		return load("license login", conc, d, func(_, i int) (time.Duration, error) {
			if i >= len(pre) {
				return 0, errExhausted
			}
			p := pre[i]
			start := time.Now()
			err := c.post("license", p.ip, p.nonce, map[string]string{"sessionToken": p.token, "licenseKey": p.key, "hwid": "h", "pcName": ""}, nil)
			return time.Since(start), err
		})
	})
	lic.cpu = processCPU() - cpu
	base += len(pre)
	rest := keys[len(pre):]
	cpu = processCPU()
	licSeq = load("init + nonce + license", conc, d, func(_, i int) (time.Duration, error) {
		if i >= len(rest) {
			return 0, errExhausted
		}
		ip := ipOf(base + i)
		start := time.Now()
		tok, err := c.initSession(secret, base+i)
		if err != nil {
			return 0, err
		}
		n, err := c.nonce(tok, ip)
		if err != nil {
			return 0, err
		}
		err = c.post("license", ip, n, map[string]string{"sessionToken": tok, "licenseKey": rest[i], "hwid": "h", "pcName": ""}, nil)
		return time.Since(start), err
	})
	licSeq.cpu = processCPU() - cpu
	base += len(rest)
	return lic, licSeq, base, nil
}

const loadPassword = "load-test-password"

// prepare makes a business-plan owner and an app.
func prepare(ctx context.Context, core *server.Core) (apps.Owner, string, string, error) {
	now := storage.Now()
	acc := storage.Account{ID: uuid.NewString(), Username: "load", Email: "load@example.com", Role: storage.RoleUser,
		Plan: "business", EmailVerified: true, APICallsResetAt: now.AddDate(0, 1, 0), CreatedAt: now, UpdatedAt: now}
	if err := core.Store.CreateAccount(ctx, acc); err != nil {
		return apps.Owner{}, "", "", err
	}
	o := apps.Owner{AccountID: acc.ID, Plan: acc.Plan}
	app, secret, err := core.Apps.CreateApp(ctx, o, apps.CreateAppInput{Name: "Load"})
	return o, app.ID, secret, err
}

// licenses makes n keys and activates each once, so the timed logins are returning ones.
func licenses(ctx context.Context, core *server.Core, o apps.Owner, appID string, n int) ([]string, error) {
	var keys []string
	for len(keys) < n {
		count := min(1000, n-len(keys))
		ls, err := core.Apps.CreateLicenses(ctx, o, appID, apps.CreateLicensesInput{Count: &count})
		if err != nil {
			return nil, err
		}
		for _, l := range ls {
			keys = append(keys, l.Key)
		}
	}
	// First uses create the users; they are not timed.
	now := storage.Now()
	for _, k := range keys {
		u := storage.AppUser{ID: uuid.NewString(), AppID: appID, Username: k, Level: 1, DeviceLimit: 1, Enabled: true,
			CreatedAt: now, UpdatedAt: now}
		if err := core.Store.CreateUser(ctx, u); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func passwordUsers(ctx context.Context, core *server.Core, o apps.Owner, appID string, n int) ([]string, error) {
	h := passwords.NewHasher(passwords.OWASP, 0)
	hash, err := h.Hash(ctx, loadPassword)
	if err != nil {
		return nil, err
	}
	now := storage.Now()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("pw-user-%d", i)
		u := storage.AppUser{ID: uuid.NewString(), AppID: appID, Username: names[i], PasswordHash: hash, Level: 1,
			DeviceLimit: 1, Enabled: true, CreatedAt: now, UpdatedAt: now}
		if err := core.Store.CreateUser(ctx, u); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// hashRate measures argon2id verifications per second on every core.
func hashRate(d time.Duration) float64 {
	h := passwords.NewHasher(passwords.OWASP, 0)
	hash, _ := h.Hash(context.Background(), loadPassword)
	r := load("hash", runtime.NumCPU(), d, func(int, int) (time.Duration, error) {
		start := time.Now()
		err := h.Verify(context.Background(), hash, loadPassword)
		return time.Since(start), err
	})
	return r.rate()
}

// startCeiling serves the nonce and heartbeat envelopes from a trivial gin handler.
func startCeiling() (string, func(), error) {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.POST("/api/client/nonce", func(c *gin.Context) {
		c.Data(http.StatusOK, "application/json; charset=utf-8", []byte(`{"success":true,"data":{"nonce":"0123456789abcdefghijklmn"}}`+"\n"))
	})
	r.POST("/api/client/heartbeat", func(c *gin.Context) {
		c.Data(http.StatusOK, "application/json; charset=utf-8", []byte(`{"success":true,"data":{"expiresAt":"2026-11-22T10:00:00Z"}}`+"\n"))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// webSocketRun is the WebSocket fan-out: the app's 500 client sockets, one broadcast at a
// time.
func webSocketRun(ctx context.Context, core *server.Core, addr string, owner apps.Owner, appID, secret string, c *client, base int, d time.Duration) (fanoutResult, error) {
	wsKeys, err := licenses(ctx, core, owner, appID, realtime.MaxClientsPerApp)
	if err != nil {
		return fanoutResult{}, err
	}
	return wsFanout(ctx, core, addr, appID, c, secret, wsKeys, base, d)
}

// enableSigning turns on the app's response signing and waits until the app's actor
// answers signed (the change reaches it through the event pipeline).
func enableSigning(ctx context.Context, core *server.Core, owner apps.Owner, appID, base, secret string) error {
	on := true
	if _, err := core.Apps.UpdateApp(ctx, owner, appID, apps.UpdateAppInput{SignResponses: &on}); err != nil {
		return fmt.Errorf("enable signing: %w", err)
	}
	body := []byte(`{"secret":"` + secret + `","version":"1.0.0","hwid":"sign-check"}`)
	for i := range 100 {
		req, err := http.NewRequestWithContext(ctx, "POST", base+"/api/client/init", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.250.0.%d", i+1)) // init is limited per address
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("enable signing: %w", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Header.Get("X-Signature-Ed25519") != "" {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("enable signing: answers are still unsigned after 2 s")
}
