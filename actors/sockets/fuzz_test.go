package sockets

import (
	"testing"

	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/cluster/memory"
	"github.com/keyward/keyward/core/client"
)

// fuzzSeeds are socket frames of every inbound type, well and badly formed.
var fuzzSeeds = []string{
	`{"type":"ping"}`, `{"type":"set_status","status":"away"}`, `{"type":"set_status","data":{"status":7}}`,
	`{"type":"chat","message":"hi"}`, `{"type":"chat","data":{"message":["x"]}}`, `{"type":"typing","typing":true}`,
	`{"type":"typing","data":{"typing":"yes"}}`, `{"type":"set_metadata","metadata":{"a":1,"b":"x","c":null,"d":true}}`,
	`{"type":"set_metadata","metadata":{"":{}}}`, `{"type":"set_metadata","metadata":[1]}`,
	`{"type":"game_event","data":{"room":"lobby"}}`, `{"type":"custom","message":{"deep":[[[]]]}}`,
	`{"type":"get_online"}`, `{"type":"get_sessions"}`, `{"type":"chat","userId":"u1","message":"hello"}`,
	`{"type":"push_json","userId":"u1","payload":{"a":1}}`, `{"type":"push_json","payload":"x"}`,
	`{"type":"typing","userId":"u1","typing":false}`, `{"type":"kick","userId":"nobody","reason":"r"}`,
	`{"type":"ban","userId":""}`, `{"type":"command","userId":"u1","command":"reload","payload":{}}`,
	`{"type":"command","command":""}`, `{"type":"set_filters","events":["chat","status"]}`,
	`{"type":"set_filters","events":[1,2]}`, `{"type":"set_filters","events":"chat"}`,
	``, `null`, `[]`, `"ping"`, `{}`, `{"type":null}`, `{"type":1e400}`, `{"type":"ping"}{"type":"ping"}`,
	`{"type":"\u0000"}`, "{\"type\":\"\xff\"}", `{"type":"ping","type":"chat"}`, `{"type":"set_status","status":"` + string(make([]byte, 40)) + `"}`,
}

// FuzzSocketMessage sends arbitrary frames through the decoder and the handlers of both
// channels (a client socket and a dashboard of one app on the memory engine): no panic,
// every frame the server sends is a JSON object with a string type (the recorder panics
// otherwise), and a frame the decoder refuses is answered with exactly one error.
func FuzzSocketMessage(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	e := memory.New(memory.Config{})
	f.Cleanup(func() { e.Close() })
	known := sessions{"tok-u1": user("u1")}
	svc := New(Deps{Engine: e, Sessions: known})
	if err := svc.Start(f.Context()); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(svc.Close)
	f.Fuzz(func(t *testing.T, raw []byte) {
		in, ok := wire.Decode(raw)
		if ok {
			if in.Type == "" || in.Fields == nil {
				t.Fatalf("decode accepted %q without a type", raw)
			}
			in.Str("message")
			in.Member("userId")
		}
		cp, dp := &recorder{}, &recorder{}
		c, err := svc.ConnectClient(t.Context(), client.Caller{IP: "192.0.2.1"}, "tok-u1", cp)
		if err != nil {
			t.Fatal(err)
		}
		defer svc.DisconnectClient(c)
		d, err := svc.ConnectDashboard(t.Context(), "app", dp)
		if err != nil {
			t.Fatal(err)
		}
		defer svc.DisconnectDashboard(d)
		svc.ClientMessage(t.Context(), c, raw)
		svc.DashboardMessage(t.Context(), d, raw)
		if !ok {
			for _, p := range []*recorder{cp, dp} {
				// A dashboard is also sent its opening online_count and sessions, and events.
				if got := p.types(); countOf(got, wire.TypeError) != 1 {
					t.Fatalf("refused frame %q answered %v", raw, got)
				}
			}
		}
		if cp.closedWith() != 0 && !ok {
			t.Fatalf("a malformed frame closed the socket")
		}
	})
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}
