package clusterproof_test

import (
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/testenv"
)

// arrival is a frame a timed socket read, and when.
type arrival struct {
	typ, message string
	at           time.Time
}

// timedSocket opens p's client socket on nd and answers the frames it reads with their
// time of arrival, once the socket is admitted (its ping answered).
func timedSocket(t *testing.T, nd *node, p program) <-chan arrival {
	t.Helper()
	conn, _, err := dialClient(nd, p)
	if err != nil {
		t.Fatalf("socket on %s: %v", nd.name, err)
	}
	t.Cleanup(func() { conn.Close() })
	out := make(chan arrival, 1024)
	go func() {
		defer close(out)
		for {
			_, raw, err := conn.ReadMessage()
			if err != nil {
				return
			}
			at := time.Now()
			var m struct {
				Type string `json:"type"`
				Data struct {
					Message string `json:"message"`
				} `json:"data"`
			}
			_ = json.Unmarshal(raw, &m)
			out <- arrival{typ: m.Type, message: m.Data.Message, at: at}
		}
	}()
	if err := conn.WriteJSON(map[string]string{"type": "ping"}); err != nil {
		t.Fatal(err)
	}
	for a := range out {
		switch a.typ {
		case "pong":
			return out
		case "force_logout":
			t.Fatalf("socket on %s refused", nd.name)
		}
	}
	t.Fatalf("socket on %s closed before its pong", nd.name)
	return nil
}

// TestCrossNodeDeliveryFigure measures, over Redis with three keyward processes, the time
// from an owner's broadcast REST call on node A to the frame read by a client socket on
// A (same node), B and C (other nodes): rounds one after another, p50 and p99 logged.
// It is a figure, not a timed assertion: it fails only when a frame is lost. `make test`
// runs 30 rounds (every frame still checked); KEYWARD_TEST_DELIVERY_ROUNDS sets more for the
// figure (`make bench-sockets` runs 200).
func TestCrossNodeDeliveryFigure(t *testing.T) {
	rounds := 30
	if v, err := strconv.Atoi(os.Getenv("KEYWARD_TEST_DELIVERY_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	c := newCluster(t, 3, testenv.RedisURL(t))
	appID, secret := c.newApp("Figures")
	progs := c.crowd(secret, "f", 3)
	socks := make([]<-chan arrival, 3)
	for i, nd := range c.nodes {
		socks[i] = timedSocket(t, nd, progs[i])
	}
	took := make([][]time.Duration, 3)
	var rest []time.Duration
	base := "/api/apps/" + appID + "/ws/broadcast"
	for r := range rounds {
		msg := "round " + strings.Repeat("x", r%7) + string(rune('a'+r%26))
		start := time.Now()
		c.owner(c.nodes[0], "POST", base, map[string]string{"message": msg}).data(200)
		rest = append(rest, time.Since(start))
		for i, s := range socks {
			for a := range s {
				if a.typ == "message" && a.message == msg {
					took[i] = append(took[i], a.at.Sub(start))
					break
				}
			}
			if len(took[i]) != r+1 {
				t.Fatalf("round %d: the socket on %s lost the broadcast", r, c.nodes[i].name)
			}
		}
	}
	pct := func(d []time.Duration, p float64) string {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[int(p*float64(len(s)-1))].Round(10 * time.Microsecond).String()
	}
	t.Logf("%d broadcasts from node A, REST call to frame read: same node A p50 %s p99 %s; node B p50 %s p99 %s; node C p50 %s p99 %s (the REST call alone: p50 %s p99 %s)",
		rounds, pct(took[0], .5), pct(took[0], .99), pct(took[1], .5), pct(took[1], .99), pct(took[2], .5), pct(took[2], .99), pct(rest, .5), pct(rest, .99))
}
