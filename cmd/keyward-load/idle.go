package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/realtime"
	"github.com/keyward/keyward/server"
)

// idleOptions shape an idle-sockets run.
type idleOptions struct {
	// n sockets over apps apps (0: ceil(n/500), the per-app limit).
	n, apps int
	// sources is how many loopback source addresses the child opens the sockets from
	// (127.0.0.2, 127.0.0.3, ...: each has its own ephemeral ports); 0 lets the system
	// choose (127.0.0.1).
	sources int
	// cpuWindow, when set, is how long the server's idle CPU is measured with the
	// sockets open.
	cpuWindow time.Duration
	// extrapolate prints the figures at 100,000 sockets.
	extrapolate bool
}

// idleSockets measures the server's memory per idle client socket: n sockets over
// ceil(n/500) apps (or opts.apps), opened by a child process (so that the client side's memory and file
// descriptors are not the server's), each with a logged-in session; the server's live
// heap and goroutine stacks after GC, before and after, divided by n. It also reports the
// connect rate (upgrade and admission of sockets whose sessions exist) and the server's
// CPU per socket while they open (this process is the server; the child is the client),
// then runs then with the sockets open.
func idleSockets(ctx context.Context, node *server.Server, c *client, owner apps.Owner, opts idleOptions, conc int, then func()) (idleFigures, error) {
	var fig idleFigures
	err := idleSocketsInto(ctx, node, c, owner, opts, conc, then, &fig)
	return fig, err
}

// idleFigures are an idle run's figures that a side-by-side run compares.
type idleFigures struct {
	opened     time.Duration
	connectCPU time.Duration // the server's, while the sockets opened
	// rssAfterGC is the server's resident memory growth over the sockets after a GC,
	// its freed pages not forced back to the system (what another server allows too).
	rssAfterGC uint64
}

