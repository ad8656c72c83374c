package client

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/keyward/keyward/storage"
)

// loginRecorder writes users' last logins (time, address, and the device and computer
// name where the app does not bind them) in batches. A login that binds nothing new (no
// device, address or computer name to lock, no license to apply) changes only those
// fields, so it needs no write of its own: it is added here and the login waits for the
// group-commit round that writes it together with its session (Service.signIn), so what
// an owner reads after the login was answered includes it.
type loginRecorder struct {
	store interface {
		RecordLogins(ctx context.Context, logins []storage.UserLogin) error
	}
	log *slog.Logger

	mu      sync.Mutex
	pending map[string]storage.UserLogin // by app id + user id
}

func (r *loginRecorder) mark(l storage.UserLogin) {
	r.mu.Lock()
	k := l.AppID + "\x00" + l.UserID
	if cur, ok := r.pending[k]; !ok || cur.At.Before(l.At) {
		r.pending[k] = l
	}
	r.mu.Unlock()
}

// take answers the pending logins for a round to write with its sessions (archive.flush).
func (r *loginRecorder) take() []storage.UserLogin {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) == 0 {
		return nil
	}
	batch := make([]storage.UserLogin, 0, len(r.pending))
	for _, l := range r.pending {
		batch = append(batch, l)
	}
	clear(r.pending)
	return batch
}

// flush writes the pending logins on their own (a service with no session archive). A
// failed batch is not retried: last logins are informative, and the logins that wait for
// it are answered with the error.
func (r *loginRecorder) flush(ctx context.Context) error {
	batch := r.take()
	if len(batch) == 0 {
		return nil
	}
	if err := r.store.RecordLogins(ctx, batch); err != nil {
		r.log.Warn("client: cannot record last logins", "count", len(batch), "err", err)
		return fmt.Errorf("record last logins: %w", err)
	}
	return nil
}
