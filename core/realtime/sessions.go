package realtime

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core"
)

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

// SessionsOf is what the session list shows of the app's live sockets, oldest first
// (never nil: an empty list is [] on the wire).
func SessionsOf(live []cluster.PresentSocket) []SessionInfo {
	out := make([]SessionInfo, 0, len(live))
	for _, p := range live {
		info := SessionInfo{ID: p.ID, UserID: p.User}
		if p.Info != nil {
			// A socket restored by a renewal shows its id and user until its holder
			// describes it again.
			if err := json.Unmarshal(p.Info, &info); err != nil {
				continue
			}
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].ConnectedAt.Equal(out[j].ConnectedAt) {
			return out[i].ConnectedAt.Before(out[j].ConnectedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// ErrAppFull refuses a client socket over the app's limit.
var ErrAppFull = core.E(core.CodePlanLimit, "this application already has %d connected clients", MaxClientsPerApp)