func idleSocketsInto(ctx context.Context, node *server.Server, c *client, owner apps.Owner, opts idleOptions, conc int, then func(), fig *idleFigures) error {
	core := node.Core()
	n := opts.n
	perApp := realtime.MaxClientsPerApp
	if opts.apps > 0 {
		perApp = (n + opts.apps - 1) / opts.apps
		if perApp > realtime.MaxClientsPerApp {
			return fmt.Errorf("idle sockets: %d sockets over %d apps is over the per-app limit (%d)", n, opts.apps, realtime.MaxClientsPerApp)
		}
	}
	nApps := (n + perApp - 1) / perApp
	type sess struct{ token, ip string }
	var all []sess
	first := 0
	for len(all) < n {
		count := min(perApp, n-len(all))
		app, secret, err := core.Apps.CreateApp(ctx, owner, apps.CreateAppInput{Name: fmt.Sprintf("Idle %d", len(all)/perApp)})
		if err != nil {
			return fmt.Errorf("idle app: %w", err)
		}
		keys, err := licenses(ctx, core, owner, app.ID, count)
		if err != nil {
			return err
		}
		batch := make([]sess, count)
		if err := parallel(conc, count, func(i int) error {
			k := first + i
			ip := ipOf(k)
			tok, err := c.initSession(secret, k)
			if err != nil {
				return fmt.Errorf("idle session: %w", err)
			}
			nonce, err := c.nonce(tok, ip)
			if err != nil {
				return err
			}
			if err := c.post("license", ip, nonce, map[string]string{"sessionToken": tok, "licenseKey": keys[i], "hwid": "h", "pcName": ""}, nil); err != nil {
				return fmt.Errorf("idle login: %w", err)
			}
			batch[i] = sess{tok, ip}
			return nil
		}); err != nil {
			return err
		}
		all = append(all, batch...)
		first += count
	}
	list, err := os.CreateTemp("", "keyward-idle-")
	if err != nil {
		return err
	}
	defer os.Remove(list.Name())
	for _, s := range all {
		fmt.Fprintf(list, "%s %s\n", s.token, s.ip)
	}
	if err := list.Close(); err != nil {
		return err
	}

	// The sessions' HTTP connections are not the sockets': they are closed before the
	// figures (and leave their files to the sockets).
	c.http.CloseIdleConnections()
	// The sessions' own work (their events through the event log's consumers, the log
	// writer, checkpoints) ends before the sockets open: their CPU is not the sockets'.
	settled := settle()
	if limit, open := openFiles(); limit > 0 && open+n > limit {
		return fmt.Errorf("idle sockets: %d files are open and the limit is %d: no room for %d sockets", open, limit, n)
	}
	before := serverMemory()
	writeHeapProfile(idleProfile + ".before")
	self, err := os.Executable()
	if err != nil {
		return err
	}
	name, args := pinned(pins.readers, self, "-idle-client", list.Name(), "-idle-addr", node.Addr(), "-concurrency", strconv.Itoa(min(conc, 16)),
		"-idle-sources", strconv.Itoa(opts.sources))
	child := exec.CommandContext(ctx, name, args...)
	child.Stderr = os.Stderr
	stdin, err := child.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		return err
	}
	stopProfile := func() {}
	if profileRun == "connect" && profileFile != "" {
		if f, err := os.Create(profileFile); err == nil {
			_ = pprof.StartCPUProfile(f)
			stopProfile = func() { pprof.StopCPUProfile(); _ = f.Close() }
		}
	}
	if profileRun == "connect" && traceFile != "" {
		stopOthers, stopTrace := stopProfile, startTrace()
		stopProfile = func() { stopTrace(); stopOthers() }
	}
	if profileRun == "connect" && allocProfileFile != "" {
		stopCPU := stopProfile
		stopAllocs := startAllocProfile()
		stopProfile = func() { stopCPU(); stopAllocs() }
	}
	start, cpu0, gc0 := time.Now(), cpuTime(), readGCWork()
	if err := child.Start(); err != nil {
		stopProfile()
		return err
	}
	defer func() { _ = stdin.Close(); _ = child.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready") {
		return fmt.Errorf("idle client: %q, %v", line, err)
	}
	opened := time.Since(start)
	var cpu time.Duration
	var gcDuring gcWork
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if held, _ := core.Realtime.Held(); held == n {
			cpu = cpuTime() - cpu0
			gcDuring = readGCWork().since(gc0)
			stopProfile()
			break
		}
		if time.Now().After(deadline) {
			stopProfile()
			held, _ := core.Realtime.Held()
			return fmt.Errorf("idle sockets: the server holds %d of %d", held, n)
		}
	}
	time.Sleep(idleSettle) // admissions' loose ends (dashboard messages, logs), or a round of pings
	runtime.GC()
	fig.opened, fig.connectCPU, fig.rssAfterGC = opened, cpu, residentBytes()-before.rss
	after := serverMemory()
	writeHeapProfile(idleProfile)
	if idleProfile != "" {
		// Where the sockets' goroutines wait (their stacks' depth decides their size).
		if f, err := os.Create(idleProfile + ".goroutines"); err == nil {
			_ = pprof.Lookup("goroutine").WriteTo(f, 1)
			_ = f.Close()
		}
	}
	per := func(a, b uint64) float64 { return float64(int64(a)-int64(b)) / float64(n) / 1024 }
	sources := "127.0.0.1"
	if opts.sources > 0 {
		sources = fmt.Sprintf("%d loopback source addresses (127.0.0.2-127.0.0.%d)", opts.sources, 1+opts.sources)
	}
	fmt.Printf("idle client sockets: %d on one node (%d apps, from %s), opened in %.1f s (%.0f/s)\n", n, nApps, sources,
		opened.Seconds(), float64(n)/opened.Seconds())
	fmt.Printf("  server CPU while they opened: %.3f ms per socket (upgrade + admission; up to 10 ms of the wait for the count included; %s)\n",
		float64(cpu)/float64(n)/1e6, settled)
	fmt.Printf("  of which the garbage collector's: %.3f ms per socket, %d cycles; %.1f KiB allocated per socket\n",
		gcDuring.cpu.Seconds()*1000/float64(n), gcDuring.cycles, float64(gcDuring.allocated)/float64(n)/1024)
	fmt.Printf("  per socket after GC: %.2f KiB live heap + %.2f KiB goroutine stacks = %.2f KiB; %.2f goroutines\n",
		per(after.heap, before.heap), per(after.stacks, before.stacks), per(after.heap+after.stacks, before.heap+before.stacks),
		float64(after.goroutines-before.goroutines)/float64(n))
	fmt.Printf("  goroutine stacks: %d B each to start with; %.0f B in use per socket (scanned at GC), %.0f B held\n",
		after.stackStart, float64(int64(after.scanned)-int64(before.scanned))/float64(n), float64(int64(after.stacks)-int64(before.stacks))/float64(n))
	rssPer := per(after.rss, before.rss)
	fmt.Printf("  per socket, RSS after a full GC with freed pages returned to the system: %.2f KiB (%.1f MiB before, %.1f MiB with the sockets)\n",
		rssPer, float64(before.rss)/(1<<20), float64(after.rss)/(1<<20))
	// Where the resident memory beyond the live heap and the stacks goes: the runtime's
	// memory classes (what the Go runtime holds mapped; RSS counts only the pages
	// touched, and memory outside the Go heap, such as SQLite's, is in RSS alone).
	var classes []string
	var mapped float64
	for _, name := range memoryClasses {
		d := float64(int64(after.classes[name])-int64(before.classes[name])) / float64(n)
		mapped += d
		short := strings.TrimSuffix(strings.TrimPrefix(name, "/memory/classes/"), ":bytes")
		classes = append(classes, fmt.Sprintf("%s %.0f", short, d))
	}
	fmt.Printf("  per socket, the runtime's memory classes (B): %s; %.0f B in all\n", strings.Join(classes, ", "), mapped)
	idleUS := -1.0
	if opts.cpuWindow > 0 {
		stopIdleProfile := func() {}
		if profileRun == "idle" && profileFile != "" {
			if f, err := os.Create(profileFile); err == nil {
				_ = pprof.StartCPUProfile(f)
				stopIdleProfile = func() { pprof.StopCPUProfile(); _ = f.Close() }
			}
		}
		cpu0, t0 := cpuTime(), time.Now()
		time.Sleep(opts.cpuWindow)
		cpu, wall := cpuTime()-cpu0, time.Since(t0)
		stopIdleProfile()
		share := cpu.Seconds() / wall.Seconds()
		idleUS = share * 1e6 / float64(n)
		fmt.Printf("  idle server CPU over %.0f s (pings every 25 s, lease renewals, revalidation): %.2f %% of a core, %.3f µs per socket per second\n",
			wall.Seconds(), share*100, idleUS)
	}
	if opts.extrapolate {
		const at = 100_000
		connectMS := float64(cpu) / float64(n) / 1e6
		fmt.Printf("  at %d sockets (X(%d) = X per socket × %d: every figure above is per socket, the node's own costs were before):\n", at, at, at)
		fmt.Printf("    memory:      %.2f KiB × %d = %.0f MiB RSS (heap + stacks: %.2f KiB × %d = %.0f MiB)\n", rssPer, at, rssPer*at/1024,
			per(after.heap+after.stacks, before.heap+before.stacks), at, per(after.heap+after.stacks, before.heap+before.stacks)*at/1024)
		if idleUS >= 0 {
			fmt.Printf("    idle CPU:    %.3f µs/s × %d = %.1f %% of a core\n", idleUS, at, idleUS*at/1e4)
		}
		fmt.Printf("    connecting:  %.3f ms × %d = %.1f s of server CPU; at %.0f sockets/s, %d / %.0f = %.1f s\n", connectMS, at, connectMS*at/1000,
			float64(n)/opened.Seconds(), at, float64(n)/opened.Seconds(), at/(float64(n)/opened.Seconds()))
	}
	then()
	return nil
}

