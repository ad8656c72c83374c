package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
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
	// readersCPU is the child's CPU time over the broadcasts (its socket readers'), when
	// measured: the load's own cost, beside the server's.
	readersCPU time.Duration
	// opened is how long the sockets took to open (the child's 16 at a time), and
	// connectCPU the server's CPU meanwhile (upgrade, admission or connect command).
	opened, connectCPU time.Duration
}

func (r fanoutResult) String() string {
	if len(r.last) == 0 {
		return "ws broadcast: no broadcast completed"
	}
	return fmt.Sprintf("%-28s %s", "ws broadcast (all received)", r.summary())
}

// summary is the run's figures.
func (r fanoutResult) summary() string {
	if len(r.last) == 0 {
		return "no broadcast completed"
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	delivered := float64(r.broadcasts*r.sockets-r.lost) / r.elapsed.Seconds()
	return fmt.Sprintf("%9.0f/s  p50 %7.2f ms  p99 %7.2f ms  (%d broadcasts to %d sockets, %.0f messages/s, %d lost, %.2f µs server CPU per delivery; opened in %.2f s, %.3f ms server CPU per connect)",
		float64(r.broadcasts)/r.elapsed.Seconds(), ms(r.pct(0.5)), ms(r.pct(0.99)), r.broadcasts, r.sockets, delivered, r.lost, r.perDelivery(),
		r.opened.Seconds(), r.connectCPU.Seconds()*1000/float64(max(1, r.sockets))) + r.readers()
}

// readers is the readers' CPU per delivery, when measured.
func (r fanoutResult) readers() string {
	if r.readersCPU == 0 {
		return ""
	}
	per := float64(r.readersCPU.Nanoseconds()) / 1000 / float64(max(1, r.broadcasts*r.sockets-r.lost))
	return fmt.Sprintf("; readers %.2f µs CPU per delivery", per)
}

// pct is the q-quantile of the broadcasts' times.
func (r fanoutResult) pct(q float64) time.Duration {
	if len(r.last) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(r.last))
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*q))]
}

// perDelivery is the server's CPU per socket that read a broadcast, in µs.
func (r fanoutResult) perDelivery() float64 {
	return float64(r.cpu.Nanoseconds()) / 1000 / float64(max(1, r.broadcasts*r.sockets-r.lost))
}

// wsFanout opens one client socket per license session (the app's limit, 500, at most)
// from a child process (-fanout-client: the readers' CPU is not the server's), then
// broadcasts one after another for d, each timed from the call until the child says
// every socket has read it. This process is the server; its CPU over the broadcasts is
// the server's per delivery.
func wsFanout(ctx context.Context, core *server.Core, addr, appID string, c *client, secret string, keys []string, firstIP int, d time.Duration) (fanoutResult, error) {
	n := min(len(keys), realtime.MaxClientsPerApp)
	lines, err := socketSessions(c, secret, keys[:n], firstIP)
	if err != nil {
		return fanoutResult{}, err
	}
	return runFanout(ctx, addr, "keyward", lines, d, func(i int) error {
		_, err := core.Realtime.Broadcast(ctx, appID, fmt.Sprintf("broadcast %d", i), "info")
		return err
	}, cpuTime)
}

// socketSessions logs a client session in with each key (addresses from firstIP on)
// and answers a "token ip" line per session, for -fanout-client.
func socketSessions(c *client, secret string, keys []string, firstIP int) ([]string, error) {
	lines := make([]string, len(keys))
	err := parallel(8, len(keys), func(i int) error {
		ip := ipOf(firstIP + i)
		tok, err := c.initSession(secret, firstIP+i)
		if err != nil {
			return fmt.Errorf("socket session: %w", err)
		}
		nonce, err := c.nonce(tok, ip)
		if err != nil {
			return err
		}
		if err := c.post("license", ip, nonce, map[string]string{"sessionToken": tok, "licenseKey": keys[i], "hwid": "h", "pcName": ""}, nil); err != nil {
			return fmt.Errorf("socket login: %w", err)
		}
		lines[i] = tok + " " + ip
		return nil
	})
	return lines, err
}

