package hooks

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/keyward/keyward/core"
)

// validHook is a hook that passes Validate; the cases below break one member each.
func validHook() Hook {
	return Hook{
		ID: "h1", Name: "Greeter", Event: "join_room", Description: "greets",
		Conditions: []Condition{{Field: "data.room", Operator: OpEq, Value: "lobby"}},
		Actions:    []Action{{Type: ActionRespond, Message: "welcome {{username}}"}},
		Enabled:    true,
	}
}

func conds(n int) []Condition {
	out := make([]Condition, n)
	for i := range out {
		out[i] = Condition{Field: "data.x", Operator: OpExists}
	}
	return out
}

func acts(n int) []Action {
	out := make([]Action, n)
	for i := range out {
		out[i] = Action{Type: ActionLog, Message: "m"}
	}
	return out
}

func TestValidate(t *testing.T) {
	long := func(n int) string { return strings.Repeat("é", n) } // multi-byte: counts characters
	cases := []struct {
		name  string
		edit  func(h *Hook)
		field string // "" = valid
	}{
		{"valid", func(h *Hook) {}, ""},
		// name
		{"name empty", func(h *Hook) { h.Name = "" }, "name"},
		{"name blank", func(h *Hook) { h.Name = "   " }, "name"},
		{"name 1 char", func(h *Hook) { h.Name = "x" }, ""},
		{"name 100 chars", func(h *Hook) { h.Name = long(100) }, ""},
		{"name 101 chars", func(h *Hook) { h.Name = long(101) }, "name"},
		{"name control", func(h *Hook) { h.Name = "a\nb" }, "name"},
		// event
		{"event empty", func(h *Hook) { h.Event = "" }, "event"},
		{"event 1 char", func(h *Hook) { h.Event = "x" }, ""},
		{"event 50 chars", func(h *Hook) { h.Event = long(50) }, ""},
		{"event 51 chars", func(h *Hook) { h.Event = long(51) }, "event"},
		{"event system ping", func(h *Hook) { h.Event = "ping" }, "event"},
		{"event system chat", func(h *Hook) { h.Event = "chat" }, "event"},
		{"event system open", func(h *Hook) { h.Event = "open" }, "event"},
		{"event system message", func(h *Hook) { h.Event = "message" }, "event"},
		{"event control", func(h *Hook) { h.Event = "a\x00b" }, "event"},
		{"event case differs from system", func(h *Hook) { h.Event = "Ping" }, ""},
		// description
		{"description empty", func(h *Hook) { h.Description = "" }, ""},
		{"description 500", func(h *Hook) { h.Description = long(500) }, ""},
		{"description 501", func(h *Hook) { h.Description = long(501) }, "description"},
		{"description bad utf8", func(h *Hook) { h.Description = "\xff" }, "description"},
		// priority
		{"priority -1", func(h *Hook) { h.Priority = -1 }, "priority"},
		{"priority 0", func(h *Hook) { h.Priority = 0 }, ""},
		{"priority 999", func(h *Hook) { h.Priority = 999 }, ""},
		{"priority 1000", func(h *Hook) { h.Priority = 1000 }, "priority"},
		// condition count
		{"no conditions", func(h *Hook) { h.Conditions = nil }, ""},
		{"5 conditions", func(h *Hook) { h.Conditions = conds(5) }, ""},
		{"6 conditions", func(h *Hook) { h.Conditions = conds(6) }, "conditions"},
		// action count
		{"no actions", func(h *Hook) { h.Actions = nil }, "actions"},
		{"empty actions", func(h *Hook) { h.Actions = []Action{} }, "actions"},
		{"1 action", func(h *Hook) { h.Actions = acts(1) }, ""},
		{"5 actions", func(h *Hook) { h.Actions = acts(5) }, ""},
		{"6 actions", func(h *Hook) { h.Actions = acts(6) }, "actions"},
		// condition fields
		{"field empty", func(h *Hook) { h.Conditions = conds(3); h.Conditions[2].Field = "" }, "conditions[2].field"},
		{"field empty segment", func(h *Hook) { h.Conditions[0].Field = "data..room" }, "conditions[0].field"},
		{"field leading dot", func(h *Hook) { h.Conditions[0].Field = ".room" }, "conditions[0].field"},
		{"field trailing dot", func(h *Hook) { h.Conditions[0].Field = "data." }, "conditions[0].field"},
		{"field 10 segments", func(h *Hook) { h.Conditions[0].Field = strings.Repeat("a.", 9) + "a" }, ""},
		{"field 11 segments", func(h *Hook) { h.Conditions[0].Field = strings.Repeat("a.", 10) + "a" }, "conditions[0].field"},
		{"field 200 chars", func(h *Hook) { h.Conditions[0].Field = long(200) }, ""},
		{"field 201 chars", func(h *Hook) { h.Conditions[0].Field = long(201) }, "conditions[0].field"},
		{"field control", func(h *Hook) { h.Conditions[0].Field = "data.\troom" }, "conditions[0].field"},
		{"field with quotes is data", func(h *Hook) { h.Conditions[0].Field = `") || true || ("` }, ""},
		{"field numeric segment", func(h *Hook) { h.Conditions[0].Field = "data.items.0" }, ""},
		// operators
		{"operator empty", func(h *Hook) { h.Conditions = conds(2); h.Conditions[1].Operator = "" }, "conditions[1].operator"},
		{"operator unknown", func(h *Hook) { h.Conditions[0].Operator = "like" }, "conditions[0].operator"},
		{"operator wrong case", func(h *Hook) { h.Conditions[0].Operator = "EQ" }, "conditions[0].operator"},
		{"operator expr syntax", func(h *Hook) { h.Conditions[0].Operator = "==" }, "conditions[0].operator"},
		// values
		{"eq string", func(h *Hook) { h.Conditions[0].Value = "x" }, ""},
		{"eq empty string", func(h *Hook) { h.Conditions[0].Value = "" }, ""},
		{"eq float", func(h *Hook) { h.Conditions[0].Value = 5.0 }, ""},
		{"eq int", func(h *Hook) { h.Conditions[0].Value = 5 }, ""},
		{"eq bool false", func(h *Hook) { h.Conditions[0].Value = false }, ""},
		{"eq no value", func(h *Hook) { h.Conditions[0].Value = nil }, "conditions[0].value"},
		{"neq no value", func(h *Hook) { h.Conditions[0].Operator = OpNeq; h.Conditions[0].Value = nil }, "conditions[0].value"},
		{"eq NaN", func(h *Hook) { h.Conditions[0].Value = math.NaN() }, "conditions[0].value"},
		{"eq Inf", func(h *Hook) { h.Conditions[0].Value = math.Inf(1) }, "conditions[0].value"},
		{"eq object", func(h *Hook) { h.Conditions[0].Value = map[string]any{"a": 1.0} }, "conditions[0].value"},
		{"eq array", func(h *Hook) { h.Conditions[0].Value = []any{"a"} }, "conditions[0].value"},
		{"eq value 500", func(h *Hook) { h.Conditions[0].Value = long(500) }, ""},
		{"eq value 501", func(h *Hook) { h.Conditions[0].Value = long(501) }, "conditions[0].value"},
		{"eq value bad utf8", func(h *Hook) { h.Conditions[0].Value = "\xfe" }, "conditions[0].value"},
		{"contains string", func(h *Hook) { h.Conditions[0].Operator = OpContains }, ""},
		{"contains number", func(h *Hook) { h.Conditions[0].Operator = OpContains; h.Conditions[0].Value = 5.0 }, "conditions[0].value"},
		{"contains empty", func(h *Hook) { h.Conditions[0].Operator = OpContains; h.Conditions[0].Value = "" }, "conditions[0].value"},
		{"contains no value", func(h *Hook) { h.Conditions[0].Operator = OpContains; h.Conditions[0].Value = nil }, "conditions[0].value"},
		{"contains 501", func(h *Hook) { h.Conditions[0].Operator = OpContains; h.Conditions[0].Value = long(501) }, "conditions[0].value"},
		{"exists no value", func(h *Hook) { h.Conditions[0].Operator = OpExists; h.Conditions[0].Value = nil }, ""},
		{"exists with value", func(h *Hook) { h.Conditions[0].Operator = OpExists }, "conditions[0].value"},
		// action types
		{"action type empty", func(h *Hook) { h.Actions = acts(3); h.Actions[2].Type = "" }, "actions[2].type"},
		{"action type unknown", func(h *Hook) { h.Actions[0].Type = "exec" }, "actions[0].type"},
		{"action type wrong case", func(h *Hook) { h.Actions[0].Type = "Respond" }, "actions[0].type"},
		// respond
		{"respond no message", func(h *Hook) { h.Actions[0].Message = "" }, "actions[0].message"},
		{"respond blank message", func(h *Hook) { h.Actions[0].Message = "  " }, "actions[0].message"},
		{"respond 2000", func(h *Hook) { h.Actions[0].Message = long(2000) }, ""},
		{"respond 2001", func(h *Hook) { h.Actions[0].Message = long(2001) }, "actions[0].message"},
		{"respond bad utf8", func(h *Hook) { h.Actions[0].Message = "a\xffb" }, "actions[0].message"},
		// send_message
		{"send_message ok", func(h *Hook) { h.Actions[0] = Action{Type: ActionSendMessage, UserID: "u2", Message: "hi"} }, ""},
		{"send_message alert", func(h *Hook) {
			h.Actions[0] = Action{Type: ActionSendMessage, UserID: "u2", Message: "hi", MessageType: MessageAlert}
		}, ""},
		{"send_message no user", func(h *Hook) { h.Actions[0] = Action{Type: ActionSendMessage, Message: "hi"} }, "actions[0].userId"},
		{"send_message no message", func(h *Hook) { h.Actions[0] = Action{Type: ActionSendMessage, UserID: "u2"} }, "actions[0].message"},
		{"send_message 2001", func(h *Hook) { h.Actions[0] = Action{Type: ActionSendMessage, UserID: "u2", Message: long(2001)} }, "actions[0].message"},
		{"send_message bad type", func(h *Hook) {
			h.Actions[0] = Action{Type: ActionSendMessage, UserID: "u2", Message: "hi", MessageType: "danger"}
		}, "actions[0].messageType"},
		{"send_message userId 100", func(h *Hook) { h.Actions[0] = Action{Type: ActionSendMessage, UserID: long(100), Message: "hi"} }, ""},
		{"send_message userId 101", func(h *Hook) { h.Actions[0] = Action{Type: ActionSendMessage, UserID: long(101), Message: "hi"} }, "actions[0].userId"},
		// broadcast
		{"broadcast ok", func(h *Hook) {
			h.Actions[0] = Action{Type: ActionBroadcast, Message: "all", MessageType: MessageWarning}
		}, ""},
		{"broadcast no message", func(h *Hook) { h.Actions[0] = Action{Type: ActionBroadcast} }, "actions[0].message"},
		{"broadcast 2001", func(h *Hook) { h.Actions[0] = Action{Type: ActionBroadcast, Message: long(2001)} }, "actions[0].message"},
		{"broadcast bad type", func(h *Hook) { h.Actions[0] = Action{Type: ActionBroadcast, Message: "m", MessageType: "INFO"} }, "actions[0].messageType"},
		// push_json
		{"push_json all", func(h *Hook) { h.Actions[0] = Action{Type: ActionPushJSON, Payload: map[string]any{"a": 1.0}} }, ""},
		{"push_json empty object", func(h *Hook) { h.Actions[0] = Action{Type: ActionPushJSON, Payload: map[string]any{}} }, ""},
		{"push_json user", func(h *Hook) { h.Actions[0] = Action{Type: ActionPushJSON, UserID: "u", Payload: map[string]any{}} }, ""},
		{"push_json no payload", func(h *Hook) { h.Actions[0] = Action{Type: ActionPushJSON} }, "actions[0].payload"},
		{"push_json NaN", func(h *Hook) { h.Actions[0] = Action{Type: ActionPushJSON, Payload: map[string]any{"a": math.NaN()}} }, "actions[0].payload"},
		{"push_json too big", func(h *Hook) {
			h.Actions[0] = Action{Type: ActionPushJSON, Payload: map[string]any{"a": strings.Repeat("x", MaxPayloadBytes)}}
		}, "actions[0].payload"},
		{"push_json userId 101", func(h *Hook) {
			h.Actions[0] = Action{Type: ActionPushJSON, UserID: long(101), Payload: map[string]any{}}
		}, "actions[0].userId"},
		// kick, ban
		{"kick sender", func(h *Hook) { h.Actions[0] = Action{Type: ActionKick} }, ""},
		{"kick user reason 500", func(h *Hook) { h.Actions[0] = Action{Type: ActionKick, UserID: "u", Reason: long(500)} }, ""},
		{"kick reason 501", func(h *Hook) { h.Actions[0] = Action{Type: ActionKick, Reason: long(501)} }, "actions[0].reason"},
		{"kick userId control", func(h *Hook) { h.Actions[0] = Action{Type: ActionKick, UserID: "u\n"} }, "actions[0].userId"},
		{"ban sender", func(h *Hook) { h.Actions[0] = Action{Type: ActionBan} }, ""},
		{"ban reason 501", func(h *Hook) { h.Actions[0] = Action{Type: ActionBan, Reason: long(501)} }, "actions[0].reason"},
		{"ban userId 101", func(h *Hook) { h.Actions[0] = Action{Type: ActionBan, UserID: long(101)} }, "actions[0].userId"},
		// log
		{"log default level", func(h *Hook) { h.Actions[0] = Action{Type: ActionLog, Message: "m"} }, ""},
		{"log warning", func(h *Hook) { h.Actions[0] = Action{Type: ActionLog, Message: "m", Level: "WARNING"} }, ""},
		{"log critical", func(h *Hook) { h.Actions[0] = Action{Type: ActionLog, Message: "m", Level: "CRITICAL"} }, ""},
		{"log lower-case level", func(h *Hook) { h.Actions[0] = Action{Type: ActionLog, Message: "m", Level: "info"} }, "actions[0].level"},
		{"log bad level", func(h *Hook) { h.Actions[0] = Action{Type: ActionLog, Message: "m", Level: "FATAL"} }, "actions[0].level"},
		{"log no message", func(h *Hook) { h.Actions[0] = Action{Type: ActionLog} }, "actions[0].message"},
		{"log 2001", func(h *Hook) { h.Actions[0] = Action{Type: ActionLog, Message: long(2001)} }, "actions[0].message"},
		// the first fault is the one reported, in index order
		{"second action at fault", func(h *Hook) { h.Actions = append(acts(1), Action{Type: ActionRespond}) }, "actions[1].message"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := validHook()
			tc.edit(&h)
			err := Validate(h)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var e *core.Error
			if !errors.As(err, &e) {
				t.Fatalf("want a *core.Error on %s, got %v", tc.field, err)
			}
			if e.Code != core.CodeValidation || e.Field != tc.field {
				t.Fatalf("got code %s field %q (%s), want VALIDATION_ERROR on %q", e.Code, e.Field, e.Message, tc.field)
			}
		})
	}
}