// openFiles answers the process's open-file limit and how many files it has open (0, 0
// when unknown).
func openFiles() (limit, open int) {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) != nil {
		return 0, 0
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, 0
	}
	return int(rl.Cur), len(fds)
}

// maxIdleSockets is how many sockets -max-idle-sockets opens: the open-file limit (Go
// raises the soft limit to the hard one at start) less margin for the node's own files.
func maxIdleSockets(margin int) (int, error) {
	limit, _ := openFiles()
	if limit <= margin {
		return 0, fmt.Errorf("the open-file limit (%d) leaves no room for sockets beside a margin of %d", limit, margin)
	}
	return limit - margin, nil
}

// writeHeapProfile writes the heap profile as of the last GC to path, when -idle-memprofile
// is given.
func writeHeapProfile(path string) {
	if idleProfile == "" {
		return
	}
	if f, err := os.Create(path); err == nil {
		_ = pprof.Lookup("heap").WriteTo(f, 0)
		_ = f.Close()
	}
}

type memory struct {
	heap, stacks uint64
	// rss is the process's resident memory after debug.FreeOSMemory (a GC that returns
	// freed pages to the system).
	rss        uint64
	goroutines int
	// stackStart is the runtime's size for new goroutines' stacks (adaptive: from the
	// stacks it scanned at the last GC); scanned the bytes of stack in use then, over
	// every goroutine (what a goroutine uses, not what it holds).
	stackStart, scanned uint64
	// classes are the runtime's memory classes (runtime/metrics /memory/classes/...),
	// after the pages were returned: where the process's memory beyond the live heap and
	// the stacks goes.
	classes map[string]uint64
}

// memoryClasses are the runtime's memory classes the idle run reports per socket.
var memoryClasses = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/metadata/mspan/inuse:bytes",
	"/memory/classes/metadata/mspan/free:bytes",
	"/memory/classes/metadata/mcache/inuse:bytes",
	"/memory/classes/metadata/other:bytes",
	"/memory/classes/os-stacks:bytes",
	"/memory/classes/other:bytes",
	"/memory/classes/profiling/buckets:bytes",
}

func serverMemory() memory {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	samples := []metrics.Sample{{Name: "/gc/stack/starting-size:bytes"}, {Name: "/gc/scan/stack:bytes"}}
	metrics.Read(samples)
	debug.FreeOSMemory()
	classes := make([]metrics.Sample, len(memoryClasses))
	for i, name := range memoryClasses {
		classes[i].Name = name
	}
	metrics.Read(classes)
	byName := make(map[string]uint64, len(classes))
	for _, c := range classes {
		if c.Value.Kind() == metrics.KindUint64 {
			byName[c.Name] = c.Value.Uint64()
		}
	}
	return memory{heap: m.HeapAlloc, stacks: m.StackInuse, goroutines: runtime.NumGoroutine(),
		stackStart: samples[0].Value.Uint64(), scanned: samples[1].Value.Uint64(), rss: residentBytes(), classes: byName}
}

