package redis

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/keyward/keyward/cluster"
)

//go:embed presence.lua
var presenceLua string

// presenceScript runs every Presence call in one round trip, with EVALSHA falling back to
// EVAL when Redis does not know it yet.
var presenceScript = goredis.NewScript(presenceLua)

// presenceKeys are an app's four presence keys (presence.lua), the app in one hash tag so
// that a Redis Cluster keeps them in one slot.
func (e *Engine) presenceKeys(app string) []string {
	base := e.prefix + "prs:{" + app + "}:"
	return []string{base + "live", base + "owner", base + "user", base + "info"}
}

// us is ttl in whole microseconds, rounded up: nothing dies early.
func us(ttl time.Duration) int64 { return int64((ttl + time.Microsecond - 1) / time.Microsecond) }

// Admit implements cluster.Presence with presence.lua.
func (e *Engine) Admit(ctx context.Context, app string, s cluster.PresentSocket, ttl time.Duration, limit int) (cluster.Admission, error) {
	err := errors.Join(checkName("admit", "app", app), checkName("admit", "socket", s.ID), checkName("admit", "user", s.User), checkTTL("admit", ttl))
	if err == nil && limit <= 0 {
		err = fmt.Errorf("cluster/redis: admit: limit must be positive, got %d", limit)
	}
	if err != nil {
		return cluster.Admission{}, err
	}
	res, err := presenceScript.Run(ctx, e.client, e.presenceKeys(app), "admit", s.ID, s.User, us(ttl), limit, s.Info).Slice()
	if err != nil {
		return cluster.Admission{}, e.wrap(ctx, "admit", err)
	}
	if len(res) == 0 {
		return cluster.Admission{}, fmt.Errorf("cluster/redis: admit: script returned nothing")
	}
	var a cluster.Admission
	a.Admitted = res[0] == int64(1)
	if len(res) > 1 {
		a.Replaced, _ = res[1].(string)
	}
	return a, nil
}

// Renew implements cluster.Presence with presence.lua: one script call for every socket of
// the app.
func (e *Engine) Renew(ctx context.Context, app string, sockets []cluster.SocketLease, ttl time.Duration) (cluster.Renewal, error) {
	err := errors.Join(checkName("renew", "app", app), checkTTL("renew", ttl))
	for _, s := range sockets {
		err = errors.Join(err, checkName("renew", "socket", s.ID), checkName("renew", "user", s.User))
	}
	if err != nil || len(sockets) == 0 {
		return cluster.Renewal{}, err
	}
	args := make([]any, 0, 2+2*len(sockets))
	args = append(args, "renew", us(ttl))
	for _, s := range sockets {
		args = append(args, s.ID, s.User)
	}
	res, err := presenceScript.Run(ctx, e.client, e.presenceKeys(app), args...).Slice()
	if err != nil {
		return cluster.Renewal{}, e.wrap(ctx, "renew", err)
	}
	if len(res) != 2 {
		return cluster.Renewal{}, fmt.Errorf("cluster/redis: renew: script returned %d values, want 2", len(res))
	}
	return cluster.Renewal{Restored: stringList(res[0]), Superseded: stringList(res[1])}, nil
}

// stringList reads a script's array of strings.
func stringList(v any) []string {
	list, _ := v.([]any)
	if len(list) == 0 {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Release implements cluster.Presence with presence.lua.
func (e *Engine) Release(ctx context.Context, app string, ids ...string) (int, error) {
	if err := checkName("release", "app", app); err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	args := make([]any, 0, 1+len(ids))
	args = append(args, "release")
	for _, id := range ids {
		args = append(args, id)
	}
	n, err := presenceScript.Run(ctx, e.client, e.presenceKeys(app), args...).Int()
	if err != nil {
		return 0, e.wrap(ctx, "release", err)
	}
	return n, nil
}

// Describe implements cluster.Presence with presence.lua.
func (e *Engine) Describe(ctx context.Context, app, id string, info []byte) (bool, error) {
	if err := errors.Join(checkName("describe", "app", app), checkName("describe", "socket", id)); err != nil {
		return false, err
	}
	n, err := presenceScript.Run(ctx, e.client, e.presenceKeys(app), "describe", id, info).Int()
	if err != nil {
		return false, e.wrap(ctx, "describe", err)
	}
	return n == 1, nil
}

// Count implements cluster.Presence with presence.lua.
func (e *Engine) Count(ctx context.Context, app string) (int, error) {
	if err := checkName("count", "app", app); err != nil {
		return 0, err
	}
	n, err := presenceScript.Run(ctx, e.client, e.presenceKeys(app), "count").Int()
	if err != nil {
		return 0, e.wrap(ctx, "count", err)
	}
	return n, nil
}

// List implements cluster.Presence with presence.lua.
func (e *Engine) List(ctx context.Context, app string) ([]cluster.PresentSocket, error) {
	if err := checkName("list", "app", app); err != nil {
		return nil, err
	}
	flat, err := presenceScript.Run(ctx, e.client, e.presenceKeys(app), "list").Slice()
	if err != nil {
		return nil, e.wrap(ctx, "list", err)
	}
	if len(flat)%3 != 0 {
		return nil, fmt.Errorf("cluster/redis: list: script returned %d values, not triples", len(flat))
	}
	out := make([]cluster.PresentSocket, 0, len(flat)/3)
	for i := 0; i < len(flat); i += 3 {
		id, _ := flat[i].(string)
		user, _ := flat[i+1].(string)
		p := cluster.PresentSocket{ID: id, User: user}
		if info, ok := flat[i+2].(string); ok && info != "" {
			p.Info = []byte(info)
		}
		out = append(out, p)
	}
	return out, nil
}

// SocketOf implements cluster.Presence with presence.lua.
func (e *Engine) SocketOf(ctx context.Context, app, user string) (string, bool, error) {
	if err := errors.Join(checkName("socket of", "app", app), checkName("socket of", "user", user)); err != nil {
		return "", false, err
	}
	id, err := presenceScript.Run(ctx, e.client, e.presenceKeys(app), "socketof", user).Text()
	if errors.Is(err, goredis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, e.wrap(ctx, "socket of", err)
	}
	return id, true, nil
}
