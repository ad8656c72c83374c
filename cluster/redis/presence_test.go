package redis_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/keyward/keyward/cluster"
	kwredis "github.com/keyward/keyward/cluster/redis"
	"github.com/keyward/keyward/internal/testenv"
)

// TestPresenceKeyLayout pins the doc's presence keys: four per app, the app in one hash
// tag, living as long as the latest socket, and gone once the app has no socket.
func TestPresenceKeyLayout(t *testing.T) {
	url := testenv.RedisURL(t)
	prefix := testenv.UniqueName("kwtest:") + ":"
	e := newEngineWithPrefix(t, url, prefix)
	raw := rawClient(t, url)
	ctx := context.Background()

	if _, err := e.Admit(ctx, "a1", cluster.PresentSocket{ID: "s1", User: "u1", Info: []byte("i")}, time.Minute, 5); err != nil {
		t.Fatal(err)
	}
	base := prefix + "prs:{a1}:"
	for key, typ := range map[string]string{"live": "zset", "owner": "hash", "user": "hash", "info": "hash"} {
		if got, _ := raw.Type(ctx, base+key).Result(); got != typ {
			t.Fatalf("TYPE %s = %q, want %s", base+key, got, typ)
		}
		if pttl, _ := raw.PTTL(ctx, base+key).Result(); pttl <= 50*time.Second || pttl > time.Minute {
			t.Fatalf("PTTL %s = %v, want about the socket's minute", base+key, pttl)
		}
	}
	if got, _ := raw.HGet(ctx, base+"user", "u1").Result(); got != "s1" {
		t.Fatalf("HGET user u1 = %q", got)
	}
	if _, err := e.Release(ctx, "a1", "s1"); err != nil {
		t.Fatal(err)
	}
	if n, _ := raw.Exists(ctx, base+"live", base+"owner", base+"user", base+"info").Result(); n != 0 {
		t.Fatalf("%d presence keys left with no socket", n)
	}
}

