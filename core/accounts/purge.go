package accounts

import (
	"context"
	"fmt"
	"time"
)

// RevocationPurgeEvery is how often expired revocations are removed from storage.
const RevocationPurgeEvery = time.Hour

// PurgeRevocations removes the revocations of tokens that have expired (a token past its
// expiry is refused by the expiry alone).
func (s *Service) PurgeRevocations(ctx context.Context) (int, error) {
	n, err := s.store.PurgeRevocations(ctx, s.cfg.Now())
	if err != nil {
		return 0, fmt.Errorf("accounts: purge revocations: %w", err)
	}
	return n, nil
}

// StartRevocationPurge purges expired revocations now and then every interval (default
// RevocationPurgeEvery), until the returned stop is called; stop waits for a purge under
// way and may be called more than once.
func (s *Service) StartRevocationPurge(every time.Duration) (stop func()) {
	if every <= 0 {
		every = RevocationPurgeEvery
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			s.purgeOnce(ctx, every)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// purgeOnce runs one purge bounded by the interval; a failure (or a panic) is logged and the
// next tick tries again.
func (s *Service) purgeOnce(ctx context.Context, every time.Duration) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("revocation purge panicked", "panic", fmt.Sprint(r))
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, every)
	defer cancel()
	n, err := s.PurgeRevocations(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		s.log.Warn("revocation purge failed, will retry", "err", err)
	case n > 0:
		s.log.Debug("expired revocations purged", "count", n)
	}
	n, err = s.PurgeSessions(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		s.log.Warn("owner session purge failed, will retry", "err", err)
	case n > 0:
		s.log.Debug("expired owner sessions purged", "count", n)
	}
}
