package jsontext

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestAsEncodingJSON: what AppendString and AppendObject write is byte for byte what
// json.Marshal writes, escapes, HTML characters, invalid UTF-8 and key order included.
func TestAsEncodingJSON(t *testing.T) {
	strs := []string{"", "plain", `quo"te`, `back\slash`, "<tag>&amp;", "tab\tnew\nline", "\x00\x1f",
		"é ü 日本", "\xff\xfe invalid", "\u2028\u2029", "emoji 😀"}
	for _, s := range strs {
		want, _ := json.Marshal(s)
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendString(%q) = %s, want x%s", s, got, want)
		}
	}
	objs := []map[string]any{
		{},
		{"userId": "u-1"},
		{"userId": "u-1", "username": "dave", "ip": "127.0.0.1", "id": "<&>"},
		{"z": "1", "a": "2", "m": "3", "b\"": "4", "é": "5", "A": "6", "_": "7", "0": "8"},
	}
	for _, m := range objs {
		want, _ := json.Marshal(m)
		got, ok := AppendObject(nil, m)
		if !ok || string(got) != string(want) {
			t.Errorf("AppendObject(%v) = %s, %v; want %s", m, got, ok, want)
		}
	}
	for _, m := range []map[string]any{
		{"n": 1},
		{"s": "x", "b": true},
		{"1": "", "2": "", "3": "", "4": "", "5": "", "6": "", "7": "", "8": "", "9": ""},
	} {
		if got, ok := AppendObject([]byte("keep"), m); ok || string(got) != "keep" {
			t.Errorf("AppendObject(%v) = %s, %v; want it left to encoding/json", m, got, ok)
		}
	}
}

func ExampleAppendObject() {
	b, ok := AppendObject(nil, map[string]any{"username": "dave", "userId": "u-1"})
	fmt.Println(string(b), ok)
	// Output: {"userId":"u-1","username":"dave"} true
}
