package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/keyward/keyward/core/realtime"
	"github.com/keyward/keyward/server"
)

// fanoutResult is the WebSocket broadcast run: how long until every socket had each
// broadcast.
type fanoutResult struct {
	sockets    int
	broadcasts int
	elapsed    time.Duration
	// last holds, per broadcast, the time from the call until the last socket read it.
	last []time.Duration
	lost int
	// cpu is this process's CPU time (user and system) over the broadcasts: the server's
	// alone, since the reading clients run in a child process.
	cpu time.Duration
}

func (r fanoutResult) String() string {
	if len(r.last) == 0 {
		return "ws broadcast: no broadcast completed"
	}
	slices.Sort(r.last)
	p := func(q float64) float64 {
		return float64(r.last[min(len(r.last)-1, int(float64(len(r.last))*q))].Microseconds()) / 1000
	}
	delivered := float64(r.broadcasts*r.sockets-r.lost) / r.elapsed.Seconds()
	perDelivery := float64(r.cpu.Nanoseconds()) / 1000 / float64(max(1, r.broadcasts*r.sockets-r.lost))
	return fmt.Sprintf("%-28s %9.0f/s  p50 %7.2f ms  p99 %7.2f ms  (%d broadcasts to %d sockets, %.0f messages/s, %d lost, %.2f µs server CPU per delivery)",
		"ws broadcast (all received)", float64(r.broadcasts)/r.elapsed.Seconds(), p(0.5), p(0.99), r.broadcasts, r.sockets, delivered, r.lost, perDelivery)
}

// wsFanout opens one client socket per license session (the app's limit, 500, at most)
// from a child process (-fanout-client: the readers' CPU is not the server's), then
// broadcasts one after another for d, each timed from the call until the child says
// every socket has read it. This process is the server; its CPU over the broadcasts is
// the server's per delivery.
func wsFanout(ctx context.Context, core *server.Core, addr, appID string, c *client, secret string, keys []string, firstIP int, d time.Duration) (fanoutResult, error) {
	n := min(len(keys), realtime.MaxClientsPerApp)
	list, err := os.CreateTemp("", "keyward-fanout-")
	if err != nil {
		return fanoutResult{}, err
	}
	defer os.Remove(list.Name())
	for i := range n {
		ip := ipOf(firstIP + i)
		tok, err := c.initSession(secret, firstIP+i)
		if err != nil {
			return fanoutResult{}, fmt.Errorf("socket session: %w", err)
		}
		nonce, err := c.nonce(tok, ip)
		if err != nil {
			return fanoutResult{}, err
		}
		if err := c.post("license", ip, nonce, map[string]string{"sessionToken": tok, "licenseKey": keys[i], "hwid": "h", "pcName": ""}, nil); err != nil {
			return fanoutResult{}, fmt.Errorf("socket login: %w", err)
		}
		fmt.Fprintf(list, "%s %s\n", tok, ip)
	}
	if err := list.Close(); err != nil {
		return fanoutResult{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return fanoutResult{}, err
	}
	child := exec.CommandContext(ctx, self, "-fanout-client", list.Name(), "-idle-addr", addr, "-concurrency", "16")
	child.Stderr = os.Stderr
	stdin, err := child.StdinPipe()
	if err != nil {
		return fanoutResult{}, err
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		return fanoutResult{}, err
	}
	if err := child.Start(); err != nil {
		return fanoutResult{}, err
	}
	defer func() { _ = stdin.Close(); _ = child.Wait() }()
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready") {
		return fanoutResult{}, fmt.Errorf("fan-out client: %q, %v", line, err)
	}

	res := fanoutResult{sockets: n}
	if profileRun == "broadcast" && profileFile != "" {
		if f, err := os.Create(profileFile); err == nil {
			_ = pprof.StartCPUProfile(f)
			defer f.Close()
			defer pprof.StopCPUProfile()
		}
	}
	cpu0 := cpuTime()
	start := time.Now()
	for i := 0; time.Since(start) < d; i++ {
		t0 := time.Now()
		if _, err := core.Realtime.Broadcast(ctx, appID, fmt.Sprintf("broadcast %d", i), "info"); err != nil {
			return res, err
		}
		// The child answers "done <i> <lost>" once every socket read broadcast i (or
		// waited 5 s for it).
		line, err := out.ReadString('\n')
		if err != nil {
			return res, fmt.Errorf("fan-out client: %w", err)
		}
		res.last = append(res.last, time.Since(t0))
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "done" || f[1] != strconv.Itoa(i) {
			return res, fmt.Errorf("fan-out client: %q", line)
		}
		lost, _ := strconv.Atoi(f[2])
		res.lost += lost
		res.broadcasts++
	}
	res.elapsed = time.Since(start)
	res.cpu = cpuTime() - cpu0
	return res, nil
}

// fanoutClient is the child process of wsFanout: it opens a socket for each "token ip"
// line of list, says "ready", then expects broadcasts "broadcast 0", "broadcast 1", ...
// in turn and says "done <i> <lost>" when every socket has read broadcast i (a socket
// that read something else, or nothing for 5 s, counts as lost). It ends when its stdin
// closes.
func fanoutClient(list, addr string, conc int) error {
	raw, err := os.ReadFile(list)
	if err != nil {
		return err
	}
	lines := strings.Fields(string(raw))
	n := len(lines) / 2
	conns := make([]*websocket.Conn, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	d := websocket.Dialer{HandshakeTimeout: 30 * time.Second}
	if err := parallel(conc, n, func(i int) error {
		tok, ip := lines[2*i], lines[2*i+1]
		conn, _, err := d.Dial("ws://"+addr+"/api/client/ws?token="+url.QueryEscape(tok), http.Header{"X-Forwarded-For": {ip}})
		if err != nil {
			return fmt.Errorf("socket %d: %w", i, err)
		}
		conns[i] = conn
		return nil
	}); err != nil {
		return err
	}
	// One reader per socket passes on the text of each broadcast it reads.
	got := make([]chan string, n)
	var readers sync.WaitGroup
	for i, conn := range conns {
		got[i] = make(chan string, 1024)
		readers.Add(1)
		go func() {
			defer readers.Done()
			defer close(got[i])
			for {
				_, raw, err := conn.ReadMessage()
				if err != nil {
					return
				}
				var m struct {
					Type string `json:"type"`
					Data struct {
						Message string `json:"message"`
					} `json:"data"`
				}
				if json.Unmarshal(raw, &m) == nil && m.Type == "message" {
					got[i] <- m.Data.Message
				}
			}
		}()
	}
	stop := make(chan struct{})
	go func() {
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until stdin closes
		close(stop)
	}()
	fmt.Println("ready", n)
	for i := 0; ; i++ {
		text := fmt.Sprintf("broadcast %d", i)
		lost := 0
		for _, ch := range got {
			select {
			case m, ok := <-ch:
				if !ok || m != text {
					lost++
				}
			case <-time.After(5 * time.Second):
				lost++
			case <-stop:
				return nil
			}
		}
		fmt.Printf("done %d %d\n", i, lost)
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
