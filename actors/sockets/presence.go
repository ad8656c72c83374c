package sockets

import (
	"context"
	"fmt"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core/realtime"
)

// A client socket's presence is a lease in the cluster engine's Presence (cluster.Presence):
// admitted under the app's limit and the one-socket-per-user rule in one atomic call
// (Admit, whose answer names the user's earlier socket to close), renewed for all of an
// app's sockets on this node in one call every third of Deps.LeaseTTL, described again
// when its status or metadata change, released when it leaves. Only the app's actor
// drives these calls (its admission, its lease renewals and releases, actors/leases.go,
// its sockets' actors' work), so a node that dies leaves the counts and lists within one
// lease.

// describe writes what the session list shows of a socket (status and metadata changes
// need only this); info was taken in the socket's actor. A socket that is not live any
// more (released, or lapsed until its next renewal restores it) is left alone.
func (s *Service) describe(ctx context.Context, appID string, info realtime.SessionInfo) error {
	raw, err := info.AppendJSON(make([]byte, 0, 160))
	if err != nil {
		return fmt.Errorf("realtime: encode presence: %w", err)
	}
	if _, err := s.d.Engine.Describe(ctx, appID, info.ID, raw); err != nil {
		return fmt.Errorf("realtime: write presence: %w", err)
	}
	return nil
}

// admitPresence puts the socket's presence in place under the app's limit and the
// one-socket-per-user rule, in one atomic engine call: of sockets racing for the last
// places of an app exactly as many are admitted as there are places; of sockets of one
// user racing, each replaces the one admitted before it, and the replaced one is closed
// on whatever node holds it. A replaced socket whose own admission had not yet registered
// it with its app's actor when the close reached that node misses the close; the next
// renewal finds it superseded and closes it (within a third of the lease).
func (s *Service) admitPresence(ctx context.Context, appID string, si realtime.SessionInfo) error {
	info, err := si.AppendJSON(make([]byte, 0, 160))
	if err != nil {
		return fmt.Errorf("realtime: encode presence: %w", err)
	}
	a, err := s.d.Engine.Admit(ctx, appID, cluster.PresentSocket{ID: si.ID, User: si.UserID, Info: info}, s.leaseTTL, realtime.MaxClientsPerApp)
	if err != nil {
		return fmt.Errorf("realtime: admit presence: %w", err)
	}
	if !a.Admitted {
		return realtime.ErrAppFull
	}
	if a.Replaced != "" {
		s.replaced(ctx, appID, a.Replaced)
	}
	return nil
}

// Online counts the app's client sockets across the cluster. The count is asked of the
// app's actor, which reads it outside its Receive and shares one read among the requests
// that arrive while one is under way (app.Apps.Read).
func (s *Service) Online(ctx context.Context, appID string) (int, error) {
	v, err := s.reg.Read(ctx, appID, app.LiveRead{Kind: app.ReadOnline})
	if err != nil {
		return 0, err
	}
	return v.Online, nil
}

// Sessions lists the app's client sockets across the cluster, oldest first; asked of the
// app's actor like Online. Requests that shared the read share the engine's answer, not
// the list: each decodes its own (never nil: an empty list is [] on the wire).
func (s *Service) Sessions(ctx context.Context, appID string) ([]realtime.SessionInfo, error) {
	v, err := s.reg.Read(ctx, appID, app.LiveRead{Kind: app.ReadSessions})
	if err != nil {
		return nil, err
	}
	return realtime.SessionsOf(v.Sockets), nil
}
