package memory

import (
	"context"
	"errors"
	"fmt"
	"time"
)

type value struct {
	data    []byte
	expires time.Duration // a stamp (Engine.stamp)
}

// checkTTL rejects a ttl below Redis's unit, as PutToken does; both engines agree on it.
func checkTTL(op string, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("cluster/memory: %s: ttl %v is below 1ms", op, ttl)
	}
	return nil
}

func checkName(op, what, name string) error {
	if name == "" {
		return fmt.Errorf("cluster/memory: %s: empty %s", op, what)
	}
	return nil
}

// SetValue implements cluster.Values. The engine keeps its own copy of value.
func (e *Engine) SetValue(_ context.Context, key string, v []byte, ttl time.Duration) error {
	if err := errors.Join(checkName("set value", "key", key), checkTTL("set value", ttl)); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errClosed
	}
	e.values[key] = value{data: append([]byte{}, v...), expires: e.stamp(e.now()) + ttl}
	return nil
}

// GetValue implements cluster.Values; the answer is a copy the caller may modify.
func (e *Engine) GetValue(_ context.Context, key string) ([]byte, time.Duration, bool, error) {
	if err := checkName("get value", "key", key); err != nil {
		return nil, 0, false, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, 0, false, errClosed
	}
	v, ok := e.liveValue(key)
	if !ok {
		return nil, 0, false, nil
	}
	return append([]byte{}, v.data...), v.expires - e.stamp(e.now()), true, nil
}

// TouchValue implements cluster.Values.
func (e *Engine) TouchValue(_ context.Context, key string, ttl time.Duration) (bool, error) {
	if err := errors.Join(checkName("touch value", "key", key), checkTTL("touch value", ttl)); err != nil {
		return false, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false, errClosed
	}
	v, ok := e.liveValue(key)
	if !ok {
		return false, nil
	}
	v.expires = e.stamp(e.now()) + ttl
	e.values[key] = v
	return true, nil
}

// DeleteValue implements cluster.Values.
func (e *Engine) DeleteValue(_ context.Context, key string) (bool, error) {
	if err := checkName("delete value", "key", key); err != nil {
		return false, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false, errClosed
	}
	_, ok := e.liveValue(key)
	delete(e.values, key)
	return ok, nil
}

// liveValue answers key's value if it has not expired, and forgets it if it has. e.mu must
// be held.
func (e *Engine) liveValue(key string) (value, bool) {
	v, ok := e.values[key]
	if !ok {
		return value{}, false
	}
	if e.stamp(e.now()) >= v.expires {
		delete(e.values, key)
		return value{}, false
	}
	return v, true
}
