package realtime

import (
	"encoding/json"
	"strings"
	"time"
)

// Bounds of SPEC 8 (WebSocket limits) and of this implementation.
const (
	// MaxClientsPerApp bounds an app's client sockets across the cluster.
	MaxClientsPerApp = 500
	// ClientMessages per ClientWindow is a client socket's message rate.
	ClientMessages = 20
	ClientWindow   = 10 * time.Second
	// DashboardMessages per DashboardWindow is a dashboard socket's message rate.
	DashboardMessages = 30
	DashboardWindow   = 10 * time.Second
	// UpgradesPerMinute bounds socket upgrade requests per IP.
	UpgradesPerMinute = 10
	// RevalidateEvery is how often a client socket's session and user are checked again.
	RevalidateEvery = 30 * time.Second
	// MaxMetadataPairs bounds set_metadata.
	MaxMetadataPairs = 20
	// DefaultLeaseTTL is how long a socket's presence outlives its node when Deps.LeaseTTL
	// is not set; a node renews its sockets' leases every third of it. MinLeaseTTL bounds
	// the setting from below (renewals are engine writes).
	DefaultLeaseTTL = 30 * time.Second
	MinLeaseTTL     = 3 * time.Second
	// messageDeadline bounds the work of one socket message.
	messageDeadline = 10 * time.Second
	// MaxMessageBytes bounds one incoming message.
	MaxMessageBytes = 64 << 10
	// maxStatus, maxText and maxMetaValue bound strings a socket sends.
	maxStatus    = 32
	maxText      = 2000
	maxMetaKey   = 64
	maxMetaValue = 1024
)

// Message types, server to client (SPEC 6.3) and server to dashboard (SPEC 6.2).
const (
	TypePong              = "pong"
	TypeError             = "error"
	TypeChat              = "chat"
	TypeTyping            = "typing"
	TypeVariableUpdate    = "variable_update"
	TypeVariableDelete    = "variable_delete"
	TypeUserVariableUpd   = "user_variable_update"
	TypeUserVariableDel   = "user_variable_delete"
	TypeMessage           = "message"
	TypeCommand           = "command"
	TypeCustom            = "custom"
	TypeForceLogout       = "force_logout"
	TypeBanned            = "banned"
	TypeOnlineCount       = "online_count"
	TypeSessions          = "sessions"
	TypeSessionConnect    = "session_connect"
	TypeSessionDisconnect = "session_disconnect"
	TypeCustomEvent       = "custom_event"
	TypeStatus            = "status"
)

// Why a socket is closed, as Peer.Close is told. The 4000 range is SPEC 6.3's own close
// codes (the SDKs read them) and goes on the wire as is; the others say what happened,
// and the edge sends RFC 6455's code for it.
const (
	// CloseNormal: the socket's work is over.
	CloseNormal = -1
	// ClosePolicy: the socket is refused, or no longer allowed (its token ended).
	ClosePolicy = -2
	// CloseInternal: handling the socket's message failed.
	CloseInternal = -3
	// CloseGoingAway: the node shuts down.
	CloseGoingAway = -4

	CloseForceLogout = 4000
	CloseKicked      = 4001
	CloseBanned      = 4002
	CloseReplaced    = 4003
)

// Outgoing is a message as the SDKs expect it: `{"type": ..., "data": ...}`.
type Outgoing struct {
	Type string `json:"type"`
	Data any    `json:"data,omitempty"`
}

// encode marshals m without HTML escaping (the C++ SDK does not decode \u0026 and the like).
func encode(m Outgoing) []byte {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		// Data comes from decoded JSON or from our own values: it always encodes.
		return []byte(`{"type":"error","data":{"message":"internal error"}}`)
	}
	return []byte(strings.TrimSuffix(b.String(), "\n"))
}

// ErrorMessage is an error message for a socket: a refused message, or a refused dashboard.
func ErrorMessage(text string) []byte {
	return encode(Outgoing{Type: TypeError, Data: map[string]any{"message": text}})
}

// Incoming is a decoded message from a socket: its type, and every member (members such
// as userId and message may sit beside type, or inside data).
type Incoming struct {
	Type   string
	Fields map[string]any
}

// decode parses a socket message; ok is false for anything but a JSON object with a
// string type.
func decode(raw []byte) (Incoming, bool) {
	var fields map[string]any
	if len(raw) > MaxMessageBytes || json.Unmarshal(raw, &fields) != nil || fields == nil {
		return Incoming{}, false
	}
	t, _ := fields["type"].(string)
	if t == "" || len(t) > 50 {
		return Incoming{}, false
	}
	return Incoming{Type: t, Fields: fields}, true
}

// member answers the named member beside type, else inside data.
func (in Incoming) member(name string) (any, bool) {
	if v, ok := in.Fields[name]; ok {
		return v, true
	}
	if d, ok := in.Fields["data"].(map[string]any); ok {
		v, ok := d[name]
		return v, ok
	}
	return nil, false
}

func (in Incoming) str(name string) string {
	v, _ := in.member(name)
	s, _ := v.(string)
	return s
}

// window is a sliding-window limiter of one socket (its reader calls it, one at a time).
type window struct {
	limit int
	per   time.Duration
	hits  []time.Time
	// warned is when the socket was last told it is over the limit, in Unix nanoseconds;
	// 0 if never (8 bytes where a time.Time takes 24, on every socket).
	warned int64
}

// warn answers whether a refused message is answered with an error: once per window, so
// that a burst over the limit fills neither the socket's queue nor its reader (the
// socket stays open, as SPEC 8 says).
func (w *window) warn(now time.Time) bool {
	if w.warned != 0 && now.UnixNano()-w.warned < int64(w.per) {
		return false
	}
	w.warned = now.UnixNano()
	return true
}

func (w *window) allow(now time.Time) bool {
	cut := now.Add(-w.per)
	i := 0
	for i < len(w.hits) && !w.hits[i].After(cut) {
		i++
	}
	w.hits = w.hits[i:]
	if len(w.hits) >= w.limit {
		return false
	}
	w.hits = append(w.hits, now)
	return true
}
