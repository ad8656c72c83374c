package realtime

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/keyward/keyward/cluster"
)

// Presence keys in the cluster engine. A client socket is a member of its app's set and of
// its user's set, and has a value with what the session list shows; all three are leases of
// Deps.LeaseTTL that the socket's node renews every third of it, for all the sockets of an
// app in one call (tick.go).
func appSocketsKey(appID string) string          { return "wsa:" + appID }
func userSocketsKey(appID, userID string) string { return "wsu:" + appID + ":" + userID }
func socketKey(id string) string                 { return "wsc:" + id }

// SessionInfo is one live client socket as the dashboard sees it (SPEC 4.9 sessions).
type SessionInfo struct {
	ID          string         `json:"id"`
	UserID      string         `json:"userId"`
	Username    string         `json:"username"`
	IP          string         `json:"ip"`
	ConnectedAt time.Time      `json:"connectedAt"`
	Status      string         `json:"status,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

// describe writes what the session list shows of a socket (status and metadata changes
// need only this), renewing that part of the lease; info was taken in the socket's actor.
func (s *Service) describe(ctx context.Context, info SessionInfo) error {
	raw, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("realtime: encode presence: %w", err)
	}
	if err := s.d.Engine.SetValue(ctx, socketKey(info.ID), raw, s.leaseTTL); err != nil {
		return fmt.Errorf("realtime: write presence: %w", err)
	}
	return nil
}

// lease writes (or renews) the socket's presence, in one engine call.
func (s *Service) lease(ctx context.Context, c *Client) error {
	l, err := s.leaseOf(c)
	if err != nil {
		return err
	}
	if err := s.d.Engine.PutLeases(ctx, []cluster.Lease{l}); err != nil {
		return fmt.Errorf("realtime: lease: %w", err)
	}
	return nil
}

// release removes the socket's presence.
func (s *Service) release(ctx context.Context, c *Client) {
	_, err1 := s.d.Engine.TakeMember(ctx, appSocketsKey(c.User.AppID), c.ID)
	_, err2 := s.d.Engine.TakeMember(ctx, userSocketsKey(c.User.AppID, c.User.UserID), c.ID)
	_, err3 := s.d.Engine.DeleteValue(ctx, socketKey(c.ID))
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			// The lease runs out by itself within the lease ttl.
			s.d.Log.Warn("realtime: cannot release a socket's presence", "socket", c.ID, "err", err)
			return
		}
	}
}

// Online counts the app's client sockets across the cluster. The count is asked of the
// app's actor, which reads it outside its Receive and shares one read among the requests
// that arrive while one is under way (actors.Apps.Read).
func (s *Service) Online(ctx context.Context, appID string) (int, error) {
	v, err := s.reg.Read(ctx, appID, "online", func(ctx context.Context) (any, error) { return s.countOnline(ctx, appID) })
	if err != nil {
		return 0, err
	}
	n, _ := v.(int)
	return n, nil
}

// Sessions lists the app's client sockets across the cluster, oldest first; asked of the
// app's actor like Online.
func (s *Service) Sessions(ctx context.Context, appID string) ([]SessionInfo, error) {
	v, err := s.reg.Read(ctx, appID, "sessions", func(ctx context.Context) (any, error) { return s.listSessions(ctx, appID) })
	if err != nil {
		return nil, err
	}
	list, _ := v.([]SessionInfo)
	// Requests that shared the read share its answer: each gets its own slice (never nil:
	// an empty list is [] on the wire).
	out := make([]SessionInfo, len(list))
	copy(out, list)
	return out, nil
}

func (s *Service) countOnline(ctx context.Context, appID string) (int, error) {
	n, err := s.d.Engine.CountMembers(ctx, appSocketsKey(appID))
	if err != nil {
		return 0, fmt.Errorf("realtime: count sockets: %w", err)
	}
	return n, nil
}

// listSessions reads the app's socket set and then every socket's value in one batch.
func (s *Service) listSessions(ctx context.Context, appID string) ([]SessionInfo, error) {
	ids, err := s.d.Engine.Members(ctx, appSocketsKey(appID))
	if err != nil {
		return nil, fmt.Errorf("realtime: list sockets: %w", err)
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = socketKey(id)
	}
	raws, err := s.d.Engine.GetValues(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("realtime: read the sockets: %w", err)
	}
	out := make([]SessionInfo, 0, len(ids))
	for _, raw := range raws {
		if raw == nil {
			continue // released between the two reads
		}
		var info SessionInfo
		if err := json.Unmarshal(raw, &info); err != nil {
			continue
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].ConnectedAt.Equal(out[j].ConnectedAt) {
			return out[i].ConnectedAt.Before(out[j].ConnectedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}
