package memory

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/keyward/keyward/cluster"
)

// appPresence is one app's live sockets: socket id → its entry, and user → socket id (the
// one socket per user). Both maps change together, under Engine.mu.
type appPresence struct {
	sockets map[string]presentEntry
	byUser  map[string]string
	// soonest is at most the earliest expiry of the sockets (kept so by put and Renew), so
	// that a call walks the app's sockets to drop the expired ones only when one
	// may have expired: once per renewal period, not on every admission of a large app.
	soonest time.Duration
}

type presentEntry struct {
	user    string
	info    []byte
	expires time.Duration // a stamp, Engine.stamp
}

// forget removes socket id, and its user's entry when it points at it.
func (p *appPresence) forget(id string) {
	ent, ok := p.sockets[id]
	if !ok {
		return
	}
	delete(p.sockets, id)
	if p.byUser[ent.user] == id {
		delete(p.byUser, ent.user)
	}
}

// put makes id the user's live socket until expires.
func (p *appPresence) put(id, user string, info []byte, expires time.Duration) {
	if len(p.sockets) == 0 || expires < p.soonest {
		p.soonest = expires
	}
	p.sockets[id] = presentEntry{user: user, info: info, expires: expires}
	p.byUser[user] = id
}

// prune drops the sockets expired at now, when one may have.
func (p *appPresence) prune(now time.Duration) {
	if len(p.sockets) == 0 || now < p.soonest {
		return
	}
	first := true
	for id, ent := range p.sockets {
		switch {
		case now >= ent.expires:
			p.forget(id)
		case first || ent.expires < p.soonest:
			p.soonest, first = ent.expires, false
		}
	}
}

// presenceOf answers app's presence with its expired sockets dropped, creating it when
// create is set (nil otherwise for an app with none). e.mu must be held.
func (e *Engine) presenceOf(app string, now time.Duration, create bool) *appPresence {
	p := e.presence[app]
	if p != nil {
		p.prune(now)
		if len(p.sockets) == 0 && !create {
			delete(e.presence, app)
			return nil
		}
	}
	if p == nil && create {
		p = &appPresence{sockets: map[string]presentEntry{}, byUser: map[string]string{}}
		e.presence[app] = p
	}
	return p
}

// dropIfEmpty forgets an app with no live socket left. e.mu must be held.
func (e *Engine) dropIfEmpty(app string) {
	if p := e.presence[app]; p != nil && len(p.sockets) == 0 {
		delete(e.presence, app)
	}
}

