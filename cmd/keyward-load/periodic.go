package main

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/event"
)

// periodicCounts counts, while on, the Redis round trips and commands of the node's
// cluster engine (a go-redis hook on its client; the bus connection is not hooked) and
// the MongoDB commands of its store (the driver's command monitor): what idle sockets
// cost the engines while nothing else happens.
type periodicCounts struct {
	on                     atomic.Bool
	trips, commands        atomic.Int64
	mu                     sync.Mutex
	redis, rounds, storage map[string]int
}

func newPeriodicCounts() *periodicCounts {
	return &periodicCounts{redis: map[string]int{}, rounds: map[string]int{}, storage: map[string]int{}}
}

func (p *periodicCounts) count(m map[string]int, name string) {
	p.mu.Lock()
	m[name]++
	p.mu.Unlock()
}

// monitor is the store's command monitor.
func (p *periodicCounts) monitor() *event.CommandMonitor {
	return &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if p.on.Load() {
			// By command and collection: "find users".
			coll, _ := e.Command.Lookup(e.CommandName).StringValueOK()
			p.count(p.storage, strings.TrimSpace(e.CommandName+" "+coll))
		}
	}}
}

// DialHook, ProcessHook and ProcessPipelineHook make periodicCounts a go-redis hook.
func (p *periodicCounts) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (p *periodicCounts) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if p.on.Load() {
			p.trips.Add(1)
			p.commands.Add(1)
			p.count(p.redis, cmd.Name())
			p.count(p.rounds, cmd.Name())
		}
		return next(ctx, cmd)
	}
}

func (p *periodicCounts) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		if p.on.Load() {
			p.trips.Add(1)
			p.commands.Add(int64(len(cmds)))
			kinds := map[string]bool{}
			for _, c := range cmds {
				p.count(p.redis, c.Name())
				kinds[c.Name()] = true
			}
			names := make([]string, 0, len(kinds))
			for k := range kinds {
				names = append(names, k)
			}
			slices.Sort(names)
			p.count(p.rounds, "pipeline of "+strings.Join(names, "+"))
		}
		return next(ctx, cmds)
	}
}

// window counts for d and prints the figures per socket and minute.
func (p *periodicCounts) window(d time.Duration, sockets, apps int, redis, mongo bool) {
	p.on.Store(true)
	time.Sleep(d)
	p.on.Store(false)
	perMin := func(n int64) float64 { return float64(n) / float64(sockets) / d.Minutes() }
	fmt.Printf("periodic work of %d idle sockets (%d apps) over %s:\n", sockets, apps, d)
	if redis {
		fmt.Printf("  Redis: %d round trips (%d commands) = %.4f round trips per socket per minute\n    round trips: %s\n    commands: %s\n",
			p.trips.Load(), p.commands.Load(), perMin(p.trips.Load()), byName(p.rounds), byName(p.redis))
	} else {
		fmt.Println("  Redis: not counted (run with -redis)")
	}
	if mongo {
		var n int64
		for _, c := range p.storage {
			n += int64(c)
		}
		fmt.Printf("  storage: %d MongoDB commands = %.4f per socket per minute; %s\n", n, perMin(n), byName(p.storage))
	} else {
		fmt.Println("  storage: not counted (run with -mongo)")
	}
}

func byName(m map[string]int) string {
	names := make([]string, 0, len(m))
	for k, v := range m {
		names = append(names, fmt.Sprintf("%s %d", k, v))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// loopbackOnly refuses an engine address that is not on loopback: the tool's traffic
// stays on this machine.
func loopbackOnly(raw string) error {
	host := raw
	if i := strings.Index(host, "://"); i >= 0 {
		host = host[i+3:]
	}
	if i := strings.LastIndex(host, "@"); i >= 0 {
		host = host[i+1:]
	}
	if i := strings.IndexAny(host, "/?"); i >= 0 {
		host = host[:i]
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("engine address %q is not on loopback", raw)
	}
	return nil
}