// fanoutChild is the child process of a broadcast run (-fanout-client), its sockets open.
type fanoutChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	list  string
}

// openFanout starts the reader child on lines and answers the result so far: how long the
// sockets took to open and the server's CPU time for it.
func openFanout(ctx context.Context, addr, proto string, lines []string, serverCPU func() time.Duration) (*fanoutChild, fanoutResult, error) {
	connect0, opening := serverCPU(), time.Now()
	ch, err := startFanout(ctx, addr, proto, lines)
	if err != nil {
		return nil, fanoutResult{}, err
	}
	return ch, fanoutResult{sockets: len(lines), opened: time.Since(opening), connectCPU: serverCPU() - connect0}, nil
}

// startFanout has a child process (-fanout-client, speaking proto: keyward or centrifugo)
// open a socket for each "token ip" line to the server at addr and answers once they are
// open.
func startFanout(ctx context.Context, addr, proto string, lines []string) (*fanoutChild, error) {
	list, err := os.CreateTemp("", "keyward-fanout-")
	if err != nil {
		return nil, err
	}
	ch := &fanoutChild{list: list.Name()}
	for _, l := range lines {
		fmt.Fprintln(list, l)
	}
	if err := list.Close(); err != nil {
		ch.stop()
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		ch.stop()
		return nil, err
	}
	name, args := pinned(pins.readers, self, "-fanout-client", list.Name(), "-idle-addr", addr, "-concurrency", "16", "-fanout-proto", proto)
	ch.cmd = exec.CommandContext(ctx, name, args...)
	ch.cmd.Stderr = os.Stderr
	if ch.stdin, err = ch.cmd.StdinPipe(); err != nil {
		ch.stop()
		return nil, err
	}
	stdout, err := ch.cmd.StdoutPipe()
	if err != nil {
		ch.stop()
		return nil, err
	}
	if err := ch.cmd.Start(); err != nil {
		ch.cmd = nil
		ch.stop()
		return nil, err
	}
	ch.out = bufio.NewReader(stdout)
	line, err := ch.out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready") {
		ch.stop()
		return nil, fmt.Errorf("fan-out client: %q, %v", line, err)
	}
	return ch, nil
}

// done reads the child's next "done <i> <lost>" (every socket read broadcast i, or waited
// 5 s for it) and answers lost.
func (ch *fanoutChild) done(i int) (lost int, err error) {
	line, err := ch.out.ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("fan-out client: %w", err)
	}
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "done" || f[1] != strconv.Itoa(i) {
		return 0, fmt.Errorf("fan-out client: %q", line)
	}
	return strconv.Atoi(f[2])
}

// stop ends the child (its stdin closes) and removes its list.
func (ch *fanoutChild) stop() {
	if ch.cmd != nil {
		_ = ch.stdin.Close()
		_ = ch.cmd.Wait()
	}
	_ = os.Remove(ch.list)
}

