package redis

import (
	"context"
	"errors"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/keyward/keyward/cluster"
)

// GetValues implements cluster.Batches with one MGET, or on a Redis Cluster one pipeline
// of GETs: the keys (sessions of many users) lie in many hash slots, which one MGET may not
// span, and go-redis sends a pipeline's commands to their slots' masters, one batch per
// master, in parallel.
func (e *Engine) GetValues(ctx context.Context, keys []string) ([][]byte, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	full := make([]string, len(keys))
	for i, k := range keys {
		if err := checkName("get values", "key", k); err != nil {
			return nil, err
		}
		full[i] = e.prefix + "val:" + k
	}
	if e.cluster {
		return e.getValuesPipelined(ctx, full)
	}
	res, err := e.client.MGet(ctx, full...).Result()
	if err != nil {
		return nil, e.wrap(ctx, "get values", err)
	}
	out := make([][]byte, len(keys))
	for i, v := range res {
		if s, ok := v.(string); ok {
			out[i] = []byte(s)
		}
	}
	return out, nil
}

// getValuesPipelined answers GetValues on a Redis Cluster, the full key names given.
func (e *Engine) getValuesPipelined(ctx context.Context, full []string) ([][]byte, error) {
	cmds := make([]*goredis.StringCmd, len(full))
	_, err := e.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, k := range full {
			cmds[i] = p.Get(ctx, k)
		}
		return nil
	})
	// A missing key is a goredis.Nil reply, which Pipelined also returns as its error.
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, e.wrap(ctx, "get values", err)
	}
	out := make([][]byte, len(full))
	for i, c := range cmds {
		v, err := c.Bytes()
		switch {
		case errors.Is(err, goredis.Nil):
		case err != nil:
			return nil, e.wrap(ctx, "get values", err)
		default:
			out[i] = v
		}
	}
	return out, nil
}

// PutLeases implements cluster.Batches: one pipeline of SET PX and sets.lua adds. The
// script runs by its hash; when Redis does not know it (a restart), it is loaded and the
// pipeline sent once more (every command of it is idempotent).
func (e *Engine) PutLeases(ctx context.Context, leases []cluster.Lease) error {
	if len(leases) == 0 {
		return nil
	}
	for _, l := range leases {
		if err := checkTTL("put leases", l.TTL); err != nil {
			return err
		}
		for _, set := range l.Sets {
			if err := checkName("put leases", "set", set); err != nil {
				return err
			}
		}
	}
	send := func() error {
		_, err := e.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for _, l := range leases {
				if l.Key != "" {
					v := l.Value
					if v == nil {
						v = []byte{}
					}
					p.Set(ctx, e.prefix+"val:"+l.Key, v, ms(l.TTL))
				}
				us := int64((l.TTL + time.Microsecond - 1) / time.Microsecond)
				for _, set := range l.Sets {
					setsScript.EvalSha(ctx, p, []string{e.prefix + "set:" + set}, "add", l.Member, us, 0)
				}
			}
			return nil
		})
		return err
	}
	err := send()
	if err != nil && goredis.HasErrorPrefix(err, "NOSCRIPT") {
		if lerr := setsScript.Load(ctx, e.client).Err(); lerr != nil {
			return e.wrap(ctx, "put leases", errors.Join(err, lerr))
		}
		err = send()
	}
	return e.wrap(ctx, "put leases", err)
}
