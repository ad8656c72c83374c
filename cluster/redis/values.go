package redis

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// checkTTL rejects a ttl below Redis's unit of a millisecond.
func checkTTL(op string, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("cluster/redis: %s: ttl %v is below 1ms", op, ttl)
	}
	return nil
}

func checkName(op, what, name string) error {
	if name == "" {
		return fmt.Errorf("cluster/redis: %s: empty %s", op, what)
	}
	return nil
}

// ms rounds ttl up to whole milliseconds (Redis's unit): nothing dies early.
func ms(ttl time.Duration) time.Duration {
	return (ttl + time.Millisecond - 1).Truncate(time.Millisecond)
}

// SetValue implements cluster.Values with SET PX.
func (e *Engine) SetValue(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := errors.Join(checkName("set value", "key", key), checkTTL("set value", ttl)); err != nil {
		return err
	}
	if value == nil {
		value = []byte{} // go-redis would send a nil slice as "", but say so
	}
	return e.wrap(ctx, "set value", e.client.Set(ctx, e.prefix+"val:"+key, value, ms(ttl)).Err())
}

// getValueScript answers a value and its PTTL in one step, so the key cannot expire between
// the two.
var getValueScript = goredis.NewScript(`local v = redis.call('GET', KEYS[1])
if not v then return false end
return {v, redis.call('PTTL', KEYS[1])}`)

// GetValue implements cluster.Values with getValueScript.
func (e *Engine) GetValue(ctx context.Context, key string) ([]byte, time.Duration, bool, error) {
	if err := checkName("get value", "key", key); err != nil {
		return nil, 0, false, err
	}
	res, err := getValueScript.Run(ctx, e.client, []string{e.prefix + "val:" + key}).Slice()
	if errors.Is(err, goredis.Nil) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, e.wrap(ctx, "get value", err)
	}
	if len(res) != 2 {
		return nil, 0, false, fmt.Errorf("cluster/redis: get value: script returned %d values, want 2", len(res))
	}
	v, ok1 := res[0].(string)
	pttl, ok2 := res[1].(int64)
	if !ok1 || !ok2 {
		return nil, 0, false, fmt.Errorf("cluster/redis: get value: script returned %T, %T", res[0], res[1])
	}
	// PTTL is -1 for a key without expiry, which this engine never writes; say 0 rather
	// than a negative time left.
	return []byte(v), time.Duration(max(pttl, 0)) * time.Millisecond, true, nil
}

// TouchValue implements cluster.Values with PEXPIRE XX: Redis answers 0 for a key that is
// absent or expired, and does not create it.
func (e *Engine) TouchValue(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if err := errors.Join(checkName("touch value", "key", key), checkTTL("touch value", ttl)); err != nil {
		return false, err
	}
	// go-redis has no PExpireXX; the generic command keeps milliseconds.
	n, err := e.client.Do(ctx, "pexpire", e.prefix+"val:"+key, ms(ttl).Milliseconds(), "xx").Int64()
	if err != nil {
		return false, e.wrap(ctx, "touch value", err)
	}
	return n == 1, nil
}

// DeleteValue implements cluster.Values with DEL, which does not count an expired key.
func (e *Engine) DeleteValue(ctx context.Context, key string) (bool, error) {
	if err := checkName("delete value", "key", key); err != nil {
		return false, err
	}
	n, err := e.client.Del(ctx, e.prefix+"val:"+key).Result()
	if err != nil {
		return false, e.wrap(ctx, "delete value", err)
	}
	return n == 1, nil
}

//go:embed sets.lua
var setsLua string

// setsScript runs every ExpiringSets operation (sets.lua).
var setsScript = goredis.NewScript(setsLua)

// AddMember implements cluster.ExpiringSets with sets.lua. With a limit, the members other
// than the one just added are evicted soonest-expiring first, so the new member is kept even
// when an older one was given a longer ttl.
func (e *Engine) AddMember(ctx context.Context, set, member string, ttl time.Duration, limit int) error {
	if err := errors.Join(checkName("add member", "set", set), checkTTL("add member", ttl)); err != nil {
		return err
	}
	// Microseconds, rounded up: a member never dies early.
	us := (ttl + time.Microsecond - 1) / time.Microsecond
	err := setsScript.Run(ctx, e.client, []string{e.prefix + "set:" + set}, "add", member, int64(us), max(limit, 0)).Err()
	return e.wrap(ctx, "add member", err)
}

// TakeMember implements cluster.ExpiringSets with sets.lua.
func (e *Engine) TakeMember(ctx context.Context, set, member string) (bool, error) {
	if err := checkName("take member", "set", set); err != nil {
		return false, err
	}
	n, err := setsScript.Run(ctx, e.client, []string{e.prefix + "set:" + set}, "take", member).Int64()
	if err != nil {
		return false, e.wrap(ctx, "take member", err)
	}
	return n == 1, nil
}

// Members implements cluster.ExpiringSets with sets.lua.
func (e *Engine) Members(ctx context.Context, set string) ([]string, error) {
	if err := checkName("members", "set", set); err != nil {
		return nil, err
	}
	m, err := setsScript.Run(ctx, e.client, []string{e.prefix + "set:" + set}, "members").StringSlice()
	if err != nil {
		return nil, e.wrap(ctx, "members", err)
	}
	return m, nil
}

// CountMembers implements cluster.ExpiringSets with sets.lua.
func (e *Engine) CountMembers(ctx context.Context, set string) (int, error) {
	if err := checkName("count members", "set", set); err != nil {
		return 0, err
	}
	n, err := setsScript.Run(ctx, e.client, []string{e.prefix + "set:" + set}, "count").Int64()
	if err != nil {
		return 0, e.wrap(ctx, "count members", err)
	}
	return int(n), nil
}

// AcquireMember implements cluster.Leases with sets.lua: the check and the add are one
// script, so concurrent acquirers on every node see each other.
func (e *Engine) AcquireMember(ctx context.Context, set, member string, ttl time.Duration, limit int) (bool, error) {
	if err := errors.Join(checkName("acquire member", "set", set), checkTTL("acquire member", ttl)); err != nil {
		return false, err
	}
	if limit <= 0 {
		return false, fmt.Errorf("cluster: acquire member: limit must be positive, got %d", limit)
	}
	us := (ttl + time.Microsecond - 1) / time.Microsecond
	n, err := setsScript.Run(ctx, e.client, []string{e.prefix + "set:" + set}, "acquire", member, int64(us), limit).Int64()
	if err != nil {
		return false, e.wrap(ctx, "acquire member", err)
	}
	return n == 1, nil
}