// startProfile starts the CPU profile of -profile-run broadcast (Keyward's runs only);
// the answer stops it.
func startProfile(proto string) func() {
	if profileRun != "broadcast" || profileFile == "" || proto != "keyward" {
		return func() {}
	}
	f, err := os.Create(profileFile)
	if err != nil {
		return func() {}
	}
	if pprof.StartCPUProfile(f) != nil {
		f.Close()
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// runFanout has a child process open a socket for each "token ip" line (startFanout),
// then publishes one broadcast after another for d (publish(i) sends "broadcast i" to
// every socket), each timed from the call until the child says every socket has read it.
// serverCPU is the server's CPU time so far (the readers' is the child's, not the
// server's).
func runFanout(ctx context.Context, addr, proto string, lines []string, d time.Duration, publish func(i int) error, serverCPU func() time.Duration) (fanoutResult, error) {
	ch, res, err := openFanout(ctx, addr, proto, lines, serverCPU)
	if err != nil {
		return fanoutResult{}, err
	}
	defer ch.stop()
	defer startProfile(proto)()
	cpu0 := serverCPU()
	start := time.Now()
	for i := 0; time.Since(start) < d; i++ {
		t0 := time.Now()
		if err := publish(i); err != nil {
			return res, err
		}
		lost, err := ch.done(i)
		if err != nil {
			return res, err
		}
		res.last = append(res.last, time.Since(t0))
		res.lost += lost
		res.broadcasts++
	}
	res.elapsed = time.Since(start)
	res.cpu = serverCPU() - cpu0
	return res, nil
}

// fanoutClient is the child process of runFanout: it opens a socket for each "token ip"
// line of list (proto keyward: Keyward's client socket; centrifugo: Centrifugo's JSON
// protocol, connecting with the token, whose channels claim subscribes it), says
// "ready", then expects broadcasts "broadcast 0", "broadcast 1", ... in turn and says
// "done <i> <lost>" when every socket has read broadcast i (a socket that read something
// else, or nothing for 5 s, counts as lost). It ends when its stdin closes.
func fanoutClient(list, addr string, conc int, proto string) error {
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
		var conn *websocket.Conn
		var err error
		if proto == "centrifugo" {
			conn, err = centrifugoConnect(&d, addr, tok)
		} else {
			conn, _, err = d.Dial("ws://"+addr+"/api/client/ws?token="+url.QueryEscape(tok), http.Header{"X-Forwarded-For": {ip}})
		}
		if err != nil {
			return fmt.Errorf("socket %d: %w", i, err)
		}
		conns[i] = conn
		return nil
	}); err != nil {
		return err
	}
	// The readers (one epoll loop, or a goroutine per socket) count each broadcast they
	// read in a tally shared by all: no hand-off per message to a collecting goroutine,
	// so the readers' own cost (which shares the machine with the server) stays small.
	t := newTally(n)
	stop := make(chan struct{})
	if !readEpoll(conns, proto, t, stop) {
		for _, conn := range conns {
			go readBroadcasts(conn, proto, t)
		}
	}
	go func() {
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until stdin closes
		close(stop)
	}()
	fmt.Println("ready", n)
	for i := 0; ; i++ {
		lost, ok := t.wait(i, 5*time.Second, stop)
		if !ok {
			return nil
		}
		fmt.Printf("done %d %d\n", i, lost)
	}
}

// tallySlots is how many broadcasts the tally follows at once (a ring: a run makes far
// fewer in all).
const tallySlots = 1 << 16

// tally counts, per broadcast, the sockets that read it; the reader that completes one
// says so on kick.
type tally struct {
	sockets int32
	read    []atomic.Int32
	kick    chan struct{}
}

func newTally(sockets int) *tally {
	return &tally{sockets: int32(sockets), read: make([]atomic.Int32, tallySlots), kick: make(chan struct{}, 1)}
}

// count notes that one socket read broadcast i.
func (t *tally) count(i int) {
	if t.read[i%tallySlots].Add(1) == t.sockets {
		select {
		case t.kick <- struct{}{}:
		default: // a kick is already pending; wait looks at every broadcast it waits for
		}
	}
}

// wait answers once every socket read broadcast i, or after timeout with how many did
// not (lost); ok is false when stop closed first. Broadcasts are waited for in order.
func (t *tally) wait(i int, timeout time.Duration, stop <-chan struct{}) (lost int, ok bool) {
	slot := &t.read[i%tallySlots]
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for slot.Load() < t.sockets {
		select {
		case <-t.kick:
		case <-timer.C:
			lost = int(t.sockets - slot.Load())
			slot.Store(0)
			return lost, true
		case <-stop:
			return 0, false
		}
	}
	slot.Store(0)
	return 0, true
}

// readBroadcasts reads conn until it closes and counts each broadcast it reads in t,
// reusing one buffer (the readers' driver where readEpoll is not: a goroutine each).
func readBroadcasts(conn *websocket.Conn, proto string, t *tally) {
	buf := make([]byte, 0, 512)
	r := &broadcastReader{proto: proto, t: t}
	for {
		_, rd, err := conn.NextReader()
		if err != nil {
			return
		}
		if buf, err = readAll(rd, buf[:0]); err != nil {
			return
		}
		if r.message(buf) {
			_ = conn.WriteMessage(websocket.TextMessage, []byte("{}"))
		}
	}
}

