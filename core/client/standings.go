package client

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/keyward/keyward/storage"
)

// standingReads gathers the user-standing reads of the socket admissions of one app that
// come while such a read is under way into the next read: one query for all of them, not
// one each. The user's standing is read at every upgrade, the costliest read of an
// admission; sockets open in crowds (a fleet reconnecting to a node that restarted), and
// a query of a few ids costs little more than a query of one. Nothing waits to be
// gathered: with no read under way the read is made at once, and those that came
// meanwhile are read as soon as it ends.
type standingReads struct {
	mu   sync.Mutex
	apps map[string]*appStandings
}

// appStandings is one app's reads: busy while one is under way; next gathers the ids
// that wait for it to end.
type appStandings struct {
	busy bool
	next *standingBatch
}

// standingBatch is a read of several ids, made by the first caller that joined it once
// its turn came (turn closed); done is closed when its answer is in.
type standingBatch struct {
	ids  []string
	turn chan struct{}
	done chan struct{}
	got  map[string]storage.UserStanding
	err  error
}

// standingBatchMax bounds the ids of one read; more wait for the next.
const standingBatchMax = 256

// standingReadTimeout bounds a gathered read: it is made for every caller in it, so no
// one caller's context may cancel it.
const standingReadTimeout = 10 * time.Second

// read answers the standing of user userID of app appID (ok false: there is none).
func (r *standingReads) read(ctx context.Context, store storage.UserStandingStore, appID, userID string) (u storage.UserStanding, ok bool, err error) {
	r.mu.Lock()
	if r.apps == nil {
		r.apps = map[string]*appStandings{}
	}
	a := r.apps[appID]
	if a == nil {
		a = &appStandings{}
		r.apps[appID] = a
	}
	if !a.busy {
		a.busy = true
		r.mu.Unlock()
		defer r.finish(appID, a) // also if the store panics: the batch gathered meanwhile gets its turn
		return readOne(ctx, store, appID, userID)
	}
	b := a.next
	if b != nil && len(b.ids) >= standingBatchMax {
		// A full batch waits for its turn; this caller reads alone, at once, as before
		// gathering existed.
		r.mu.Unlock()
		return readOne(ctx, store, appID, userID)
	}
	lead := b == nil
	if lead {
		b = &standingBatch{turn: make(chan struct{}), done: make(chan struct{})}
		a.next = b
	}
	b.ids = append(b.ids, userID)
	r.mu.Unlock()
	if lead {
		// The turn comes when the read under way ends (finish), whatever this caller's
		// context: the others of the batch wait for this read.
		<-b.turn
		func() {
			defer r.finish(appID, a) // also if the store panics
			b.read(ctx, store, appID)
		}()
	} else {
		select {
		case <-b.done:
		case <-ctx.Done():
			return storage.UserStanding{}, false, ctx.Err()
		}
	}
	if b.err != nil {
		return storage.UserStanding{}, false, b.err
	}
	u, ok = b.got[userID]
	return u, ok, nil
}

// readOne reads one user's standing alone.
func readOne(ctx context.Context, store storage.UserStandingStore, appID, userID string) (storage.UserStanding, bool, error) {
	users, err := store.GetUserStandings(ctx, appID, []string{userID})
	if err != nil || len(users) == 0 {
		return storage.UserStanding{}, false, err
	}
	return users[0], true, nil
}

// read makes the batch's query and closes done, also if the store panics (its waiters
// get an error instead of waiting for good; the panic goes on to the caller's recover).
func (b *standingBatch) read(ctx context.Context, store storage.UserStandingStore, appID string) {
	readCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), standingReadTimeout)
	defer cancel()
	b.err = errors.New("client: the standing read failed")
	defer close(b.done)
	users, err := store.GetUserStandings(readCtx, appID, b.ids)
	b.got, b.err = make(map[string]storage.UserStanding, len(users)), err
	for _, u := range users {
		b.got[u.ID] = u
	}
}

// finish ends a read of app a: the batch gathered meanwhile gets its turn, or the app
// has no read under way any more.
func (r *standingReads) finish(appID string, a *appStandings) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b := a.next; b != nil {
		a.next = nil // a.busy stays: the batch's read is under way
		close(b.turn)
		return
	}
	a.busy = false
	delete(r.apps, appID)
}
