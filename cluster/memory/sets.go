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

// memberSet is one expiring set: its members and their expiries (stamps, Engine.stamp). A
// set of one member, the common case (a user's sockets), is held without a map: a map
// of even one entry costs a whole group of slots, several hundred bytes.
type memberSet struct {
	many   map[string]time.Duration // every member once there are two; nil before
	one    string                   // the only member while many is nil and hasOne
	oneExp time.Duration
	hasOne bool
}

func (s *memberSet) len() int {
	if s.many != nil {
		return len(s.many)
	}
	if s.hasOne {
		return 1
	}
	return 0
}

func (s *memberSet) get(member string) (time.Duration, bool) {
	if s.many != nil {
		exp, ok := s.many[member]
		return exp, ok
	}
	if s.hasOne && s.one == member {
		return s.oneExp, true
	}
	return 0, false
}

func (s *memberSet) put(member string, exp time.Duration) {
	switch {
	case s.many != nil:
		s.many[member] = exp
	case !s.hasOne || s.one == member:
		s.one, s.oneExp, s.hasOne = member, exp, true
	default:
		s.many = map[string]time.Duration{s.one: s.oneExp, member: exp}
		s.one, s.oneExp, s.hasOne = "", 0, false
	}
}

func (s *memberSet) del(member string) {
	if s.many != nil {
		delete(s.many, member)
		return
	}
	if s.hasOne && s.one == member {
		s.one, s.oneExp, s.hasOne = "", 0, false
	}
}

// each calls fn with every member and its expiry; fn may delete the member it is given.
func (s *memberSet) each(fn func(member string, exp time.Duration)) {
	if s.many != nil {
		for k, exp := range s.many {
			fn(k, exp)
		}
		return
	}
	if s.hasOne {
		fn(s.one, s.oneExp)
	}
}

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
	now := e.stamp(e.now())
	if limit > 0 {
		// Only a limited set needs its expired members gone before counting; pruning
		// every set on every add would make each add cost the set's size (an app's
		// session set holds thousands). The janitor's Sweep bounds the rest.
		e.pruneSet(set, now)
	}
	m := e.sets[set]
	if m == nil {
		m = &memberSet{}
		e.sets[set] = m
	}
	m.put(member, now+ttl)
	if limit > 0 && m.len() > limit {
		type entry struct {
			member  string
			expires time.Duration
		}
		others := make([]entry, 0, m.len()-1)
		m.each(func(k string, exp time.Duration) {
			if k != member {
				others = append(others, entry{k, exp})
			}
		})
		slices.SortFunc(others, func(a, b entry) int {
			return cmp.Or(cmp.Compare(a.expires, b.expires), strings.Compare(a.member, b.member))
		})
		for _, o := range others[:m.len()-limit] {
			m.del(o.member)
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
	if m == nil {
		return false, nil
	}
	exp, ok := m.get(member)
	if !ok {
		return false, nil
	}
	m.del(member)
	if m.len() == 0 {
		delete(e.sets, set)
	}
	return e.stamp(e.now()) < exp, nil
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
	e.pruneSet(set, e.stamp(e.now()))
	m := e.sets[set]
	if m == nil {
		return []string{}, nil
	}
	out := make([]string, 0, m.len())
	m.each(func(k string, _ time.Duration) { out = append(out, k) })
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
	e.pruneSet(set, e.stamp(e.now()))
	if m := e.sets[set]; m != nil {
		return m.len(), nil
	}
	return 0, nil
}

// pruneSet drops set's expired members, and the set once it is empty. e.mu must be held. A
// member is live while now (a stamp) is before its expiry.
func (e *Engine) pruneSet(set string, now time.Duration) {
	m, ok := e.sets[set]
	if !ok {
		return
	}
	m.each(func(k string, exp time.Duration) {
		if now >= exp {
			m.del(k)
		}
	})
	if m.len() == 0 {
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
	now := e.stamp(e.now())
	e.pruneSet(set, now)
	m := e.sets[set]
	if m == nil {
		m = &memberSet{}
		e.sets[set] = m
	}
	if _, live := m.get(member); !live && m.len() >= limit {
		return false, nil
	}
	m.put(member, now+ttl)
	return true, nil
}