// broadcastReader is one socket's reading of the broadcasts. A socket that misses a
// broadcast, or reads something else in its place, leaves that broadcast's count short:
// wait counts it lost. Broadcasts come in order; one read again, or older than the last
// counted, is not counted.
type broadcastReader struct {
	proto string
	t     *tally
	next  int // the broadcasts before it were counted or are lost
}

func (r *broadcastReader) count(i int) {
	if i >= r.next {
		r.t.count(i)
		r.next = i + 1
	}
}

// message handles one message the socket read; pong reports a Centrifugo ping ({}),
// which the caller answers with {}.
func (r *broadcastReader) message(buf []byte) (pong bool) {
	if r.proto == "centrifugo" {
		// Replies and pushes come one JSON object a line; {} is a ping.
		for line := range bytes.SplitSeq(buf, []byte("\n")) {
			if string(line) == "{}" {
				pong = true
				continue
			}
			if i, ok := broadcastIndex(line); ok {
				r.count(i)
				continue
			}
			var m struct {
				Push struct {
					Pub struct {
						Data struct {
							Message string `json:"message"`
						} `json:"data"`
					} `json:"pub"`
				} `json:"push"`
			}
			if json.Unmarshal(line, &m) == nil {
				if i, ok := textIndex(m.Push.Pub.Data.Message); ok {
					r.count(i)
				}
			}
		}
		return pong
	}
	if bytes.HasPrefix(buf, keywardBroadcast) {
		if i, ok := broadcastIndex(buf); ok {
			r.count(i)
			return false
		}
	}
	var m struct {
		Type string `json:"type"`
		Data struct {
			Message string `json:"message"`
		} `json:"data"`
	}
	if json.Unmarshal(buf, &m) == nil && m.Type == "message" {
		if i, ok := textIndex(m.Data.Message); ok {
			r.count(i)
		}
	}
	return false
}

// readAll reads r to its end into buf (grown as needed) and answers it.
func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// keywardBroadcast begins every Keyward broadcast message (wire.Encode writes type first).
var keywardBroadcast = []byte(`{"type":"message",`)

// broadcastIndex reads a broadcast's number N from the data object a Keyward message or
// a Centrifugo publication carries ({"message":"broadcast N"...}) without decoding the
// JSON: the 500 readers share one core, and their work is the load's, not the server's,
// so it is kept small. ok is false when raw holds no such text (the reader decodes it
// then).
func broadcastIndex(raw []byte) (int, bool) {
	const key = `{"message":"broadcast `
	i := bytes.Index(raw, []byte(key))
	if i < 0 {
		return 0, false
	}
	rest := raw[i+len(key):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return 0, false
	}
	return digits(rest[:end])
}

// textIndex reads N from a decoded broadcast text, "broadcast N".
func textIndex(text string) (int, bool) {
	n, ok := strings.CutPrefix(text, "broadcast ")
	if !ok {
		return 0, false
	}
	return digits([]byte(n))
}

// digits reads a decimal number of at most 9 digits.
func digits(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// centrifugoConnect opens a Centrifugo client socket (JSON protocol) and connects it
// with token; it answers once the server accepted the connect command.
func centrifugoConnect(d *websocket.Dialer, addr, token string) (*websocket.Conn, error) {
	conn, _, err := d.Dial("ws://"+addr+"/connection/websocket", nil)
	if err != nil {
		return nil, err
	}
	cmd, _ := json.Marshal(map[string]any{"id": 1, "connect": map[string]string{"token": token, "name": "keyward-load"}})
	if err := conn.WriteMessage(websocket.TextMessage, cmd); err != nil {
		conn.Close()
		return nil, err
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, raw, err := conn.ReadMessage()
	_ = conn.SetReadDeadline(time.Time{})
	if err != nil {
		conn.Close()
		return nil, err
	}
	var reply struct {
		ID      int             `json:"id"`
		Error   json.RawMessage `json:"error"`
		Connect json.RawMessage `json:"connect"`
	}
	if err := json.Unmarshal(bytes.SplitN(raw, []byte("\n"), 2)[0], &reply); err != nil || reply.ID != 1 || reply.Connect == nil {
		conn.Close()
		return nil, fmt.Errorf("centrifugo connect: %s", raw)
	}
	return conn, nil
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
