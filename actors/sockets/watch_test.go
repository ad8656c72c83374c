package sockets

import (
	"testing"

	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/core/client"
)

// heard answers whether the socket was sent a message of type typ about user userID.
func (r *recorder) heard(typ, userID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.msgs {
		if m["type"] != typ {
			continue
		}
		if data, _ := m["data"].(map[string]any); data != nil && data["userId"] == userID {
			return true
		}
	}
	return false
}

// TestSessionNewsOnlyWhenWatched: a client socket's coming and going (session_connect,
// session_disconnect) is published only while a dashboard of its app is open on some
// node; a dashboard on another node hears of every socket, also after the app's mark had
// lapsed and the dashboard's node renewed it with its leases.
func TestSessionNewsOnlyWhenWatched(t *testing.T) { onEachEngine(t, testSessionNewsOnlyWhenWatched) }

func testSessionNewsOnlyWhenWatched(t *testing.T, twoNodes pair) {
	a, b := twoNodes(t, sessions{"tok-u1": user("u1"), "tok-u2": user("u2"), "tok-u3": user("u3")})
	ctx := t.Context()
	caller := client.Caller{IP: "192.0.2.1"}

	// No dashboard anywhere: a connect and a disconnect publish nothing.
	before, _ := a.Traffic()
	c1, err := a.ConnectClient(ctx, caller, "tok-u1", &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	a.DisconnectClient(c1)
	if got, _ := a.Traffic(); got != before {
		t.Fatalf("node a published %d bus messages for a socket no dashboard watches", got-before)
	}

	// A dashboard on node b hears of node a's sockets.
	dash := &recorder{}
	d, err := b.ConnectDashboard(ctx, "app", dash)
	if err != nil {
		t.Fatal(err)
	}
	defer b.DisconnectDashboard(d)
	c2, err := a.ConnectClient(ctx, caller, "tok-u2", &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "session_connect of u2 at node b's dashboard", func() bool { return dash.heard(wire.TypeSessionConnect, "u2") })

	// The mark lapses (as when its ttl runs out); node b's app actor marks the app again
	// with its renewal, and the next socket is heard of.
	if _, err := a.marks().DeleteValue(ctx, watchKeyPrefix+"app"); err != nil {
		t.Fatal(err)
	}
	if err := b.reg.RenewNow(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	c3, err := a.ConnectClient(ctx, caller, "tok-u3", &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "session_connect of u3 at node b's dashboard", func() bool { return dash.heard(wire.TypeSessionConnect, "u3") })
	a.DisconnectClient(c2)
	waitUntil(t, "session_disconnect of u2 at node b's dashboard", func() bool { return dash.heard(wire.TypeSessionDisconnect, "u2") })
	a.DisconnectClient(c3)
	waitUntil(t, "session_disconnect of u3 at node b's dashboard", func() bool { return dash.heard(wire.TypeSessionDisconnect, "u3") })
}
