package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// AddMember implements cluster.ExpiringSets. With a limit, the members other than the one
// just added are evicted soonest-expiring first (ties by member, as Redis orders equal
// scores), so the new member is kept even when an older one was given a longer ttl.
func (e *Engine) AddMember(_ context.Context, set, member string, ttl time.Duration, limit int) error {
	if err := errors.Join(checkName("add member", "set", set), checkTTL("add member", ttl)); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errClosed
	}
	now := e.now()
	if limit > 0 {
		// Only a limited set needs its expired members gone before counting; pruning
		// every set on every add would make each add cost the set's size (an app's
		// session set holds thousands). The janitor's Sweep bounds the rest.
		e.pruneSet(set, now)
	}
	m := e.sets[set]
	if m == nil {
		m = make(map[string]time.Time)
		e.sets[set] = m
	}
	m[member] = now.Add(ttl)
	if limit > 0 && len(m) > limit {
		type entry struct {
			member  string
			expires time.Time
		}
		others := make([]entry, 0, len(m)-1)
		for k, exp := range m {
			if k != member {
				others = append(others, entry{k, exp})
			}
		}
		slices.SortFunc(others, func(a, b entry) int {
			return cmp.Or(a.expires.Compare(b.expires), strings.Compare(a.member, b.member))
		})
		for _, o := range others[:len(m)-limit] {
			delete(m, o.member)
		}
	}
	return nil
}

// TakeMember implements cluster.ExpiringSets; the mutex makes it atomic.
func (e *Engine) TakeMember(_ context.Context, set, member string) (bool, error) {
	if err := checkName("take member", "set", set); err != nil {
		return false, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false, errClosed
	}
	m := e.sets[set]
	exp, ok := m[member]
	if !ok {
		return false, nil
	}
	delete(m, member)
	if len(m) == 0 {
		delete(e.sets, set)
	}
	return e.now().Before(exp), nil
}

// Members implements cluster.ExpiringSets.
func (e *Engine) Members(_ context.Context, set string) ([]string, error) {
	if err := checkName("members", "set", set); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errClosed
	}
	e.pruneSet(set, e.now())
	out := make([]string, 0, len(e.sets[set]))
	for k := range e.sets[set] {
		out = append(out, k)
	}
	return out, nil
}

// CountMembers implements cluster.ExpiringSets.
func (e *Engine) CountMembers(_ context.Context, set string) (int, error) {
	if err := checkName("count members", "set", set); err != nil {
		return 0, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, errClosed
	}
	e.pruneSet(set, e.now())
	return len(e.sets[set]), nil
}

// pruneSet drops set's expired members, and the set once it is empty. e.mu must be held. A
// member is live while now is before its expiry.
func (e *Engine) pruneSet(set string, now time.Time) {
	m, ok := e.sets[set]
	if !ok {
		return
	}
	for k, exp := range m {
		if !now.Before(exp) {
			delete(m, k)
		}
	}
	if len(m) == 0 {
		delete(e.sets, set)
	}
}

// AcquireMember implements cluster.Leases; the mutex makes the check and the add one step.
func (e *Engine) AcquireMember(_ context.Context, set, member string, ttl time.Duration, limit int) (bool, error) {
	if err := errors.Join(checkName("acquire member", "set", set), checkTTL("acquire member", ttl)); err != nil {
		return false, err
	}
	if limit <= 0 {
		return false, fmt.Errorf("cluster: acquire member: limit must be positive, got %d", limit)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false, errClosed
	}
	now := e.now()
	e.pruneSet(set, now)
	m := e.sets[set]
	if _, live := m[member]; !live && len(m) >= limit {
		return false, nil
	}
	if m == nil {
		m = make(map[string]time.Time)
		e.sets[set] = m
	}
	m[member] = now.Add(ttl)
	return true, nil
}
