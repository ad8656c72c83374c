package client

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/keyward/keyward/storage"
)

// loginsEvery is how often batched last-login times are written.
const loginsEvery = time.Second

// loginRecorder writes users' last-login time and address in batches. A login that binds
// nothing new (no device, address or computer name to lock, no license to apply) changes
// only those two fields, so it needs no write of its own on the request path; the
// dashboard's "last login" and "logins today" lag by about a second.
type loginRecorder struct {
	store interface {
		RecordLogins(ctx context.Context, logins []storage.UserLogin) error
	}
	log *slog.Logger

	mu      sync.Mutex
	pending map[string]storage.UserLogin // by app id + user id

	writer periodic
}

func (r *loginRecorder) mark(u storage.AppUser) {
	r.mu.Lock()
	k := u.AppID + "\x00" + u.ID
	if cur, ok := r.pending[k]; !ok || cur.At.Before(u.LastLoginAt) {
		r.pending[k] = storage.UserLogin{AppID: u.AppID, UserID: u.ID, IP: u.LastLoginIP, At: u.LastLoginAt}
	}
	r.mu.Unlock()
}

func (r *loginRecorder) flush(ctx context.Context) {
	r.mu.Lock()
	if len(r.pending) == 0 {
		r.mu.Unlock()
		return
	}
	batch := make([]storage.UserLogin, 0, len(r.pending))
	for _, l := range r.pending {
		batch = append(batch, l)
	}
	clear(r.pending)
	r.mu.Unlock()
	if err := r.store.RecordLogins(ctx, batch); err != nil {
		// Last-login times are informative: a failed batch is logged, not retried forever.
		r.log.Warn("client: cannot record last logins", "count", len(batch), "err", err)
	}
}

func (r *loginRecorder) start() {
	r.writer.start(loginsEvery, func(ctx context.Context, _ bool) { r.flush(ctx) })
}

func (r *loginRecorder) close() { r.writer.close() }
