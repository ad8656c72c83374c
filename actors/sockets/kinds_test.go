package sockets

import (
	"fmt"
	"slices"
	"testing"

	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/core/client"
)

// TestDeliveriesKeepTheirOrderPerSocket: a client socket takes its deliveries from its
// app's actor in the bus's order, whether a broadcast's shared frame or a delivery for
// its user; a delivery for the dashboards reaches only the dashboard, and one for a user
// only that user; a kick's close comes after its message and nothing is written after it.
func TestDeliveriesKeepTheirOrderPerSocket(t *testing.T) {
	onEachEngine(t, testDeliveriesKeepTheirOrderPerSocket)
}

func testDeliveriesKeepTheirOrderPerSocket(t *testing.T, twoNodes pair) {
	known := sessions{"tok-u1": user("u1"), "tok-u2": user("u2")}
	a, b := twoNodes(t, known)
	ctx := t.Context()
	p1, p2, dash := &recorder{}, &recorder{}, &recorder{}
	if _, err := a.ConnectClient(ctx, client.Caller{IP: "192.0.2.1"}, "tok-u1", p1); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ConnectClient(ctx, client.Caller{IP: "192.0.2.2"}, "tok-u2", p2); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ConnectDashboard(ctx, "app", dash); err != nil {
		t.Fatal(err)
	}
	dashBefore := len(dash.types())

	// Published from node B, alternately to every client and to u1 alone.
	const rounds = 20
	var want1, want2 []string
	for i := range rounds {
		if _, err := b.Broadcast(ctx, "app", fmt.Sprintf("all %d", i), ""); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Chat(ctx, "app", "u1", fmt.Sprintf("u1 %d", i)); err != nil {
			t.Fatal(err)
		}
		want1 = append(want1, fmt.Sprintf("all %d", i), fmt.Sprintf("u1 %d", i))
		want2 = append(want2, fmt.Sprintf("all %d", i))
	}
	if _, err := b.Kick(ctx, "app", "u1", "enough"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Broadcast(ctx, "app", "after the kick", ""); err != nil {
		t.Fatal(err)
	}
	want2 = append(want2, "after the kick")
	waitUntil(t, "u2's deliveries", func() bool { return len(p2.types()) == len(want2) })
	waitUntil(t, "u1's close", func() bool { return p1.closedWith() == wire.CodeKicked })

	texts := func(r *recorder) []string {
		r.mu.Lock()
		defer r.mu.Unlock()
		var out []string
		for _, m := range r.msgs {
			data, _ := m["data"].(map[string]any)
			s, _ := data["message"].(string)
			if m["type"] == wire.TypeForceLogout {
				s = "force_logout " + fmt.Sprint(data["reason"])
			}
			out = append(out, s)
		}
		return out
	}
	if got := texts(p1); !slices.Equal(got, append(want1, "force_logout enough")) {
		t.Fatalf("u1 read, in this order:\n%q", got)
	}
	if got := texts(p2); !slices.Equal(got, want2) {
		t.Fatalf("u2 read, in this order:\n%q", got)
	}
	if got := dash.types()[dashBefore:]; slices.Contains(got, wire.TypeMessage) || slices.Contains(got, wire.TypeChat) {
		t.Fatalf("the dashboard got the clients' deliveries: %v", got)
	}
}
