package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/realtime"
	"github.com/keyward/keyward/server"
)

// -vs-centrifugo: the broadcast runs side by side with Centrifugo.
var versusCentrifugo, versusSockets string

// versusRun broadcasts to each count of -vs-sockets client sockets on this node and on a
// Centrifugo server (the binary at path, started on loopback in a temp dir with its
// memory broker), one after the other in the same run: each broadcast is timed from
// the call until every socket has read it (the sockets are a child process's, on both
// servers), and each server's CPU over the broadcasts is divided by the deliveries.
//
// Keyward: sockets logged in with license sessions, 500 per app (the per-app limit),
// one Broadcast call per app for each broadcast, in process. Centrifugo: sockets of its
// JSON protocol, subscribed to one channel by their token's channels claim, one publish
// per broadcast through its HTTP API (its CPU includes that request, one for all the
// sockets). A broadcast a socket missed is a lost message: the run fails.
func versusRun(ctx context.Context, core *server.Core, addr string, c *client, owner apps.Owner, d time.Duration) error {
	var sizes []int
	for _, f := range strings.Split(versusSockets, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return fmt.Errorf("-vs-sockets: %q is not a socket count", f)
		}
		sizes = append(sizes, n)
	}
	rates, err := parseRates(versusRates)
	if err != nil {
		return err
	}
	cf, err := startCentrifugo(ctx, versusCentrifugo)
	if err != nil {
		return err
	}
	defer cf.stop()
	fmt.Printf("broadcast side by side with %s (%s), %s per run\n", versusCentrifugo, cf.version, d)
	firstIP := 1 << 16
	for _, n := range sizes {
		var appIDs []string
		var lines []string
		for len(lines) < n {
			count := min(realtime.MaxClientsPerApp, n-len(lines))
			app, secret, err := core.Apps.CreateApp(ctx, owner, apps.CreateAppInput{Name: fmt.Sprintf("Versus %d-%d", n, len(appIDs))})
			if err != nil {
				return fmt.Errorf("versus app: %w", err)
			}
			keys, err := licenses(ctx, core, owner, app.ID, count)
			if err != nil {
				return err
			}
			more, err := socketSessions(c, secret, keys, firstIP)
			if err != nil {
				return err
			}
			firstIP += count
			appIDs = append(appIDs, app.ID)
			lines = append(lines, more...)
		}
		cfLines := make([]string, n)
		for i := range cfLines {
			cfLines[i] = cf.token(fmt.Sprintf("load-%d", i)) + " -"
		}
		for _, rate := range rates {
			kw, err := runFanoutAt(ctx, addr, "keyward", lines, d, rate, func(i int) error {
				for _, id := range appIDs {
					if _, err := core.Realtime.Broadcast(ctx, id, fmt.Sprintf("broadcast %d", i), "info"); err != nil {
						return err
					}
				}
				return nil
			}, cpuTime)
			if err != nil {
				return fmt.Errorf("keyward, %d sockets: %w", n, err)
			}
			cfr, err := runFanoutAt(ctx, cf.addr, "centrifugo", cfLines, d, rate, cf.publish, cf.cpu)
			if err != nil {
				return fmt.Errorf("centrifugo, %d sockets: %w", n, err)
			}
			pace := "flat out"
			if rate > 0 {
				pace = fmt.Sprintf("%g broadcasts/s", rate)
			}
			fmt.Printf("%d sockets, %s (Keyward: %d apps of up to %d, a Broadcast call each):\n", n, pace, len(appIDs), realtime.MaxClientsPerApp)
			fmt.Printf("  keyward     %s\n", kw.summary())
			fmt.Printf("  centrifugo  %s\n", cfr.summary())
			fmt.Printf("  keyward / centrifugo: server CPU per delivery %.2f, p99 %.2f\n",
				kw.perDelivery()/cfr.perDelivery(), float64(kw.pct(0.99))/float64(cfr.pct(0.99)))
			if kw.lost > 0 || cfr.lost > 0 || kw.broadcasts == 0 || cfr.broadcasts == 0 {
				return fmt.Errorf("a failing run: keyward lost %d of %d broadcasts' deliveries, centrifugo %d of %d",
					kw.lost, kw.broadcasts*n, cfr.lost, cfr.broadcasts*n)
			}
		}
	}
	return nil
}

