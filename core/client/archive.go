package client

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/storage"
)

// archiveEvery is how often live session changes are written to storage.
const archiveEvery = 5 * time.Second

// archive keeps the durable copies of sessions (storage.ClientSessionStore) lazily: calls
// mark their session dirty in memory and a background loop writes the dirty ones in one
// batch, so liveness costs no storage write per call. Ends and kills delete at once, so
// an ended session can never come back from its copy. The copy is read only when the
// cluster engine does not know a token (after a restart of an embedded node). It does not
// keep the file key: a restored session gets plain file downloads, which every SDK reads.
type archive struct {
	store storage.ClientSessionStore
	log   *slog.Logger
	now   func() time.Time

	mu    sync.Mutex
	dirty map[string]storage.ClientSession // by token hash

	writer periodic
}

func newArchive(store storage.ClientSessionStore, log *slog.Logger, now func() time.Time) *archive {
	return &archive{store: store, log: log, now: now, dirty: map[string]storage.ClientSession{}}
}

func (a *archive) mark(s Session, expiresAt time.Time) {
	if a == nil {
		return
	}
	c := storage.ClientSession{TokenHash: secrets.Hash(s.Token), AppID: s.AppID, AccountID: s.AccountID, UserID: s.UserID,
		Username: s.Username, HWID: s.HWID, IP: s.IP, Country: s.Country, Version: s.Version,
		CreatedAt: storage.Truncate(s.CreatedAt), LoginAt: storage.Truncate(s.LoginAt), ExpiresAt: storage.Truncate(expiresAt)}
	a.mu.Lock()
	a.dirty[c.TokenHash] = c
	a.mu.Unlock()
}

// forget deletes the copies of ended sessions now.
func (a *archive) forget(ctx context.Context, tokens ...string) error {
	if a == nil || len(tokens) == 0 {
		return nil
	}
	hashes := make([]string, len(tokens))
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

// flush writes the dirty copies; on failure they are kept for the next round (unless a
// newer change replaced them meanwhile).
func (a *archive) flush(ctx context.Context) {
	a.mu.Lock()
	if len(a.dirty) == 0 {
		a.mu.Unlock()
		return
	}
	batch := make([]storage.ClientSession, 0, len(a.dirty))
	for _, c := range a.dirty {
		batch = append(batch, c)
	}
	clear(a.dirty)
	a.mu.Unlock()
	if err := a.store.SaveClientSessions(ctx, batch); err != nil {
		a.log.Warn("client: cannot archive sessions; retrying", "count", len(batch), "err", err)
		a.mu.Lock()
		for _, c := range batch {
			if _, newer := a.dirty[c.TokenHash]; !newer {
				a.dirty[c.TokenHash] = c
			}
		}
		a.mu.Unlock()
	}
}

func (a *archive) start() {
	rounds := 0
	a.writer.start(archiveEvery, func(ctx context.Context, final bool) {
		a.flush(ctx)
		if rounds++; !final && rounds%12 == 0 { // about once a minute
			if _, err := a.store.DeleteExpiredClientSessions(ctx, storage.Truncate(a.now())); err != nil {
				a.log.Warn("client: cannot remove expired session copies", "err", err)
			}
		}
	})
}

func (a *archive) close() {
	if a == nil {
		return
	}
	a.writer.close()
}