// Admit implements cluster.Presence; the mutex makes the count, the replacement and the
// add one step.
func (e *Engine) Admit(_ context.Context, app string, s cluster.PresentSocket, ttl time.Duration, limit int) (cluster.Admission, error) {
	err := errors.Join(checkName("admit", "app", app), checkName("admit", "socket", s.ID), checkName("admit", "user", s.User), checkTTL("admit", ttl))
	if err == nil && limit <= 0 {
		err = fmt.Errorf("cluster/memory: admit: limit must be positive, got %d", limit)
	}
	if err != nil {
		return cluster.Admission{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return cluster.Admission{}, errClosed
	}
	now := e.stamp(e.now())
	p := e.presenceOf(app, now, true)
	defer e.dropIfEmpty(app)
	if ent, live := p.sockets[s.ID]; live {
		if ent.user != s.User {
			return cluster.Admission{}, fmt.Errorf("cluster/memory: admit: socket %q is live for another user", s.ID)
		}
		p.put(s.ID, s.User, clone(s.Info), now+ttl)
		return cluster.Admission{Admitted: true}, nil
	}
	earlier := p.byUser[s.User]
	n := len(p.sockets)
	if earlier != "" {
		n-- // replaced by this one
	}
	if n >= limit {
		return cluster.Admission{}, nil
	}
	if earlier != "" {
		p.forget(earlier)
	}
	p.put(s.ID, s.User, clone(s.Info), now+ttl)
	return cluster.Admission{Admitted: true, Replaced: earlier}, nil
}

// Renew implements cluster.Presence.
func (e *Engine) Renew(_ context.Context, app string, sockets []cluster.SocketLease, ttl time.Duration) (cluster.Renewal, error) {
	err := errors.Join(checkName("renew", "app", app), checkTTL("renew", ttl))
	for _, s := range sockets {
		err = errors.Join(err, checkName("renew", "socket", s.ID), checkName("renew", "user", s.User))
	}
	if err != nil {
		return cluster.Renewal{}, err
	}
	var out cluster.Renewal
	if len(sockets) == 0 {
		return out, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return out, errClosed
	}
	now := e.stamp(e.now())
	p := e.presenceOf(app, now, true)
	defer e.dropIfEmpty(app)
	for _, s := range sockets {
		if ent, live := p.sockets[s.ID]; live {
			ent.expires = now + ttl
			p.sockets[s.ID] = ent
			p.soonest = min(p.soonest, ent.expires) // a shorter ttl than before
			continue
		}
		if p.byUser[s.User] != "" {
			out.Superseded = append(out.Superseded, s.ID)
			continue
		}
		p.put(s.ID, s.User, nil, now+ttl)
		out.Restored = append(out.Restored, s.ID)
	}
	return out, nil
}

// Release implements cluster.Presence.
func (e *Engine) Release(_ context.Context, app string, ids ...string) (int, error) {
	if err := checkName("release", "app", app); err != nil {
		return 0, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, errClosed
	}
	p := e.presenceOf(app, e.stamp(e.now()), false)
	if p == nil {
		return 0, nil
	}
	defer e.dropIfEmpty(app)
	n := 0
	for _, id := range ids {
		if _, live := p.sockets[id]; live {
			p.forget(id)
			n++
		}
	}
	return n, nil
}

// Describe implements cluster.Presence. The engine keeps its own copy of info.
func (e *Engine) Describe(_ context.Context, app, id string, info []byte) (bool, error) {
	if err := errors.Join(checkName("describe", "app", app), checkName("describe", "socket", id)); err != nil {
		return false, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false, errClosed
	}
	p := e.presenceOf(app, e.stamp(e.now()), false)
	if p == nil {
		return false, nil
	}
	ent, live := p.sockets[id]
	if !live {
		return false, nil
	}
	ent.info = clone(info)
	p.sockets[id] = ent
	return true, nil
}

// Count implements cluster.Presence.
func (e *Engine) Count(_ context.Context, app string) (int, error) {
	if err := checkName("count", "app", app); err != nil {
		return 0, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, errClosed
	}
	if p := e.presenceOf(app, e.stamp(e.now()), false); p != nil {
		return len(p.sockets), nil
	}
	return 0, nil
}

// List implements cluster.Presence; every Info is a copy of its own.
func (e *Engine) List(_ context.Context, app string) ([]cluster.PresentSocket, error) {
	if err := checkName("list", "app", app); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errClosed
	}
	p := e.presenceOf(app, e.stamp(e.now()), false)
	if p == nil {
		return []cluster.PresentSocket{}, nil
	}
	out := make([]cluster.PresentSocket, 0, len(p.sockets))
	for id, ent := range p.sockets {
		out = append(out, cluster.PresentSocket{ID: id, User: ent.user, Info: clone(ent.info)})
	}
	return out, nil
}

// SocketOf implements cluster.Presence.
func (e *Engine) SocketOf(_ context.Context, app, user string) (string, bool, error) {
	if err := errors.Join(checkName("socket of", "app", app), checkName("socket of", "user", user)); err != nil {
		return "", false, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return "", false, errClosed
	}
	p := e.presenceOf(app, e.stamp(e.now()), false)
	if p == nil {
		return "", false, nil
	}
	id, ok := p.byUser[user]
	return id, ok, nil
}

// sweepPresence drops every app's expired sockets. e.mu must be held.
func (e *Engine) sweepPresence(now time.Duration) {
	for app := range e.presence {
		e.presenceOf(app, now, false)
	}
}

// clone copies b; an empty info is none (nil), as on every engine.
func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}
