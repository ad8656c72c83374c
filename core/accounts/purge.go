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

// RunPurge removes the expired revocations and owner sessions now and then every
// RevocationPurgeEvery, until ctx ends; the node's supervisor runs it (a panic goes there,
// which logs and counts it and runs it again).
func (s *Service) RunPurge(ctx context.Context) error {
	t := time.NewTicker(RevocationPurgeEvery)
	defer t.Stop()
	for {
		s.purgeOnce(ctx, RevocationPurgeEvery)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// purgeOnce runs one purge bounded by the interval; a failure is logged and the next tick
// tries again.
func (s *Service) purgeOnce(ctx context.Context, every time.Duration) {
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