// centrifugo is a Centrifugo server this process started.
type centrifugo struct {
	cmd              *exec.Cmd
	dir, addr        string
	secret, apiKey   string
	version          string
	http             *http.Client
	exited           chan struct{}
	publishesStarted int
}

// startCentrifugo starts the Centrifugo binary at path on a free loopback port, with a
// config of its own in a temp dir, and waits until its API answers.
func startCentrifugo(ctx context.Context, path string) (*centrifugo, error) {
	dir, err := os.MkdirTemp("", "keyward-load-centrifugo-")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	cf := &centrifugo{dir: dir, addr: fmt.Sprintf("127.0.0.1:%d", port), secret: "load-hmac-" + strings.Repeat("s", 40),
		apiKey: "load-api-key", http: &http.Client{Timeout: 10 * time.Second}, exited: make(chan struct{})}
	cfg := map[string]any{
		"client":      map[string]any{"token": map[string]string{"hmac_secret_key": cf.secret}, "allowed_origins": []string{"*"}},
		"http_api":    map[string]string{"key": cf.apiKey},
		"http_server": map[string]any{"address": "127.0.0.1", "port": port},
		"log":         map[string]string{"level": "error"},
		// pprof's heap endpoint runs a GC on request (?gc=1): the idle run's RSS after GC.
		"debug": map[string]bool{"enabled": true},
	}
	raw, _ := json.Marshal(cfg)
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		return nil, err
	}
	// The module's version: a binary made by go install prints v0.0.0 itself.
	if info, err := buildinfo.ReadFile(path); err == nil {
		cf.version = info.Main.Path + " " + info.Main.Version + ", " + info.GoVersion
	}
	name, args := pinned(pins.server, path, "-c", cfgPath)
	cf.cmd = exec.CommandContext(ctx, name, args...)
	cf.cmd.Dir = dir
	cf.cmd.Stderr = os.Stderr
	if err := cf.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("centrifugo: %w", err)
	}
	go func() { _ = cf.cmd.Wait(); close(cf.exited) }()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if cf.api("info", map[string]any{}) == nil {
			return cf, nil
		}
		select {
		case <-cf.exited:
			cf.stop()
			return nil, errors.New("centrifugo ended before it answered")
		default:
		}
		if time.Now().After(deadline) {
			cf.stop()
			return nil, errors.New("centrifugo did not answer its API within 20 s")
		}
	}
}

func (cf *centrifugo) stop() {
	if cf.cmd.Process != nil {
		_ = cf.cmd.Process.Kill()
		<-cf.exited
	}
	_ = os.RemoveAll(cf.dir)
}

// api calls Centrifugo's HTTP API method with params.
func (cf *centrifugo) api(method string, params any) error {
	raw, _ := json.Marshal(params)
	req, err := http.NewRequest(http.MethodPost, "http://"+cf.addr+"/api/"+method, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", cf.apiKey)
	resp, err := cf.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || bytes.Contains(body, []byte(`"error"`)) {
		return fmt.Errorf("centrifugo %s: %d %s", method, resp.StatusCode, body)
	}
	return nil
}

// publish sends "broadcast i" to the channel every socket is subscribed to.
func (cf *centrifugo) publish(i int) error {
	return cf.api("publish", map[string]any{"channel": "load", "data": map[string]string{"message": fmt.Sprintf("broadcast %d", i)}})
}

// token is a connection JWT (HS256) for user, subscribed to the channel "load" by its
// channels claim.
func (cf *centrifugo) token(user string) string {
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	claims, _ := json.Marshal(map[string]any{"sub": user, "channels": []string{"load"}, "exp": time.Now().Add(time.Hour).Unix()})
	unsigned := header + "." + enc.EncodeToString(claims)
	mac := hmac.New(sha256.New, []byte(cf.secret))
	mac.Write([]byte(unsigned))
	return unsigned + "." + enc.EncodeToString(mac.Sum(nil))
}

// cpu is the Centrifugo process's user and system CPU time so far.
func (cf *centrifugo) cpu() time.Duration { return pidCPU(cf.cmd.Process.Pid) }

// pidCPU is process pid's user and system CPU time so far (/proc/PID/stat, in clock
// ticks of 10 ms).
func pidCPU(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
