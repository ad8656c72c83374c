package hooks

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/events"
)

// systemEvents are the message types a hook may not use as its event: the built-in client
// to server types (SPEC 4.11), every server to client and server to dashboard type
// (SPEC 6.2, 6.3), and the SDK-local names open and close.
var systemEvents = map[string]bool{
	// client -> server, built in
	"ping": true, "set_status": true, "chat": true, "typing": true, "set_metadata": true,
	// server -> dashboard, server -> client
	"pong": true, "online_count": true, "sessions": true, "session_connect": true,
	"session_disconnect": true, "custom_event": true, "error": true,
	"variable_update": true, "variable_delete": true, "user_variable_update": true,
	"user_variable_delete": true, "message": true, "command": true, "custom": true,
	"force_logout": true, "banned": true,
	// SDK-local
	"open": true, "close": true,
}

// IsSystemEvent reports whether t is a reserved message type that no hook may bind to. The
// match is exact (message types are case-sensitive on the wire).
func IsSystemEvent(t string) bool { return systemEvents[t] }

// SystemEvents returns the reserved message types, for documentation and error messages.
func SystemEvents() []string {
	out := make([]string, 0, len(systemEvents))
	for t := range systemEvents {
		out = append(out, t)
	}
	return sortedStrings(out)
}

var logLevels = map[string]bool{
	events.LevelDebug: true, events.LevelInfo: true, events.LevelWarning: true,
	events.LevelError: true, events.LevelCritical: true,
}

func chars(s string) int { return utf8.RuneCountInString(s) }

// hasControl reports whether s holds a control character or is not valid UTF-8.
func hasControl(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}

// Validate checks every bound of the spec on h: name 1..100 characters, event 1..50
// characters and not a system event, description at most 500, at most MaxConditions
// well-formed conditions, 1..MaxActions well-formed actions, priority 0..999. It returns a
// core VALIDATION_ERROR whose Field names the member at fault (e.g. "conditions[2].operator").
// Validate changes nothing; Normalize fills the defaults.
func Validate(h Hook) error {
	switch {
	case strings.TrimSpace(h.Name) == "":
		return core.Invalid("name", "name is required")
	case chars(h.Name) > MaxNameLength:
		return core.Invalid("name", "name must be at most %d characters", MaxNameLength)
	case hasControl(h.Name):
		return core.Invalid("name", "name must not contain control characters")
	}
	switch {
	case strings.TrimSpace(h.Event) == "":
		return core.Invalid("event", "event is required")
	case chars(h.Event) > MaxEventLength:
		return core.Invalid("event", "event must be at most %d characters", MaxEventLength)
	case hasControl(h.Event):
		return core.Invalid("event", "event must not contain control characters")
	case IsSystemEvent(h.Event):
		return core.Invalid("event", "event %q is a system event and cannot have hooks", h.Event)
	}
	if chars(h.Description) > MaxDescriptionLength {
		return core.Invalid("description", "description must be at most %d characters", MaxDescriptionLength)
	}
	if !utf8.ValidString(h.Description) {
		return core.Invalid("description", "description must be valid UTF-8")
	}
	if h.Priority < MinPriority || h.Priority > MaxPriority {
		return core.Invalid("priority", "priority must be between %d and %d", MinPriority, MaxPriority)
	}
	if len(h.Conditions) > MaxConditions {
		return core.Invalid("conditions", "a hook has at most %d conditions", MaxConditions)
	}
	for i, c := range h.Conditions {
		if err := validateCondition(fmt.Sprintf("conditions[%d]", i), c); err != nil {
			return err
		}
	}
	if len(h.Actions) == 0 {
		return core.Invalid("actions", "actions is required: a hook has at least one action")
	}
	if len(h.Actions) > MaxActions {
		return core.Invalid("actions", "a hook has at most %d actions", MaxActions)
	}
	for i, a := range h.Actions {
		if err := validateAction(fmt.Sprintf("actions[%d]", i), a); err != nil {
			return err
		}
	}
	return nil
}

func validateCondition(at string, c Condition) error {
	if err := validateField(at+".field", c.Field); err != nil {
		return err
	}
	vf := at + ".value"
	switch c.Operator {
	case OpEq, OpNeq:
		if c.Value == nil {
			return core.Invalid(vf, "%s needs a value for operator %s", at, c.Operator)
		}
		if _, ok := scalar(c.Value); !ok {
			return core.Invalid(vf, "%s must be a string, a finite number or a boolean", vf)
		}
		if s, ok := c.Value.(string); ok {
			if err := validateValueString(vf, s); err != nil {
				return err
			}
		}
	case OpContains:
		s, ok := c.Value.(string)
		if !ok || s == "" {
			return core.Invalid(vf, "%s must be a non-empty string for operator contains", vf)
		}
		if err := validateValueString(vf, s); err != nil {
			return err
		}
	case OpExists:
		if c.Value != nil {
			return core.Invalid(vf, "%s must be absent for operator exists", vf)
		}
	case "":
		return core.Invalid(at+".operator", "%s.operator is required", at)
	default:
		return core.Invalid(at+".operator", "unknown operator %q: use eq, neq, contains or exists", c.Operator)
	}
	return nil
}

