package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
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
	// cpu is the process's CPU time (user and system) over the broadcasts: the server's
	// work and the in-process readers' (an upper bound of the server's).
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
	perDelivery := float64(r.cpu.Microseconds()) / float64(max(1, r.broadcasts*r.sockets-r.lost))
	return fmt.Sprintf("%-28s %9.0f/s  p50 %7.2f ms  p99 %7.2f ms  (%d broadcasts to %d sockets, %.0f messages/s, %d lost, %.1f µs CPU per delivery with the readers)",
		"ws broadcast (all received)", float64(r.broadcasts)/r.elapsed.Seconds(), p(0.5), p(0.99), r.broadcasts, r.sockets, delivered, r.lost, perDelivery)
}

// wsFanout opens one client socket per license session (the app's limit, 500, at most),
// then broadcasts one after another for d, each timed until every socket has read it.
func wsFanout(ctx context.Context, core *server.Core, base, appID string, c *client, secret string, keys []string, firstIP int, d time.Duration) (fanoutResult, error) {
	n := min(len(keys), realtime.MaxClientsPerApp)
	type sock struct {
		conn *websocket.Conn
		got  chan string
	}
	socks := make([]sock, n)
	defer func() {
		for _, s := range socks {
			if s.conn != nil {
				s.conn.Close()
			}
		}
	}()
	wsBase := "ws" + strings.TrimPrefix(base, "http")
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
		h := http.Header{"X-Forwarded-For": {ip}}
		conn, _, err := websocket.DefaultDialer.DialContext(ctx, wsBase+"/api/client/ws?token="+url.QueryEscape(tok), h)
		if err != nil {
			return fanoutResult{}, fmt.Errorf("socket %d: %w", i, err)
		}
		socks[i] = sock{conn: conn, got: make(chan string, 1024)}
	}
	// One reader per socket passes on the text of each broadcast it reads.
	var readers sync.WaitGroup
	for _, s := range socks {
		readers.Add(1)
		go func() {
			defer readers.Done()
			defer close(s.got)
			for {
				_, raw, err := s.conn.ReadMessage()
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
					s.got <- m.Data.Message
				}
			}
		}()
	}
	res := fanoutResult{sockets: n}
	cpu0 := cpuTime()
	start := time.Now()
	for i := 0; time.Since(start) < d; i++ {
		text := fmt.Sprintf("broadcast %d", i)
		t0 := time.Now()
		if _, err := core.Realtime.Broadcast(ctx, appID, text, "info"); err != nil {
			return res, err
		}
		for _, s := range socks {
			select {
			case m, ok := <-s.got:
				if !ok || m != text {
					res.lost++
				}
			case <-time.After(5 * time.Second):
				res.lost++
			}
		}
		res.last = append(res.last, time.Since(t0))
		res.broadcasts++
	}
	res.elapsed = time.Since(start)
	res.cpu = cpuTime() - cpu0
	for _, s := range socks {
		s.conn.Close()
	}
	readers.Wait()
	return res, nil
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
