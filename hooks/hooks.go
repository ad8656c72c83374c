package hooks

// Condition is one condition object as the dashboard sends it.
type Condition struct {
	// Field is a dotted path into the client message, e.g. "data.room", "message", "type";
	// a numeric segment indexes an array ("data.items.0").
	Field string `json:"field"`
	// Operator is one of the Op* constants: eq, neq, contains, exists.
	Operator string `json:"operator"`
	// Value is a JSON scalar (string, number, bool); required for eq, neq and contains
	// (contains: a non-empty string), absent for exists.
	Value any `json:"value,omitempty"`
}

// Action is one action object: Type plus type-specific members.
type Action struct {
	// Type is one of the Action* constants.
	Type string `json:"type"`
	// UserID is the user to act on: required for send_message; optional for push_json (none:
	// everyone), kick and ban (none: the sender).
	UserID string `json:"userId,omitempty"`
	// Message is the text of respond, send_message, broadcast and log (required, at most
	// MaxMessageLength characters); a template (see Render).
	Message string `json:"message,omitempty"`
	// MessageType is the message type of broadcast and send_message: info (default),
	// warning or alert.
	MessageType string `json:"messageType,omitempty"`
	// Reason is the optional reason of kick and ban (at most MaxReasonLength characters);
	// a template.
	Reason string `json:"reason,omitempty"`
	// Level is the level of a log action: one of the core/events levels, INFO by default.
	Level string `json:"level,omitempty"`
	// Payload is the JSON object of push_json (required).
	Payload map[string]any `json:"payload,omitempty"`
}

// Hook is a hook as the owner defines it (SPEC 2, WebSocket hook).
type Hook struct {
	ID, Name, Event, Description string
	Conditions                   []Condition
	Actions                      []Action
	Enabled                      bool
	// Priority orders the hooks of an event: lower runs first.
	Priority int
}

// Condition operators (SPEC 4.9).
const (
	OpEq       = "eq"
	OpNeq      = "neq"
	OpContains = "contains"
	OpExists   = "exists"
)

// Action types (SPEC 4.9).
const (
	ActionRespond     = "respond"
	ActionSendMessage = "send_message"
	ActionBroadcast   = "broadcast"
	ActionPushJSON    = "push_json"
	ActionKick        = "kick"
	ActionBan         = "ban"
	ActionLog         = "log"
)

// Message types of broadcast and send_message (SPEC 6.3, message).
const (
	MessageInfo    = "info"
	MessageWarning = "warning"
	MessageAlert   = "alert"
)

// Targets of a Step.
const (
	TargetSender = "sender" // the user who sent the message; Step.UserID is the sender's id
	TargetUser   = "user"   // the user named by the action; Step.UserID is that user
	TargetAll    = "all"    // every connected client of the application
	TargetNone   = ""       // no socket target (log)
)

// Bounds of SPEC 8 ("WebSocket limits") and of this package where the spec names none.
const (
	MaxHooksPerApp       = 20
	MaxActions           = 5
	MaxConditions        = 5
	MaxNameLength        = 100
	MaxEventLength       = 50
	MaxDescriptionLength = 500
	MinPriority          = 0
	MaxPriority          = 999

	// MaxMessageLength bounds the Message template of an action, in characters.
	MaxMessageLength = 2000
	// MaxReasonLength bounds the Reason template of kick and ban, in characters.
	MaxReasonLength = 500
	// MaxRenderedLength bounds a rendered Message or Reason, in characters; longer output is
	// cut.
	MaxRenderedLength = 4000
	// MaxFieldLength bounds a condition's field path, in characters.
	MaxFieldLength = 200
	// MaxFieldDepth bounds the number of segments of a field path.
	MaxFieldDepth = 10
	// MaxValueLength bounds a string condition value, in characters.
	MaxValueLength = 500
	// MaxUserIDLength bounds an action's userId, in characters.
	MaxUserIDLength = 100
	// MaxPayloadBytes bounds the JSON encoding of a push_json payload.
	MaxPayloadBytes = 16 << 10
)

// Message is a client socket message seen by the pipeline.
type Message struct {
	// Type is the message type.
	Type string
	// Fields is the whole decoded JSON message (type, data, message and any members beside
	// type). The pipeline only reads it.
	Fields map[string]any
	// UserID, Username and IP identify the sender.
	UserID, Username, IP string
}

// Step is one action to carry out, with its target resolved and its templates filled.
type Step struct {
	HookID, HookName string
	// Action is the hook's action with Message and Reason rendered and defaults filled;
	// Payload is a copy the caller may keep.
	Action Action
	// Target is TargetSender, TargetUser, TargetAll or TargetNone (log).
	Target string
	// UserID is the user to act on when Target is TargetUser or TargetSender (the sender's
	// id for TargetSender).
	UserID string
}
