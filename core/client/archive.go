package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/storage"
)

// archive keeps the durable copies of sessions (storage.ClientSessionStore). A new or
// signed-in session is written before the call answers (save, through the service's group
// commit), so an acknowledged init or login survives a crash of the node; a session's new
// expiry after a call is only marked and goes with the next write round (at the latest
// every writeEvery), so liveness costs no storage write per call. Ends and kills delete at
// once, so an ended session can never come back from its copy. The copy is read only when
// the cluster engine does not know a token (after a restart of an embedded node, or of a
// Redis without persistence). It does not keep the file key: a restored session gets plain
// file downloads, which every SDK reads.
type archive struct {
	store storage.ClientSessionStore
	log   *slog.Logger
	now   func() time.Time

	mu    sync.Mutex
	dirty map[string]storage.ClientSession // by token hash

	// writing is held while a batch is written and while copies are deleted, so that a
	// delete never runs before the write of a batch taken earlier that holds the session.
	writing     sync.Mutex
	nextCleanup time.Time // when flush next removes expired copies
}

// cleanupEvery is how often expired copies are removed.
const cleanupEvery = time.Minute

func newArchive(store storage.ClientSessionStore, log *slog.Logger, now func() time.Time) *archive {
	return &archive{store: store, log: log, now: now, dirty: map[string]storage.ClientSession{}, nextCleanup: now().Add(cleanupEvery)}
}

// mark records a session change to write with the next round: a new or changed session
// (put), whose copy the round creates.
func (a *archive) mark(s Session, expiresAt time.Time) { a.markCopy(s, expiresAt, false) }

// extend records a call's new expiry to write with the next round, which moves the
// copy's expiry later only if it is still stored, and changes nothing else
// (storage.ClientSession.ExtendOnly): the call touched its live session before an end or
// a kill removed it, and marks here after the copy's delete, perhaps on another node; a
// copy written again from this mark would bring the ended session back at its next
// restore. And the call may have read its session before a sign-in changed it.
func (a *archive) extend(s Session, expiresAt time.Time) { a.markCopy(s, expiresAt, true) }

func (a *archive) markCopy(s Session, expiresAt time.Time, extendOnly bool) {
	if a == nil {
		return
	}
	c := storage.ClientSession{TokenHash: secrets.Hash(s.Token), AppID: s.AppID, AccountID: s.AccountID, UserID: s.UserID,
		Username: s.Username, HWID: s.HWID, IP: s.IP, Country: s.Country, Version: s.Version,
		CreatedAt: storage.Truncate(s.CreatedAt), LoginAt: storage.Truncate(s.LoginAt), ExpiresAt: storage.Truncate(expiresAt),
		ExtendOnly: extendOnly}
	a.mu.Lock()
	if prev, ok := a.dirty[c.TokenHash]; ok {
		// A creation not yet written stays one, and a call's extend changes only its
		// expiry: the call may have read the session before a sign-in marked here.
		c = prev.Then(c)
	}
	a.dirty[c.TokenHash] = c
	a.mu.Unlock()
}

// forget deletes the copies of ended sessions now.
func (a *archive) forget(ctx context.Context, tokens ...string) error {
	if a == nil || len(tokens) == 0 {
		return nil
	}
	hashes := make([]string, len(tokens))
	a.writing.Lock()
	defer a.writing.Unlock()
	a.mu.Lock()
	for i, t := range tokens {
		hashes[i] = secrets.Hash(t)
		delete(a.dirty, hashes[i])
	}
	a.mu.Unlock()
	return a.store.DeleteClientSessions(ctx, hashes)
}

// forgetUser deletes every copy of a user's sessions now, including ones this node does
// not have live.
func (a *archive) forgetUser(ctx context.Context, appID, userID string) error {
	if a == nil {
		return nil
	}
	a.writing.Lock()
	defer a.writing.Unlock()
	a.mu.Lock()
	for h, c := range a.dirty {
		if c.AppID == appID && c.UserID == userID {
			delete(a.dirty, h)
		}
	}
	a.mu.Unlock()
	_, err := a.store.DeleteUserClientSessions(ctx, appID, userID)
	return err
}

// restore answers the live copy of a token the cluster engine does not know.
func (a *archive) restore(ctx context.Context, token string) (Session, time.Time, bool, error) {
	if a == nil {
		return Session{}, time.Time{}, false, nil
	}
	c, err := a.store.GetClientSession(ctx, secrets.Hash(token))
	if errors.Is(err, storage.ErrNotFound) {
		return Session{}, time.Time{}, false, nil
	}
	if err != nil {
		return Session{}, time.Time{}, false, err
	}
	if !a.now().Before(c.ExpiresAt) {
		return Session{}, time.Time{}, false, nil
	}
	return Session{Token: token, AppID: c.AppID, AccountID: c.AccountID, UserID: c.UserID, Username: c.Username,
		HWID: c.HWID, IP: c.IP, Country: c.Country, Version: c.Version, CreatedAt: c.CreatedAt, LoginAt: c.LoginAt}, c.ExpiresAt, true, nil
}

// flush writes the dirty copies with the round's last logins in one write
// (storage.ClientSessionStore.SaveClientRound, which also takes the events of ctx's
// outbox); on failure the copies are kept for the next round (unless a newer change
// replaced them meanwhile), the logins are not (last logins are informative, and the
// logins waiting for the round are answered its error). About once a minute it also
// removes expired copies.
func (a *archive) flush(ctx context.Context, final bool, logins []storage.UserLogin) error {
	if a == nil {
		return nil
	}
	a.writing.Lock()
	defer a.writing.Unlock()
	if now := a.now(); !final && !now.Before(a.nextCleanup) {
		a.nextCleanup = now.Add(cleanupEvery)
		// Not the round's write: the round's events go with its sessions.
		if _, err := a.store.DeleteExpiredClientSessions(storage.WithoutEventOutbox(ctx), storage.Truncate(a.now())); err != nil {
			a.log.Warn("client: cannot remove expired session copies", "err", err)
		}
	}
	a.mu.Lock()
	if len(a.dirty) == 0 && len(logins) == 0 {
		a.mu.Unlock()
		return nil
	}
	batch := make([]storage.ClientSession, 0, len(a.dirty))
	for _, c := range a.dirty {
		batch = append(batch, c)
	}
	clear(a.dirty)
	a.mu.Unlock()
	if err := a.store.SaveClientRound(ctx, batch, logins); err != nil {
		if len(logins) > 0 {
			a.log.Warn("client: cannot record last logins", "count", len(logins), "err", err)
		}
		a.log.Warn("client: cannot archive sessions; retrying", "count", len(batch), "err", err)
		a.mu.Lock()
		for _, c := range batch {
			if newer, ok := a.dirty[c.TokenHash]; ok {
				// A call's new expiry after this round's creation of the copy leaves the
				// creation to write. (No end can have come between: forget waits for
				// writing, which this round holds.)
				c = c.Then(newer)
			}
			a.dirty[c.TokenHash] = c
		}
		a.mu.Unlock()
		return fmt.Errorf("archive sessions: %w", err)
	}
	return nil
}