// TestRedisClusterPresenceOneSlot: an app's presence keys share one hash slot (the script
// would fail with CROSSSLOT otherwise), and apps spread over the cluster's masters.
func TestRedisClusterPresenceOneSlot(t *testing.T) {
	url := testenv.RedisClusterURL(t)
	prefix := testenv.UniqueName("kwtest:") + ":"
	e, raw := engineAndClusterClient(t, url, prefix)
	ctx := context.Background()
	slots := map[int64]bool{}
	for i := range 20 {
		app := fmt.Sprintf("app-%d", i)
		if a, err := e.Admit(ctx, app, cluster.PresentSocket{ID: "s", User: "u"}, time.Minute, 1); err != nil || !a.Admitted {
			t.Fatalf("Admit on a Redis Cluster = %+v, %v", a, err)
		}
		var slot int64 = -1
		for _, k := range []string{"live", "owner", "user", "info"} {
			s, err := raw.ClusterKeySlot(ctx, prefix+"prs:{"+app+"}:"+k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if slot >= 0 && s != slot {
				t.Fatalf("app %s's keys in slots %d and %d", app, slot, s)
			}
			slot = s
		}
		slots[slot] = true
	}
	if len(slots) < 10 {
		t.Fatalf("20 apps in %d slots: the hash tag is not the app", len(slots))
	}
}

// roundTrips is a go-redis hook that counts what a client sends: round trips (a command,
// or a pipeline, sent and answered) and the commands in them.
type roundTrips struct {
	mu             sync.Mutex
	trips, command int
}

func (c *roundTrips) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (c *roundTrips) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		c.mu.Lock()
		c.trips++
		c.command++
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (c *roundTrips) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		c.mu.Lock()
		c.trips++
		c.command += len(cmds)
		c.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (c *roundTrips) take() (trips, commands int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	trips, commands = c.trips, c.command
	c.trips, c.command = 0, 0
	return trips, commands
}

// renewalLoad is the presence of apps×perApp sockets, renewed the way core/realtime did
// before Presence (PutLeases: a value and two set members per socket) and with Presence.Renew.
type renewalLoad struct {
	apps, perApp int
}

func (l renewalLoad) app(i int) string { return fmt.Sprintf("app-%d", i) }

func (l renewalLoad) leases(app int) ([]cluster.Lease, []cluster.SocketLease) {
	old := make([]cluster.Lease, l.perApp)
	now := make([]cluster.SocketLease, l.perApp)
	for j := range l.perApp {
		id, user := fmt.Sprintf("s-%d-%d", app, j), fmt.Sprintf("u-%d", j)
		old[j] = cluster.Lease{Key: "wsc:" + id, Value: []byte(`{"id":"` + id + `","status":"online"}`), Member: id,
			Sets: []string{"wsa:" + l.app(app), "wsu:" + l.app(app) + ":" + user}, TTL: 30 * time.Second}
		now[j] = cluster.SocketLease{ID: id, User: user}
	}
	return old, now
}

// renewOld renews every socket with PutLeases (one pipeline per app) and renewNew with
// Renew (one script call per app).
func (l renewalLoad) renewOld(t testing.TB, e *kwredis.Engine) {
	for i := range l.apps {
		old, _ := l.leases(i)
		if err := e.PutLeases(context.Background(), old); err != nil {
			t.Fatal(err)
		}
	}
}

func (l renewalLoad) renewNew(t testing.TB, e *kwredis.Engine, ttl time.Duration) {
	for i := range l.apps {
		_, now := l.leases(i)
		if _, err := e.Renew(context.Background(), l.app(i), now, ttl); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPresenceRenewalRoundTrips: a renewal costs one round trip and one command per app
// whatever its number of sockets; the PutLeases it replaces cost one round trip and three
// commands per socket. The figures per socket per minute are logged (go test -v).
func TestPresenceRenewalRoundTrips(t *testing.T) {
	e := newEngine(t, testenv.RedisURL(t))
	counter := &roundTrips{}
	e.AddHook(counter)
	load := renewalLoad{apps: 4, perApp: 50}
	sockets := load.apps * load.perApp
	// First calls load the scripts (EVALSHA answered NOSCRIPT, then EVAL): not counted.
	load.renewOld(t, e)
	load.renewNew(t, e, 10*time.Second)
	counter.take()

	load.renewOld(t, e)
	oldTrips, oldCmds := counter.take()
	load.renewNew(t, e, 10*time.Second)
	newTrips, newCmds := counter.take()
	if oldTrips != load.apps || oldCmds != 3*sockets {
		t.Fatalf("PutLeases renewal: %d round trips, %d commands; want %d and %d", oldTrips, oldCmds, load.apps, 3*sockets)
	}
	if newTrips != load.apps || newCmds != load.apps {
		t.Fatalf("Presence renewal: %d round trips, %d commands; want %d each (one per app)", newTrips, newCmds, load.apps)
	}
	// Before: a 30 s lease renewed every 10 s (6 a minute); after: a 10 s lease renewed
	// every 10/3 s (18 a minute).
	perMin := func(v, renewalsPerMin int) float64 { return float64(v*renewalsPerMin) / float64(sockets) }
	t.Logf("%d apps × %d sockets: before (PutLeases, 30 s lease) %.2f round trips and %.1f commands per socket per minute; "+
		"after (Renew, 10 s lease) %.2f round trips and %.2f commands per socket per minute",
		load.apps, load.perApp, perMin(oldTrips, 6), perMin(oldCmds, 6), perMin(newTrips, 18), perMin(newCmds, 18))
}

// commandCalls reads INFO commandstats: the commands Redis ran, those run by scripts
// included, by name.
func commandCalls(t testing.TB, raw *goredis.Client) map[string]int {
	t.Helper()
	info, err := raw.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, _ := strconv.Atoi(calls)
		out[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return out
}

// BenchmarkPresenceRenewal reports what renewing the presence of 40 apps × 50 sockets costs
// Redis, per socket per minute: round trips and commands sent (counted by a hook on the
// client), and commands Redis ran, those inside scripts included (INFO commandstats; run
// it alone on its Redis, as the figure is server-wide). "before" is PutLeases with the
// 30 s lease core/realtime used, "after" Presence.Renew with a 10 s lease. Run:
//
//	bash deploy/testenv.sh go test -run '^$' -bench PresenceRenewal -benchtime 20x ./cluster/redis/
func BenchmarkPresenceRenewal(b *testing.B) {
	url := testenv.RedisURL(b)
	raw := rawClient(b, url)
	load := renewalLoad{apps: 40, perApp: 50}
	sockets := float64(load.apps * load.perApp)
	for _, c := range []struct {
		name           string
		renewalsPerMin int
		renew          func(e *kwredis.Engine)
	}{
		{"before=PutLeases-30s", 6, func(e *kwredis.Engine) { load.renewOld(b, e) }},
		{"after=Renew-10s", 18, func(e *kwredis.Engine) { load.renewNew(b, e, 10*time.Second) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := newEngine(b, url)
			counter := &roundTrips{}
			e.AddHook(counter)
			c.renew(e) // loads the script
			counter.take()
			before := commandCalls(b, raw)
			b.ResetTimer()
			for range b.N {
				c.renew(e)
			}
			b.StopTimer()
			after := commandCalls(b, raw)
			ran := 0
			for name, n := range after {
				if name != "info" {
					ran += n - before[name]
				}
			}
			trips, cmds := counter.take()
			scale := float64(c.renewalsPerMin) / float64(b.N) / sockets
			b.ReportMetric(float64(trips)*scale, "trips/socket/min")
			b.ReportMetric(float64(cmds)*scale, "sent/socket/min")
			b.ReportMetric(float64(ran)*scale, "ran/socket/min")
		})
	}
}
