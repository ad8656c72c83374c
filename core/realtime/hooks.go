package realtime

import "context"

// Planner runs an app's WebSocket hooks over a client message and answers the actions to
// carry out, in order (core/wshooks).
type Planner interface {
	Plan(ctx context.Context, appID string, m HookInput) ([]HookAction, error)
}

// HookInput is a client message as hooks see it.
type HookInput struct {
	Type string
	// Fields is the whole decoded message: type, data, message and any other members.
	Fields               map[string]any
	UserID, Username, IP string
}

// HookAction is one action a hook planned, its target resolved and its texts rendered.
type HookAction struct {
	HookID, HookName string
	// Type is respond, send_message, broadcast, push_json, kick, ban or log.
	Type string
	// Target is "sender", "user" or "all" ("" for log); UserID is the user for "user".
	Target      string
	UserID      string
	Message     string
	MessageType string
	Reason      string
	Level       string
	Payload     map[string]any
}

// Banner sets a user's banned flag as its app's owner would (the user.ban event follows).
type Banner func(ctx context.Context, appID, userID, reason string) error

// MessageType is a message's type: info, warning or alert (info when unset).
func MessageType(t string) string {
	switch t {
	case "warning", "alert":
		return t
	}
	return "info"
}
