package client

import (
	"context"
	"time"
)

// SessionSnapshot answers the snapshot of the app a session token belongs to, for the
// edge to sign answers that did not go through Begin (nonce, heartbeat, end, and errors
// raised before the call was opened). ok is false when the token names no live session.
func (s *Service) SessionSnapshot(ctx context.Context, token string) (Snapshot, bool) {
	if token == "" {
		return Snapshot{}, false
	}
	sess, err := s.sessions.get(ctx, token)
	if err != nil {
		return Snapshot{}, false
	}
	return s.AppSnapshot(ctx, sess.AppID)
}

// AppSnapshot answers an app's snapshot; ok is false when it cannot be loaded.
func (s *Service) AppSnapshot(ctx context.Context, appID string) (Snapshot, bool) {
	snap, err := s.d.Apps.Snapshot(ctx, appID)
	if err != nil {
		return Snapshot{}, false
	}
	return snap, true
}

// Now is the service's clock (signature timestamps use it).
func (s *Service) Now() time.Time { return s.d.Now() }

// NonceOn issues a nonce on a call the edge opened itself with Begin (it opens the call
// to know the app whose key signs the answer): Nonce without a second session read.
func (s *Service) NonceOn(ctx context.Context, call Call) (string, error) {
	return s.sessions.issueNonce(ctx, call.Session.Token)
}

// HeartbeatOn completes a heartbeat on a call opened with Begin (nonce required): it
// renews the session's floating seat, if it holds one, and answers the new expiry.
func (s *Service) HeartbeatOn(ctx context.Context, call Call) (time.Time, error) {
	if err := s.renewSeat(ctx, call); err != nil {
		return time.Time{}, err
	}
	return s.ExpiresAt(call), nil
}
