package realtime

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/internal/jsontext"
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

// AppendJSON appends s encoded as encoding/json encodes it. A socket's admission
// encodes one for its presence (actors/sockets): by hand it costs a fraction of the
// reflection's (which was 3 % of a socket's opening CPU). Metadata, and a time
// encoding/json refuses, go through encoding/json.
func (s SessionInfo) AppendJSON(b []byte) ([]byte, error) {
	if y := s.ConnectedAt.Year(); len(s.Metadata) > 0 || y < 0 || y > 9999 {
		out, err := json.Marshal(s)
		return append(b, out...), err
	}
	b = append(b, `{"id":`...)
	b = jsontext.AppendString(b, s.ID)
	b = append(b, `,"userId":`...)
	b = jsontext.AppendString(b, s.UserID)
	b = append(b, `,"username":`...)
	b = jsontext.AppendString(b, s.Username)
	b = append(b, `,"ip":`...)
	b = jsontext.AppendString(b, s.IP)
	b = append(b, `,"connectedAt":"`...)
	b = s.ConnectedAt.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if s.Status != "" {
		b = append(b, `,"status":`...)
		b = jsontext.AppendString(b, s.Status)
	}
	return append(b, '}'), nil
}
