package httpapi

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestExactMembersDropsFoldedNames (issue 26 item 4): a member that encoding/json would take
// for a field only by folding case (ſ folds to s, K (Kelvin) to k, and any other case) is
// dropped at any depth; exact names and unknown members pass as they are.
func TestExactMembersDropsFoldedNames(t *testing.T) {
	type item struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	type body struct {
		Password *string         `json:"password"`
		Level    *int            `json:"level"`
		Items    []item          `json:"items"`
		ByName   map[string]item `json:"byName"`
		Meta     json.RawMessage `json:"meta"`
		Plain    string
	}
	cases := []struct{ in, want string }{
		{`{"password":"a","level":1}`, `{"password":"a","level":1}`},
		{`{"pa\u017f\u017fword":"x","level":2}`, `{"level":2}`},
		{`{"paſſword":"x","PASSWORD":"y","Password":"z","LEVEL":3}`, `{}`},
		{`{"role":"admin","note":"n"}`, `{"note":"n","role":"admin"}`},
		{`{"items":[{"\u212aey":"k","value":"v"},{"key":"k2","VALUE":"v2"}]}`, `{"items":[{"value":"v"},{"key":"k2"}]}`},
		{`{"byName":{"a":{"Key":"k"}}}`, `{"byName":{"a":{}}}`},
		{`{"meta":{"Password":"kept: not a field"},"Plain":"p","plain":"folded"}`, `{"Plain":"p","meta":{"Password":"kept: not a field"}}`},
		{`[1,2]`, `[1,2]`},
	}
	for _, c := range cases {
		got := exactMembers(json.RawMessage(c.in), reflect.TypeFor[*body]())
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: answer %s is not JSON: %v", c.in, got, err)
		}
		_ = json.Unmarshal([]byte(c.want), &w)
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		if string(gj) != string(wj) {
			t.Errorf("%s: got %s, want %s", c.in, gj, wj)
		}
	}
}
