package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// MaxMessageBytes bounds one incoming message (SPEC 8).
const MaxMessageBytes = 64 << 10

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

// Outgoing is a message as the SDKs expect it: `{"type": ..., "data": ...}`.
type Outgoing struct {
	Type string `json:"type"`
	Data any    `json:"data,omitempty"`
}

// Encode marshals m without HTML escaping (the C++ SDK does not decode \u0026 and the like).
func Encode(m Outgoing) []byte {
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
	return Encode(Outgoing{Type: TypeError, Data: map[string]any{"message": text}})
}

// Incoming is a decoded message from a socket: its type, and every member (members such
// as userId and message may sit beside type, or inside data).
type Incoming struct {
	Type   string
	Fields map[string]any
}

// Decode parses a socket message; ok is false for anything but a JSON object with a
// string type of 1 to 50 characters, or a message over MaxMessageBytes.
func Decode(raw []byte) (Incoming, bool) {
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

// Member answers the named member beside type, else inside data.
func (in Incoming) Member(name string) (any, bool) {
	if v, ok := in.Fields[name]; ok {
		return v, true
	}
	if d, ok := in.Fields["data"].(map[string]any); ok {
		v, ok := d[name]
		return v, ok
	}
	return nil, false
}

// Str answers the named member when it is a string, else "".
func (in Incoming) Str(name string) string {
	v, _ := in.Member(name)
	s, _ := v.(string)
	return s
}

// Limiter is a socket's message limiter (core/realtime's Window): Allow counts a message
// within the bound, Warn says whether a refused one is answered (once per window).
type Limiter interface {
	Allow(now time.Time) bool
	Warn(now time.Time) bool
	Bound() (limit int, per time.Duration)
}

// Accept is every frame's first step in its socket's actor, a client's or a dashboard's:
// the limiter counts it (a refused frame is answered, once per window, with the bound)
// and it is decoded (a frame that is no message is answered with what a message is).
// ok is false for either; nothing else changes.
func Accept(peer Peer, rate Limiter, now time.Time, raw []byte) (Incoming, bool) {
	if !rate.Allow(now) {
		if rate.Warn(now) {
			limit, per := rate.Bound()
			peer.Send(ErrorMessage(fmt.Sprintf("rate limited: at most %d messages per %s", limit, per)))
		}
		return Incoming{}, false
	}
	in, ok := Decode(raw)
	if !ok {
		peer.Send(ErrorMessage("a message is a JSON object with a string type"))
	}
	return in, ok
}