// residentBytes is the process's resident set, 0 when unknown.
func residentBytes() uint64 { return pidRSS(os.Getpid()) }

// idleClient is the child process of idleSockets (and of the side-by-side idle run): it
// opens a socket for each "token ip" line of list (proto keyward, or centrifugo: its JSON
// protocol, connected with the token), conc at a time (from sources loopback source addresses in turn when
// sources > 0), answers the server's pings, says "ready" and holds them until its stdin
// closes.
func idleClient(list, addr string, conc, sources int, proto string) error {
	raw, err := os.ReadFile(list)
	if err != nil {
		return err
	}
	lines := strings.Fields(string(raw))
	var (
		mu    sync.Mutex
		conns []*websocket.Conn
	)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	dialers := []*websocket.Dialer{{HandshakeTimeout: 30 * time.Second, ReadBufferSize: 256, WriteBufferSize: 256}}
	if sources > 0 {
		dialers = dialers[:0]
		for k := range sources {
			local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+k))}
			dialers = append(dialers, &websocket.Dialer{HandshakeTimeout: 30 * time.Second, ReadBufferSize: 256, WriteBufferSize: 256,
				NetDialContext: (&net.Dialer{LocalAddr: local, Timeout: 30 * time.Second, Control: bindNoPort}).DialContext})
		}
	}
	if err := parallel(conc, len(lines)/2, func(i int) error {
		tok, ip := lines[2*i], lines[2*i+1]
		var conn *websocket.Conn
		var err error
		if proto == "centrifugo" {
			conn, err = centrifugoConnect(dialers[i%len(dialers)], addr, tok)
		} else {
			conn, _, err = dialers[i%len(dialers)].Dial("ws://"+addr+"/api/client/ws?token="+url.QueryEscape(tok), http.Header{"X-Forwarded-For": {ip}})
		}
		if err != nil {
			return fmt.Errorf("socket %d: %w", i, err)
		}
		mu.Lock()
		conns = append(conns, conn)
		mu.Unlock()
		// Reading answers pings (gorilla's default handler; Centrifugo's are {} messages,
		// answered in kind) and notices a refusal.
		go func() {
			for {
				if _, msg, err := conn.ReadMessage(); err != nil {
					return
				} else if proto == "centrifugo" && string(msg) == "{}" {
					_ = conn.WriteMessage(websocket.TextMessage, msg)
				} else if strings.Contains(string(msg), "force_logout") {
					fmt.Fprintf(os.Stderr, "idle client: socket %d refused: %s\n", i, msg)
				}
			}
		}()
		return nil
	}); err != nil {
		return err
	}
	fmt.Println("ready", len(conns))
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until stdin closes
	return nil
}

// settle waits, up to 30 s, for this process (the node) to go quiet: under 2 % of a core
// over 250 ms. It answers what it saw, for the figures' line.
func settle() string {
	const window, quiet, limit = 250 * time.Millisecond, 0.02, 30 * time.Second
	start := time.Now()
	for {
		cpu0 := cpuTime()
		time.Sleep(window)
		busy := float64(cpuTime()-cpu0) / float64(window)
		if busy < quiet {
			return fmt.Sprintf("node quiet after %.1f s", time.Since(start).Seconds())
		}
		if time.Since(start) > limit {
			return fmt.Sprintf("node still %.0f %% busy after %.0f s", busy*100, limit.Seconds())
		}
	}
}

// gcWork is the runtime's garbage collection so far: its cycles, its CPU (the runtime's
// estimate, /cpu/classes/gc/total) and the bytes allocated on the heap.
type gcWork struct {
	cycles, allocated uint64
	cpu               time.Duration
}

func readGCWork() gcWork {
	samples := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(samples)
	var w gcWork
	if samples[0].Value.Kind() == metrics.KindUint64 {
		w.cycles = samples[0].Value.Uint64()
	}
	if samples[1].Value.Kind() == metrics.KindFloat64 {
		w.cpu = time.Duration(samples[1].Value.Float64() * float64(time.Second))
	}
	if samples[2].Value.Kind() == metrics.KindUint64 {
		w.allocated = samples[2].Value.Uint64()
	}
	return w
}

// since is the work done after earlier.
func (w gcWork) since(earlier gcWork) gcWork {
	return gcWork{cycles: w.cycles - earlier.cycles, allocated: w.allocated - earlier.allocated, cpu: w.cpu - earlier.cpu}
}