func validateValueString(field, s string) error {
	if chars(s) > MaxValueLength {
		return core.Invalid(field, "%s must be at most %d characters", field, MaxValueLength)
	}
	if !utf8.ValidString(s) {
		return core.Invalid(field, "%s must be valid UTF-8", field)
	}
	return nil
}

// validateField checks a dotted path: non-empty segments, no control characters, bounded.
// Any other character is allowed in a segment (JSON member names are arbitrary): the path
// is data looked up in the message, never source text.
func validateField(field, path string) error {
	switch {
	case path == "":
		return core.Invalid(field, "%s is required", field)
	case chars(path) > MaxFieldLength:
		return core.Invalid(field, "%s must be at most %d characters", field, MaxFieldLength)
	case hasControl(path):
		return core.Invalid(field, "%s must not contain control characters", field)
	}
	segs := strings.Split(path, ".")
	if len(segs) > MaxFieldDepth {
		return core.Invalid(field, "%s must have at most %d segments", field, MaxFieldDepth)
	}
	for _, s := range segs {
		if s == "" {
			return core.Invalid(field, "%s must be a dotted path without empty segments, like data.room", field)
		}
	}
	return nil
}

// scalar returns v as a JSON scalar of the pipeline's types (string, float64, bool).
func scalar(v any) (any, bool) {
	switch x := v.(type) {
	case string, bool:
		return x, true
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case float32:
		return scalar(float64(x))
	case int:
		return float64(x), true
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return nil, false
		}
		return scalar(f)
	}
	return nil, false
}

func validateAction(at string, a Action) error {
	message := func() error {
		f := at + ".message"
		switch {
		case strings.TrimSpace(a.Message) == "":
			return core.Invalid(f, "%s is required for a %s action", f, a.Type)
		case chars(a.Message) > MaxMessageLength:
			return core.Invalid(f, "%s must be at most %d characters", f, MaxMessageLength)
		case !utf8.ValidString(a.Message):
			return core.Invalid(f, "%s must be valid UTF-8", f)
		}
		return nil
	}
	userID := func(required bool) error {
		f := at + ".userId"
		switch {
		case a.UserID == "" && required:
			return core.Invalid(f, "%s is required for a %s action", f, a.Type)
		case chars(a.UserID) > MaxUserIDLength:
			return core.Invalid(f, "%s must be at most %d characters", f, MaxUserIDLength)
		case hasControl(a.UserID):
			return core.Invalid(f, "%s must not contain control characters", f)
		}
		return nil
	}
	messageType := func() error {
		switch a.MessageType {
		case "", MessageInfo, MessageWarning, MessageAlert:
			return nil
		}
		return core.Invalid(at+".messageType", "%s.messageType must be info, warning or alert", at)
	}
	reason := func() error {
		f := at + ".reason"
		switch {
		case chars(a.Reason) > MaxReasonLength:
			return core.Invalid(f, "%s must be at most %d characters", f, MaxReasonLength)
		case !utf8.ValidString(a.Reason):
			return core.Invalid(f, "%s must be valid UTF-8", f)
		}
		return nil
	}
	switch a.Type {
	case ActionRespond:
		return message()
	case ActionSendMessage:
		return first(userID(true), message(), messageType())
	case ActionBroadcast:
		return first(message(), messageType())
	case ActionPushJSON:
		if err := userID(false); err != nil {
			return err
		}
		f := at + ".payload"
		if a.Payload == nil {
			return core.Invalid(f, "%s is required for a push_json action", f)
		}
		b, err := json.Marshal(a.Payload)
		if err != nil {
			return core.Invalid(f, "%s must be a JSON object", f)
		}
		if len(b) > MaxPayloadBytes {
			return core.Invalid(f, "%s must be at most %d bytes as JSON", f, MaxPayloadBytes)
		}
		return nil
	case ActionKick, ActionBan:
		return first(userID(false), reason())
	case ActionLog:
		if err := message(); err != nil {
			return err
		}
		if a.Level != "" && !logLevels[a.Level] {
			return core.Invalid(at+".level", "%s.level must be DEBUG, INFO, WARNING, ERROR or CRITICAL", at)
		}
		return nil
	case "":
		return core.Invalid(at+".type", "%s.type is required", at)
	}
	return core.Invalid(at+".type", "unknown action type %q: use respond, send_message, broadcast, push_json, kick, ban or log", a.Type)
}

func first(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Normalize fills the defaults of h in place: messageType info for broadcast and
// send_message, level INFO for log. It leaves everything else as it is.
func Normalize(h *Hook) {
	for i := range h.Actions {
		a := &h.Actions[i]
		switch a.Type {
		case ActionBroadcast, ActionSendMessage:
			if a.MessageType == "" {
				a.MessageType = MessageInfo
			}
		case ActionLog:
			if a.Level == "" {
				a.Level = events.LevelInfo
			}
		}
	}
}
