package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/keyward/keyward/core"
)

// decode turns a JSON client message into Fields, as the socket edge does.
func decode(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

const sample = `{"type":"join_room","message":"hello world","userId":"u9",
 "data":{"room":"lobby","n":5,"zero":0,"s5":"5","flag":true,"off":false,"empty":"","nul":null,
  "arr":["a","b",1],"emptyArr":[],"obj":{"k":"v","deep":{"x":"y"}},"emptyObj":{},
  "items":[{"name":"first"},{"name":"second"}], "0":"zero-key"}}`

func sampleMessage(t testing.TB) Message {
	return Message{Type: "join_room", Fields: decode(t, sample), UserID: "u1", Username: "alice", IP: "203.0.113.7"}
}

func hookWith(cs ...Condition) Hook {
	return Hook{ID: "h", Name: "h", Event: "join_room", Enabled: true, Conditions: cs,
		Actions: []Action{{Type: ActionRespond, Message: "ok"}}}
}

func matches(t *testing.T, h Hook, m Message) bool {
	t.Helper()
	p, err := Compile([]Hook{h})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return len(p.Plan(m)) > 0
}

func TestOperators(t *testing.T) {
	cases := []struct {
		field, op string
		value     any
		want      bool
	}{
		// eq
		{"data.room", OpEq, "lobby", true},
		{"data.room", OpEq, "Lobby", false},
		{"data.room", OpEq, "lob", false},
		{"type", OpEq, "join_room", true},
		{"message", OpEq, "hello world", true},
		{"data.n", OpEq, 5.0, true},
		{"data.n", OpEq, 5, true}, // an int value from Go compares as a number
		{"data.n", OpEq, "5", false},
		{"data.s5", OpEq, 5.0, false}, // "5" is not 5
		{"data.s5", OpEq, "5", true},
		{"data.zero", OpEq, 0.0, true},
		{"data.zero", OpEq, false, false},
		{"data.flag", OpEq, true, true},
		{"data.flag", OpEq, "true", false},
		{"data.off", OpEq, false, true},
		{"data.empty", OpEq, "", true},
		{"data.nul", OpEq, "", false},
		{"data.nul", OpEq, false, false},
		{"data.missing", OpEq, "", false},
		{"data.missing", OpEq, false, false},
		{"data.missing", OpEq, 0.0, false},
		{"nothing.at.all", OpEq, "x", false},
		{"data.obj", OpEq, "v", false},
		{"data.arr", OpEq, "a", false},
		{"data.obj.k", OpEq, "v", true},
		{"data.obj.deep.x", OpEq, "y", true},
		{"data.arr.0", OpEq, "a", true},
		{"data.arr.2", OpEq, 1.0, true},
		{"data.arr.3", OpEq, "a", false}, // out of range
		{"data.arr.-1", OpEq, "a", false},
		{"data.arr.01", OpEq, "b", false}, // not a canonical index
		{"data.items.1.name", OpEq, "second", true},
		{"data.0", OpEq, "zero-key", true},    // numeric segment on an object is a member name
		{"data.room.x", OpEq, "lobby", false}, // walking into a string
		// neq
		{"data.room", OpNeq, "lobby", false},
		{"data.room", OpNeq, "hall", true},
		{"data.n", OpNeq, "5", true},
		{"data.n", OpNeq, 5.0, false},
		{"data.flag", OpNeq, false, true},
		{"data.missing", OpNeq, "x", true},
		{"data.missing", OpNeq, "", true},
		{"data.nul", OpNeq, "", true},
		{"data.obj", OpNeq, "v", true},
		// contains
		{"message", OpContains, "world", true},
		{"message", OpContains, "hello world", true},
		{"message", OpContains, "World", false},
		{"message", OpContains, "planet", false},
		{"data.arr", OpContains, "b", true},
		{"data.arr", OpContains, "c", false},
		{"data.arr", OpContains, "1", false}, // the element is the number 1
		{"data.emptyArr", OpContains, "a", false},
		{"data.n", OpContains, "5", false},
		{"data.flag", OpContains, "t", false},
		{"data.obj", OpContains, "k", false},
		{"data.nul", OpContains, "a", false},
		{"data.missing", OpContains, "a", false},
		{"data.empty", OpContains, "a", false},
		// exists
		{"data.room", OpExists, nil, true},
		{"data.n", OpExists, nil, true},
		{"data.zero", OpExists, nil, true},
		{"data.flag", OpExists, nil, true},
		{"data.off", OpExists, nil, true},
		{"data.arr", OpExists, nil, true},
		{"data.obj", OpExists, nil, true},
		{"data.empty", OpExists, nil, false},
		{"data.nul", OpExists, nil, false},
		{"data.emptyArr", OpExists, nil, false},
		{"data.emptyObj", OpExists, nil, false},
		{"data.missing", OpExists, nil, false},
		{"data.arr.5", OpExists, nil, false},
		{"type", OpExists, nil, true},
	}
	m := sampleMessage(t)
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s %s %v", tc.field, tc.op, tc.value), func(t *testing.T) {
			if got := matches(t, hookWith(Condition{Field: tc.field, Operator: tc.op, Value: tc.value}), m); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTypeFallsBackToMessageType(t *testing.T) {
	m := Message{Type: "join_room", Fields: map[string]any{"data": map[string]any{}}, UserID: "u"}
	if !matches(t, hookWith(Condition{Field: "type", Operator: OpEq, Value: "join_room"}), m) {
		t.Fatal("type should resolve to Message.Type when Fields has no type")
	}
	m.Fields = nil
	if !matches(t, hookWith(Condition{Field: "type", Operator: OpEq, Value: "join_room"}), m) {
		t.Fatal("type should resolve with nil Fields")
	}
	if matches(t, hookWith(Condition{Field: "data.room", Operator: OpExists}), m) {
		t.Fatal("nil Fields has no data")
	}
}

func TestGoTypedFields(t *testing.T) {
	// Fields built in Go rather than decoded: ints, json.Number, []string, map[string]string.
	m := Message{Type: "join_room", UserID: "u", Fields: map[string]any{
		"n": 5, "num": json.Number("7.5"), "tags": []string{"x", "y"}, "meta": map[string]string{"k": "v"}}}
	for _, tc := range []struct {
		c    Condition
		want bool
	}{
		{Condition{Field: "n", Operator: OpEq, Value: 5.0}, true},
		{Condition{Field: "num", Operator: OpEq, Value: 7.5}, true},
		{Condition{Field: "tags", Operator: OpContains, Value: "y"}, true},
		{Condition{Field: "tags.1", Operator: OpEq, Value: "y"}, true},
		{Condition{Field: "meta.k", Operator: OpEq, Value: "v"}, true},
		{Condition{Field: "meta", Operator: OpExists}, true},
		{Condition{Field: "tags", Operator: OpExists}, true},
	} {
		if got := matches(t, hookWith(tc.c), m); got != tc.want {
			t.Errorf("%+v: got %v, want %v", tc.c, got, tc.want)
		}
	}
}

func TestConditionsAreANDed(t *testing.T) {
	m := sampleMessage(t)
	yes := []Condition{
		{Field: "data.room", Operator: OpEq, Value: "lobby"},
		{Field: "message", Operator: OpContains, Value: "hello"},
		{Field: "data.flag", Operator: OpExists},
		{Field: "data.n", Operator: OpNeq, Value: 6.0},
		{Field: "data.arr", Operator: OpContains, Value: "a"},
	}
	if !matches(t, hookWith(yes...), m) {
		t.Fatal("all five hold: the hook must match")
	}
	for i := range yes {
		cs := append([]Condition(nil), yes...)
		cs[i] = Condition{Field: "data.missing", Operator: OpExists}
		if matches(t, hookWith(cs...), m) {
			t.Errorf("condition %d fails: the hook must not match", i)
		}
	}
	if !matches(t, hookWith(), m) {
		t.Fatal("a hook without conditions always matches")
	}
}

func TestPriorityOrderAndDisabled(t *testing.T) {
	mk := func(id string, prio int, enabled bool, event string) Hook {
		return Hook{ID: id, Name: "n" + id, Event: event, Priority: prio, Enabled: enabled,
			Actions: []Action{{Type: ActionLog, Message: id + "-1"}, {Type: ActionLog, Message: id + "-2"}}}
	}
	hooks := []Hook{
		mk("a", 10, true, "e"),
		mk("b", 0, true, "e"),
		mk("c", 10, true, "e"), // same priority as a: stays after a
		mk("d", 5, false, "e"), // disabled
		mk("e", 1, true, "other"),
		mk("f", 999, true, "e"),
		mk("g", 0, true, "e"), // same priority as b: stays after b
	}
	hooks[3].Name = "" // invalid but disabled: not even validated
	p, err := Compile(hooks)
	if err != nil {
		t.Fatal(err)
	}
	if p.Len() != 6 {
		t.Fatalf("Len = %d, want 6", p.Len())
	}
	if got := p.Events(); !reflect.DeepEqual(got, []string{"e", "other"}) {
		t.Fatalf("Events = %v", got)
	}
	steps := p.Plan(Message{Type: "e", UserID: "u"})
	var got []string
	for _, s := range steps {
		got = append(got, s.Action.Message)
		if s.HookName != "n"+s.HookID {
			t.Errorf("step of %s carries hook name %q", s.HookID, s.HookName)
		}
	}
	want := []string{"b-1", "b-2", "g-1", "g-2", "a-1", "a-2", "c-1", "c-2", "f-1", "f-2"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
	if s := p.Plan(Message{Type: "other"}); len(s) != 2 || s[0].HookID != "e" {
		t.Fatalf("other: %+v", s)
	}
	if s := p.Plan(Message{Type: "nobody"}); s != nil {
		t.Fatalf("unknown type: %+v", s)
	}
	// Deterministic.
	for i := 0; i < 20; i++ {
		if again := p.Plan(Message{Type: "e", UserID: "u"}); !reflect.DeepEqual(again, steps) {
			t.Fatal("Plan is not deterministic")
		}
	}
}

func TestCompile(t *testing.T) {
	p, err := Compile(nil)
	if err != nil || p.Len() != 0 || p.Plan(Message{Type: "x"}) != nil {
		t.Fatalf("empty: %v %v", p, err)
	}
	var nilp *Pipeline
	if nilp.Len() != 0 || nilp.Plan(Message{Type: "x"}) != nil {
		t.Fatal("a nil pipeline plans nothing")
	}

	many := make([]Hook, MaxHooksPerApp)
	for i := range many {
		many[i] = validHook()
	}
	if p, err := Compile(many); err != nil || p.Len() != MaxHooksPerApp {
		t.Fatalf("%d hooks: %v", MaxHooksPerApp, err)
	}
	var e *core.Error
	if _, err := Compile(append(many, validHook())); !errors.As(err, &e) || e.Field != "hooks" || e.Code != core.CodeValidation {
		t.Fatalf("%d hooks: got %v", MaxHooksPerApp+1, err)
	}

	bad := validHook()
	bad.Name = "broken"
	bad.Conditions[0].Operator = "matches"
	_, err = Compile([]Hook{validHook(), bad})
	if !errors.As(err, &e) || e.Code != core.CodeValidation || e.Field != "conditions[0].operator" || !strings.Contains(e.Message, "broken") {
		t.Fatalf("invalid enabled hook: got %v", err)
	}
	bad.Enabled = false
	if p, err := Compile([]Hook{validHook(), bad}); err != nil || p.Len() != 1 {
		t.Fatalf("invalid disabled hook is skipped: %v", err)
	}
}

func TestCompileCopiesItsInput(t *testing.T) {
	h := validHook()
	h.Actions = []Action{{Type: ActionPushJSON, Payload: map[string]any{"k": "v", "nested": map[string]any{"a": 1.0}}},
		{Type: ActionBroadcast, Message: "b"}}
	p, err := Compile([]Hook{h})
	if err != nil {
		t.Fatal(err)
	}
	if h.Actions[1].MessageType != "" {
		t.Fatal("Compile normalised the caller's hook")
	}
	// Changing the caller's hook after Compile changes nothing.
	h.Actions[0].Payload["k"] = "changed"
	h.Actions[0].Payload["nested"].(map[string]any)["a"] = 2.0
	h.Conditions[0].Value = "elsewhere"
	m := sampleMessage(t)
	steps := p.Plan(m)
	if len(steps) != 2 || steps[0].Action.Payload["k"] != "v" || steps[0].Action.Payload["nested"].(map[string]any)["a"] != 1.0 {
		t.Fatalf("steps: %+v", steps)
	}
	if steps[1].Action.MessageType != MessageInfo {
		t.Fatalf("the pipeline fills defaults: %+v", steps[1].Action)
	}
	// Changing a step's payload changes nothing for the next plan.
	steps[0].Action.Payload["k"] = "mutated"
	steps[0].Action.Payload["nested"].(map[string]any)["a"] = 3.0
	again := p.Plan(m)
	if again[0].Action.Payload["k"] != "v" || again[0].Action.Payload["nested"].(map[string]any)["a"] != 1.0 {
		t.Fatalf("a step's payload is shared with the pipeline: %+v", again[0].Action.Payload)
	}
}

// TestInjection proves that field paths and values are data: whatever they hold, they never
// become part of a program's source and cannot change what a condition means.
func TestInjection(t *testing.T) {
	evil := []string{
		`") || true || ("`,
		`" || true || "`,
		`') || true || ('`,
		"` || true || `",
		`data.room == "lobby" || true`,
		`true`,
		`1 == 1`,
		`K0`,
		`F0 == F0 || true`,
		`V0`,
		`len(F0) > 0`,
		`]] || true || [[`,
		`} || true || {`,
		`#`,
		`let x = 1; true`,
		`data.room") || true || ("`,
		`$env`,
		`foo(bar)`,
	}
	clean := Message{Type: "join_room", UserID: "u", Fields: map[string]any{
		"type": "join_room", "data": map[string]any{"room": "lobby"}}}
	ref, err := Compile([]Hook{hookWith(Condition{Field: "a", Operator: OpEq, Value: "b"})})
	if err != nil {
		t.Fatal(err)
	}
	harmless := ref.hooks[0].program.Source().String()
	for _, s := range evil {
		t.Run(s, func(t *testing.T) {
			// As a field path: the member does not exist, so eq and exists must not match...
			for _, c := range []Condition{
				{Field: s, Operator: OpEq, Value: "lobby"},
				{Field: s, Operator: OpExists},
				{Field: s, Operator: OpContains, Value: "o"},
				{Field: "data.room", Operator: OpEq, Value: "lobby"}, // paired with the evil one
			} {
				h := hookWith(c, Condition{Field: s, Operator: OpEq, Value: true})
				if err := Validate(h); err != nil {
					continue // a path the validator refuses cannot reach a program anyway
				}
				if matches(t, h, clean) {
					t.Errorf("field %q with %s matched a message without that member", s, c.Operator)
				}
			}
			// ...and when a member has that very name, it is looked up as a name.
			top := strings.Split(s, ".")[0]
			if !strings.Contains(s, ".") {
				withKey := Message{Type: "join_room", UserID: "u", Fields: map[string]any{top: "lobby"}}
				if !matches(t, hookWith(Condition{Field: s, Operator: OpEq, Value: "lobby"}), withKey) {
					t.Errorf("a member named %q was not found", s)
				}
			}
			// As a value: compared as a string, never evaluated.
			for _, op := range []string{OpEq, OpContains} {
				if matches(t, hookWith(Condition{Field: "data.room", Operator: op, Value: s}), clean) {
					t.Errorf("value %q with %s matched lobby", s, op)
				}
			}
			if !matches(t, hookWith(Condition{Field: "data.room", Operator: OpNeq, Value: s}), clean) {
				t.Errorf("value %q: neq must hold", s)
			}
			literal := Message{Type: "join_room", UserID: "u", Fields: map[string]any{"data": map[string]any{"room": s}}}
			if !matches(t, hookWith(Condition{Field: "data.room", Operator: OpEq, Value: s}), literal) {
				t.Errorf("value %q does not equal itself", s)
			}
			// The compiled source is the same as for a harmless path and value: it holds
			// neither the path nor the value.
			p, err := Compile([]Hook{hookWith(Condition{Field: s, Operator: OpEq, Value: s})})
			if err != nil {
				return
			}
			if src := p.hooks[0].program.Source().String(); src != harmless {
				t.Errorf("program source %q differs from %q", src, harmless)
			}
		})
	}
}

// TestProgramSource pins the generated source: identifiers of the environment only.
func TestProgramSource(t *testing.T) {
	p, err := Compile([]Hook{hookWith(
		Condition{Field: "a", Operator: OpEq, Value: "x"},
		Condition{Field: "b", Operator: OpNeq, Value: 1.0},
		Condition{Field: "c", Operator: OpContains, Value: "y"},
		Condition{Field: "d", Operator: OpExists},
	)})
	if err != nil {
		t.Fatal(err)
	}
	src := p.hooks[0].program.Source().String()
	for _, s := range []string{"F0", "V0", "K1", "F2 contains V2", "V2 in F2", "len(F3)"} {
		if !strings.Contains(src, s) {
			t.Errorf("source %q lacks %q", src, s)
		}
	}
	for _, s := range []string{`"`, "'", "`", "x", "y"} {
		if strings.Contains(src, s) {
			t.Errorf("source %q holds %q", src, s)
		}
	}
}

func TestTemplates(t *testing.T) {
	m := sampleMessage(t)
	m.Fields["html"] = "<b>&</b>"
	m.Fields["brace"] = "{{username}}"
	long := strings.Repeat("é", MaxRenderedLength+10)
	m.Fields["long"] = long
	cases := []struct{ tmpl, want string }{
		{"plain text", "plain text"},
		{"hi {{username}}", "hi alice"},
		{"{{userId}}/{{type}}", "u1/join_room"},
		{"{{ username }}", "alice"},
		{"room {{data.room}}!", "room lobby!"},
		{"{{message}}", "hello world"},
		{"{{data.n}}", "5"},
		{"{{data.flag}} {{data.off}}", "true false"},
		{"{{data.nul}}", "null"},
		{"{{data.arr}}", `["a","b",1]`},
		{"{{data.obj.deep}}", `{"x":"y"}`},
		{"{{data.items.1.name}}", "second"},
		{"{{html}}", "<b>&</b>"},                     // no HTML escaping
		{"[{{nope}}] [{{data.missing.x}}]", "[] []"}, // unknown renders as empty
		{"{{brace}}", "{{username}}"},                // no second pass over rendered values
		{"{{}}", "{{}}"},                             // not a placeholder
		{"{{ }}", "{{ }}"},
		{"{{.}}", "{{.}}"},
		{"{{a..b}}", "{{a..b}}"},
		{"unclosed {{username", "unclosed {{username"},
		{"{{{{username}}}}", "{{alice}}"},
		{"}}{{username}}{{", "}}alice{{"},
		{`{{ printf "%s" "x" }}`, ""}, // an unknown name, not a function call
		{"{{call .Exec}}", ""},
		{"{{username}}{{username}}", "alicealice"},
		{"a\u00e9{{type}}\u00e9b", "a\u00e9join_room\u00e9b"},
	}
	for _, tc := range cases {
		t.Run(tc.tmpl, func(t *testing.T) {
			if got := parseTemplate(tc.tmpl).render(&m); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	if got := parseTemplate("x{{long}}").render(&m); got != "x"+long[:len("é")*(MaxRenderedLength-1)] {
		t.Fatalf("long output not cut at %d characters: %d", MaxRenderedLength, len([]rune(got)))
	}
	if got := parseTemplate(long).render(&m); len([]rune(got)) != MaxRenderedLength {
		t.Fatalf("long literal not cut: %d", len([]rune(got)))
	}
	many := parseTemplate(strings.Repeat("{{long}}", 50)).render(&m)
	if len([]rune(many)) != MaxRenderedLength {
		t.Fatalf("repeated placeholders not cut: %d", len([]rune(many)))
	}
}

func TestStepsRenderAndTarget(t *testing.T) {
	h := Hook{ID: "h7", Name: "all kinds", Event: "join_room", Enabled: true,
		Conditions: []Condition{{Field: "data.room", Operator: OpExists}},
		Actions: []Action{
			{Type: ActionRespond, Message: "hi {{username}}"},
			{Type: ActionSendMessage, UserID: "u2", Message: "{{username}} joined {{data.room}}"},
			{Type: ActionBroadcast, Message: "{{username}} is in {{data.room}}", MessageType: MessageWarning},
			{Type: ActionPushJSON, Payload: map[string]any{"room": "{{data.room}}"}},
			{Type: ActionPushJSON, UserID: "u3", Payload: map[string]any{}},
		}}
	h2 := Hook{ID: "h8", Name: "moderation", Event: "join_room", Enabled: true, Priority: 1,
		Actions: []Action{
			{Type: ActionKick, Reason: "bye {{username}} from {{data.room}}"},
			{Type: ActionKick, UserID: "u4"},
			{Type: ActionBan, Reason: "{{message}}"},
			{Type: ActionBan, UserID: "u5", Reason: "r"},
			{Type: ActionLog, Message: "{{userId}} sent {{type}}"},
		}}
	p, err := Compile([]Hook{h2, h})
	if err != nil {
		t.Fatal(err)
	}
	steps := p.Plan(sampleMessage(t))
	type want struct {
		typ, target, user, message, reason, msgType, level string
	}
	wants := []want{
		{ActionRespond, TargetSender, "u1", "hi alice", "", "", ""},
		{ActionSendMessage, TargetUser, "u2", "alice joined lobby", "", "info", ""},
		{ActionBroadcast, TargetAll, "", "alice is in lobby", "", "warning", ""},
		{ActionPushJSON, TargetAll, "", "", "", "", ""},
		{ActionPushJSON, TargetUser, "u3", "", "", "", ""},
		{ActionKick, TargetSender, "u1", "", "bye alice from lobby", "", ""},
		{ActionKick, TargetUser, "u4", "", "", "", ""},
		{ActionBan, TargetSender, "u1", "", "hello world", "", ""},
		{ActionBan, TargetUser, "u5", "", "r", "", ""},
		{ActionLog, TargetNone, "", "u1 sent join_room", "", "", "INFO"},
	}
	if len(steps) != len(wants) {
		t.Fatalf("%d steps, want %d: %+v", len(steps), len(wants), steps)
	}
	for i, w := range wants {
		s := steps[i]
		got := want{s.Action.Type, s.Target, s.UserID, s.Action.Message, s.Action.Reason, s.Action.MessageType, s.Action.Level}
		if got != w {
			t.Errorf("step %d: got %+v, want %+v", i, got, w)
		}
		if wantHook := map[bool]string{true: "h7", false: "h8"}[i < 5]; s.HookID != wantHook {
			t.Errorf("step %d: hook %s, want %s", i, s.HookID, wantHook)
		}
	}
	// Payloads are sent as given: templates are for Message and Reason only.
	if steps[3].Action.Payload["room"] != "{{data.room}}" {
		t.Errorf("payload rendered: %+v", steps[3].Action.Payload)
	}
	if steps[4].Action.Payload == nil {
		t.Errorf("an empty payload must stay an object")
	}
}

// TestFailedConditionsContributeNothing: a hook whose conditions do not hold gives no step,
// and the others still run.
func TestFailedConditionsContributeNothing(t *testing.T) {
	ok := hookWith(Condition{Field: "data.room", Operator: OpEq, Value: "lobby"})
	ok.ID = "ok"
	no := hookWith(Condition{Field: "data.room", Operator: OpContains, Value: "x"}, Condition{Field: "data.missing.deeper", Operator: OpEq, Value: 1.0})
	no.ID = "no"
	wrong := hookWith(Condition{Field: "data.obj", Operator: OpContains, Value: "k"}) // object: never contains
	wrong.ID = "wrong"
	p, err := Compile([]Hook{no, wrong, ok})
	if err != nil {
		t.Fatal(err)
	}
	steps := p.Plan(sampleMessage(t))
	if len(steps) != 1 || steps[0].HookID != "ok" {
		t.Fatalf("steps: %+v", steps)
	}
}

// TestAgainstReference compares the compiled programs with a direct Go reading of the
// condition semantics over random conditions and messages.
func TestAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	fields := []string{"data.a", "data.b", "data.c", "data.arr", "data.obj", "message", "type", "data.arr.0", "data.obj.k", "gone"}
	scalars := []any{"", "x", "xy", "5", 5.0, 0.0, true, false}
	values := []any{nil, "", "x", "xy", "5", 5.0, 0.0, true, false, []any{}, []any{"x", 5.0}, map[string]any{}, map[string]any{"k": "x"}}
	ops := []string{OpEq, OpNeq, OpContains, OpExists}
	for n := 0; n < 3000; n++ {
		data := map[string]any{}
		for _, k := range []string{"a", "b", "c", "arr", "obj"} {
			if rng.Intn(4) > 0 {
				data[k] = values[rng.Intn(len(values))]
			}
		}
		m := Message{Type: "join_room", UserID: "u", Fields: map[string]any{"type": "join_room", "data": data}}
		if rng.Intn(2) == 0 {
			m.Fields["message"] = values[rng.Intn(len(values))]
		}
		var cs []Condition
		for i := 0; i < 1+rng.Intn(MaxConditions); i++ {
			c := Condition{Field: fields[rng.Intn(len(fields))], Operator: ops[rng.Intn(len(ops))]}
			switch c.Operator {
			case OpEq, OpNeq:
				c.Value = scalars[rng.Intn(len(scalars))]
			case OpContains:
				c.Value = []string{"x", "y", "5", "xy"}[rng.Intn(4)]
			}
			cs = append(cs, c)
		}
		want := true
		for _, c := range cs {
			want = want && reference(c, m)
		}
		if got := matches(t, hookWith(cs...), m); got != want {
			t.Fatalf("conditions %+v on %v: got %v, want %v", cs, m.Fields, got, want)
		}
	}
}

func reference(c Condition, m Message) bool {
	var cur any = m.Fields
	found := true
	for _, seg := range strings.Split(c.Field, ".") {
		switch x := cur.(type) {
		case map[string]any:
			cur, found = x[seg]
		case []any:
			var i int
			if _, err := fmt.Sscanf(seg, "%d", &i); err != nil || i < 0 || i >= len(x) || fmt.Sprint(i) != seg {
				found = false
			} else {
				cur = x[i]
			}
		default:
			found = false
		}
		if !found {
			break
		}
	}
	switch c.Operator {
	case OpEq:
		return found && reflect.DeepEqual(cur, c.Value)
	case OpNeq:
		return !found || !reflect.DeepEqual(cur, c.Value)
	case OpContains:
		switch x := cur.(type) {
		case string:
			return found && strings.Contains(x, c.Value.(string))
		case []any:
			for _, e := range x {
				if reflect.DeepEqual(e, c.Value) {
					return found
				}
			}
		}
		return false
	case OpExists:
		if !found {
			return false
		}
		switch x := cur.(type) {
		case nil:
			return false
		case string:
			return x != ""
		case []any:
			return len(x) > 0
		case map[string]any:
			return len(x) > 0
		}
		return true
	}
	panic(c.Operator)
}

func TestConcurrentPlan(t *testing.T) {
	p, err := Compile(benchHooks())
	if err != nil {
		t.Fatal(err)
	}
	m := benchMessage()
	want := p.Plan(m)
	if len(want) != MaxHooksPerApp*MaxActions {
		t.Fatalf("%d steps, want every hook to match", len(want))
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if got := p.Plan(m); !reflect.DeepEqual(got, want) {
					t.Error("concurrent plans differ")
					return
				}
			}
		}()
	}
	wg.Wait()
}

func benchHooks() []Hook {
	hooks := make([]Hook, MaxHooksPerApp)
	for i := range hooks {
		hooks[i] = Hook{ID: fmt.Sprint("h", i), Name: fmt.Sprint("hook ", i), Event: "join_room", Enabled: true, Priority: i % 7,
			Conditions: []Condition{
				{Field: "data.room", Operator: OpEq, Value: "lobby"},
				{Field: "data.level", Operator: OpNeq, Value: 3.0},
				{Field: "message", Operator: OpContains, Value: "hello"},
				{Field: "data.tags", Operator: OpContains, Value: "vip"},
				{Field: "data.meta.client", Operator: OpExists},
			},
			Actions: []Action{
				{Type: ActionRespond, Message: "welcome {{username}} to {{data.room}}"},
				{Type: ActionBroadcast, Message: "{{username}} joined"},
				{Type: ActionSendMessage, UserID: "mod", Message: "{{userId}}: {{message}}"},
				{Type: ActionLog, Message: "join {{data.room}}"},
				{Type: ActionKick, Reason: "test"},
			}}
	}
	return hooks
}

func benchMessage() Message {
	return Message{Type: "join_room", UserID: "u1", Username: "alice", IP: "203.0.113.7",
		Fields: map[string]any{"type": "join_room", "message": "hello there",
			"data": map[string]any{"room": "lobby", "level": 5.0, "tags": []any{"new", "vip"},
				"meta": map[string]any{"client": "desktop"}}}}
}

// BenchmarkPlan evaluates 20 hooks × 5 conditions, all matching, each giving 5 steps.
func BenchmarkPlan(b *testing.B) {
	p, err := Compile(benchHooks())
	if err != nil {
		b.Fatal(err)
	}
	m := benchMessage()
	b.ReportAllocs()
	for b.Loop() {
		if len(p.Plan(m)) != 100 {
			b.Fatal("not every hook matched")
		}
	}
}

// BenchmarkPlanNoMatch: 20 hooks × 5 conditions, the first condition of each fails.
func BenchmarkPlanNoMatch(b *testing.B) {
	p, err := Compile(benchHooks())
	if err != nil {
		b.Fatal(err)
	}
	m := benchMessage()
	m.Fields["data"].(map[string]any)["room"] = "hall"
	b.ReportAllocs()
	for b.Loop() {
		if len(p.Plan(m)) != 0 {
			b.Fatal("a hook matched")
		}
	}
}

// TestEnvironment: the generated programs are compiled against env with len as the only
// builtin function.
func TestEnvironment(t *testing.T) {
	for _, src := range []string{"len(F0) > 0", "K0 == 1 && F4 == V4"} {
		if _, err := compileSource(src); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
	// Builtin functions other than len and names outside env do not compile.
	for _, src := range []string{`upper("a") == "A"`, `now() != nil`, `env != nil`,
		`X == 1`, `toJSON(F0) == ""`, `fromJSON(V0) != nil`, `F5 == V5`} {
		if _, err := compileSource(src); err == nil {
			t.Errorf("%s compiled", src)
		}
	}
}