func TestValidateChangesNothing(t *testing.T) {
	h := validHook()
	h.Actions = []Action{{Type: ActionBroadcast, Message: "m"}, {Type: ActionLog, Message: "m"}}
	if err := Validate(h); err != nil {
		t.Fatal(err)
	}
	if h.Actions[0].MessageType != "" || h.Actions[1].Level != "" {
		t.Fatal("Validate filled defaults")
	}
}

func TestIsSystemEvent(t *testing.T) {
	system := []string{
		"ping", "set_status", "chat", "typing", "set_metadata",
		"pong", "online_count", "sessions", "session_connect", "session_disconnect", "custom_event",
		"error", "variable_update", "variable_delete", "user_variable_update", "user_variable_delete",
		"message", "command", "custom", "force_logout", "banned", "open", "close",
	}
	for _, s := range system {
		if !IsSystemEvent(s) {
			t.Errorf("%q should be a system event", s)
		}
		h := validHook()
		h.Event = s
		var e *core.Error
		if err := Validate(h); !errors.As(err, &e) || e.Field != "event" {
			t.Errorf("hook on %q: got %v, want a refusal on event", s, err)
		}
	}
	if got := len(SystemEvents()); got != len(system) {
		t.Errorf("SystemEvents has %d names, want %d", got, len(system))
	}
	for _, s := range []string{"", "join_room", "Ping", "PING", "ping ", "get_online", "kick", "room.join"} {
		if IsSystemEvent(s) {
			t.Errorf("%q should not be a system event", s)
		}
	}
}

func TestNormalize(t *testing.T) {
	h := validHook()
	h.Actions = []Action{
		{Type: ActionBroadcast, Message: "m"},
		{Type: ActionSendMessage, UserID: "u", Message: "m"},
		{Type: ActionSendMessage, UserID: "u", Message: "m", MessageType: MessageAlert},
		{Type: ActionLog, Message: "m"},
		{Type: ActionLog, Message: "m", Level: "ERROR"},
	}
	Normalize(&h)
	want := []string{"info", "info", "alert", "INFO", "ERROR"}
	got := []string{h.Actions[0].MessageType, h.Actions[1].MessageType, h.Actions[2].MessageType, h.Actions[3].Level, h.Actions[4].Level}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("action %d: got %q, want %q", i, got[i], want[i])
		}
	}
	r := Hook{Actions: []Action{{Type: ActionRespond, Message: "m"}, {Type: ActionKick}}}
	Normalize(&r)
	if r.Actions[0].MessageType != "" || r.Actions[0].Level != "" || r.Actions[1].MessageType != "" {
		t.Errorf("Normalize filled members of other types: %+v", r.Actions)
	}
	if err := Validate(h); err != nil {
		t.Errorf("a normalised hook must stay valid: %v", err)
	}
}
