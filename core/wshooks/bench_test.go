package wshooks_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/core/realtime"
	"github.com/keyward/keyward/core/wshooks"
	"github.com/keyward/keyward/hooks"
)

// benchPipeline is the most an app may have: 20 hooks of 5 conditions (one of each
// operator, nested fields), each with one respond action.
func benchPipeline(b *testing.B) *hooks.Pipeline {
	list := make([]hooks.Hook, hooks.MaxHooksPerApp)
	for i := range list {
		list[i] = hooks.Hook{ID: fmt.Sprint("h", i), Name: fmt.Sprint("hook ", i), Event: "join_room", Enabled: true, Priority: i,
			Conditions: []hooks.Condition{
				{Field: "data.room", Operator: hooks.OpEq, Value: "lobby"},
				{Field: "data.level", Operator: hooks.OpNeq, Value: 3.0},
				{Field: "message", Operator: hooks.OpContains, Value: "hello"},
				{Field: "data.tags", Operator: hooks.OpContains, Value: "vip"},
				{Field: "data.meta.client", Operator: hooks.OpExists},
			},
			Actions: []hooks.Action{{Type: hooks.ActionRespond, Message: "welcome {{username}} to {{data.room}}"}}}
	}
	p, err := hooks.Compile(list)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkClientMessageThroughAppActor: client messages planned through one AppActor
// holding 20 hooks × 5 conditions: each message asks the actor for its pipeline (a
// request to the actor and its answer) and evaluates every hook. "match": all 20 hooks
// match (20 actions per message); "no-match": the first condition of each fails.
// Parallel: the sockets of an app send at the same moment. msgs/s is the figure.
func BenchmarkClientMessageThroughAppActor(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := benchPipeline(b)
	dir := app.NewApps(func(context.Context, string) (*hooks.Pipeline, error) { return p, nil }, app.AppsConfig{Log: log})
	b.Cleanup(dir.Close)
	svc := wshooks.New(nil, anyOwner{}, dir.Plan, invalidates(dir.Invalidate), nil, log)
	for _, tc := range []struct {
		name  string
		room  string
		steps int
	}{{"match", "lobby", hooks.MaxHooksPerApp}, {"no-match", "hall", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				in := realtime.HookInput{Type: "join_room", UserID: "u1", Username: "alice", IP: "203.0.113.7",
					Fields: map[string]any{"type": "join_room", "message": "hello there",
						"data": map[string]any{"room": tc.room, "level": 5.0, "tags": []any{"new", "vip"},
							"meta": map[string]any{"client": "desktop"}}}}
				for pb.Next() {
					out, err := svc.Plan(ctx, "app", in)
					if err != nil || len(out) != tc.steps {
						b.Errorf("%d actions, %v; want %d", len(out), err, tc.steps)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
