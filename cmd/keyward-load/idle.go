package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/realtime"
	"github.com/keyward/keyward/server"
)

// idleSockets measures the server's memory per idle client socket: n sockets over
// ceil(n/500) apps, opened by a child process (so that the client side's memory and file
// descriptors are not the server's), each with a logged-in session; the server's live
// heap and goroutine stacks after GC, before and after, divided by n. It also reports the
// connect rate (upgrade and admission of sockets whose sessions exist) and the server's
// CPU per socket while they open (this process is the server; the child is the client),
// then runs then with the sockets open.
func idleSockets(ctx context.Context, node *server.Server, c *client, owner apps.Owner, n, conc int, then func()) error {
	core := node.Core()
	type sess struct{ token, ip string }
	var all []sess
	first := 0
	for len(all) < n {
		count := min(realtime.MaxClientsPerApp, n-len(all))
		app, secret, err := core.Apps.CreateApp(ctx, owner, apps.CreateAppInput{Name: fmt.Sprintf("Idle %d", len(all)/realtime.MaxClientsPerApp)})
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

	before := serverMemory()
	writeHeapProfile(idleProfile + ".before")
	self, err := os.Executable()
	if err != nil {
		return err
	}
	child := exec.CommandContext(ctx, self, "-idle-client", list.Name(), "-idle-addr", node.Addr(), "-concurrency", strconv.Itoa(min(conc, 16)))
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
	start, cpu0 := time.Now(), cpuTime()
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
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if held, _ := core.Realtime.Held(); held == n {
			cpu = cpuTime() - cpu0
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
	fmt.Printf("idle client sockets: %d on one node (%d apps), opened in %.1f s (%.0f/s)\n", n, (n+realtime.MaxClientsPerApp-1)/realtime.MaxClientsPerApp,
		opened.Seconds(), float64(n)/opened.Seconds())
	fmt.Printf("  server CPU while they opened: %.3f ms per socket (upgrade + admission; up to 10 ms of the wait for the count included)\n",
		float64(cpu)/float64(n)/1e6)
	fmt.Printf("  per socket after GC: %.2f KiB live heap + %.2f KiB goroutine stacks = %.2f KiB; %.2f goroutines\n",
		per(after.heap, before.heap), per(after.stacks, before.stacks), per(after.heap+after.stacks, before.heap+before.stacks),
		float64(after.goroutines-before.goroutines)/float64(n))
	fmt.Printf("  goroutine stacks: %d B each to start with; %.0f B in use per socket (scanned at GC), %.0f B held\n",
		after.stackStart, float64(int64(after.scanned)-int64(before.scanned))/float64(n), float64(int64(after.stacks)-int64(before.stacks))/float64(n))
	then()
	return nil
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
	goroutines   int
	// stackStart is the runtime's size for new goroutines' stacks (adaptive: from the
	// stacks it scanned at the last GC); scanned the bytes of stack in use then, over
	// every goroutine (what a goroutine uses, not what it holds).
	stackStart, scanned uint64
}

func serverMemory() memory {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	samples := []metrics.Sample{{Name: "/gc/stack/starting-size:bytes"}, {Name: "/gc/scan/stack:bytes"}}
	metrics.Read(samples)
	return memory{heap: m.HeapAlloc, stacks: m.StackInuse, goroutines: runtime.NumGoroutine(),
		stackStart: samples[0].Value.Uint64(), scanned: samples[1].Value.Uint64()}
}

// idleClient is the child process of idleSockets: it opens a socket for each "token ip"
// line of list, conc at a time, answers the server's pings, says "ready" and holds them
// until its stdin closes.
func idleClient(list, addr string, conc int) error {
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
	d := websocket.Dialer{HandshakeTimeout: 30 * time.Second, ReadBufferSize: 256, WriteBufferSize: 256}
	if err := parallel(conc, len(lines)/2, func(i int) error {
		tok, ip := lines[2*i], lines[2*i+1]
		conn, _, err := d.Dial("ws://"+addr+"/api/client/ws?token="+url.QueryEscape(tok), http.Header{"X-Forwarded-For": {ip}})
		if err != nil {
			return fmt.Errorf("socket %d: %w", i, err)
		}
		mu.Lock()
		conns = append(conns, conn)
		mu.Unlock()
		// Reading answers pings (gorilla's default handler) and notices a refusal.
		go func() {
			for {
				if _, msg, err := conn.ReadMessage(); err != nil {
					return
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
