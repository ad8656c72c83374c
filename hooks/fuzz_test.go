package hooks

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/keyward/keyward/core"
)

// FuzzCompileAndPlan decodes an arbitrary hook (as the dashboard sends one) and an
// arbitrary client message, then validates, compiles and runs it: no panic; a refused hook
// is a VALIDATION_ERROR naming a field; a compiled one plans steps whose templates are
// rendered within their bounds.
func FuzzCompileAndPlan(f *testing.F) {
	seeds := [][2]string{
		{`{"name":"g","event":"join_room","conditions":[{"field":"data.room","operator":"eq","value":"lobby"}],"actions":[{"type":"respond","message":"welcome {{username}} to {{data.room}}"}]}`,
			`{"type":"join_room","data":{"room":"lobby"}}`},
		{`{"name":"n","event":"e","conditions":[{"field":"data.items.0","operator":"exists"},{"field":"message","operator":"contains","value":"x"}],"actions":[{"type":"push_json","payload":{"a":[1,{"b":null}]}},{"type":"kick","reason":"{{message}}"}]}`,
			`{"type":"e","data":{"items":[1]},"message":"xx"}`},
		{`{"name":"n","event":"e","conditions":[{"field":"data.n","operator":"neq","value":1.5}],"actions":[{"type":"broadcast","message":"{{","messageType":"alert"},{"type":"log","message":"{{}}{{data.}}","level":"ERROR"}]}`,
			`{"type":"e","data":{"n":"1.5"}}`},
		{`{"name":"n","event":"e","conditions":[{"field":"data..x","operator":"eq","value":true}],"actions":[{"type":"send_message","userId":"u","message":"{{type}}{{userId}}"}]}`,
			`{"type":"e","data":{"":{"x":true}}}`},
		{`{"name":"n","event":"e","conditions":[{"field":"a.-1.99999999999999999999","operator":"eq","value":1e308}],"actions":[{"type":"ban"}]}`,
			`{"type":"e","a":[[]]}`},
		{`{"name":"n","event":"ping","actions":[{"type":"respond","message":"x"}]}`, `{}`},
		{`{"name":"\u0000","event":"e","priority":-1,"actions":[]}`, `null`},
		{`{"name":"n","event":"e","conditions":[{"field":"data","operator":"eq","value":{"a":1}}],"actions":[{"type":"respond","message":"x"}]}`,
			`{"type":"e","data":{"a":1}}`},
		{`{"name":"n","event":"e","conditions":[{"field":"data\"]+1","operator":"contains","value":"\")"}],"actions":[{"type":"respond","message":"{{data\"]}}"}]}`,
			`{"type":"e"}`},
	}
	for _, s := range seeds {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, hookJSON, msgJSON []byte) {
		var h Hook
		if json.Unmarshal(hookJSON, &h) != nil {
			return
		}
		h.Enabled = true
		verr := Validate(h)
		p, err := Compile([]Hook{h})
		if (verr == nil) != (err == nil) {
			t.Fatalf("Validate %v but Compile %v", verr, err)
		}
		if err != nil {
			var ce *core.Error
			if !errors.As(err, &ce) || ce.Code != core.CodeValidation || ce.Field == "" {
				t.Fatalf("refusal is not a VALIDATION_ERROR with a field: %#v", err)
			}
			return
		}
		var fields map[string]any
		_ = json.Unmarshal(msgJSON, &fields)
		typ, _ := fields["type"].(string)
		if typ == "" {
			typ = h.Event
		}
		for _, st := range p.Plan(Message{Type: typ, Fields: fields, UserID: "u1", Username: "bob", IP: "192.0.2.1"}) {
			if chars(st.Action.Message) > MaxRenderedLength || chars(st.Action.Reason) > MaxRenderedLength {
				t.Fatalf("rendered past its bound: %d / %d characters", chars(st.Action.Message), chars(st.Action.Reason))
			}
		}
	})
}

// FuzzConditionAndTemplate builds a hook from arbitrary strings in the places an owner
// types them (a condition's field, operator and value, a template) so that the fuzzer
// reaches the expression compiler and the renderer without first having to write JSON.
func FuzzConditionAndTemplate(f *testing.F) {
	f.Add("data.room", "eq", "lobby", "hi {{username}} {{data.room}}", `{"type":"e","data":{"room":"lobby"}}`)
	f.Add("data.items.0", "exists", "", "{{data.items}}", `{"type":"e","data":{"items":[{"a":1}]}}`)
	f.Add("message", "contains", "x", "{{message", `{"type":"e","message":"xyz"}`)
	f.Add("a.b.c.d.e.f", "neq", "", "{{{{}}}}", `{"type":"e","a":{"b":null}}`)
	f.Add("data\") || true || (\"", "eq", "\") || true", "{{type}}{{userId}}{{ip}}", `{"type":"e"}`)
	f.Add("data.-1", "contains", "\u0000", "{{data.-1}}", `{"type":"e","data":[1,2]}`)
	f.Fuzz(func(t *testing.T, field, op, value, tmpl, msg string) {
		var v any = value
		if op == OpExists {
			v = nil
		}
		h := Hook{ID: "h", Name: "n", Event: "e", Enabled: true,
			Conditions: []Condition{{Field: field, Operator: op, Value: v}},
			Actions:    []Action{{Type: ActionRespond, Message: tmpl}, {Type: ActionKick, Reason: tmpl}}}
		p, err := Compile([]Hook{h})
		if err != nil {
			var ce *core.Error
			if !errors.As(err, &ce) || ce.Code != core.CodeValidation {
				t.Fatalf("refusal is not a VALIDATION_ERROR: %#v", err)
			}
			return
		}
		var fields map[string]any
		_ = json.Unmarshal([]byte(msg), &fields)
		for _, st := range p.Plan(Message{Type: "e", Fields: fields, UserID: "u", Username: "bob"}) {
			if chars(st.Action.Message) > MaxRenderedLength || chars(st.Action.Reason) > MaxRenderedLength {
				t.Fatal("rendered past its bound")
			}
		}
	})
}
