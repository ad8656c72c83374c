package hooks

import (
	"encoding/json"
	"sort"
	"strings"
)

// Kinds of a resolved value, as the compiled conditions see them.
const (
	kindMissing = iota
	kindNull
	kindString
	kindNumber
	kindBool
	kindArray
	kindObject
	kindOther
)

// path is a parsed dotted field path.
type path []string

func parsePath(s string) path { return strings.Split(s, ".") }

// index parses a non-negative decimal array index (no sign, no leading zeros but "0").
func index(seg string) (int, bool) {
	if seg == "" || len(seg) > 9 || (len(seg) > 1 && seg[0] == '0') {
		return 0, false
	}
	n := 0
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// lookup walks p through the message: map members by name, array elements by numeric
// segment. The top-level member "type" falls back to m.Type when Fields has none.
func lookup(m *Message, p path) (any, bool) {
	var cur any = m.Fields
	for i, seg := range p {
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[seg]
			if !ok {
				if i == 0 && seg == "type" && m.Type != "" {
					v, ok = m.Type, true
				} else {
					return nil, false
				}
			}
			cur = v
		case map[string]string:
			v, ok := x[seg]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			n, ok := index(seg)
			if !ok || n >= len(x) {
				return nil, false
			}
			cur = x[n]
		case []string:
			n, ok := index(seg)
			if !ok || n >= len(x) {
				return nil, false
			}
			cur = x[n]
		default:
			return nil, false
		}
	}
	return cur, true
}

// classify returns the kind of a resolved value and the value as the conditions compare it
// (numbers as float64). Values already of the compared type are returned as they came, so
// that no new interface value is made.
func classify(v any, present bool) (int, any) {
	if !present {
		return kindMissing, nil
	}
	switch v.(type) {
	case nil:
		return kindNull, nil
	case string:
		return kindString, v
	case float64:
		return kindNumber, v
	case bool:
		return kindBool, v
	case map[string]any, map[string]string:
		return kindObject, v
	case []any, []string:
		return kindArray, v
	}
	if f, ok := scalar(v); ok {
		return kindNumber, f
	}
	return kindOther, v
}

// cloneJSON deep-copies a decoded JSON value (maps and slices; scalars are immutable).
func cloneJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cloneJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneJSON(e)
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(x))
		for k, e := range x {
			out[k] = e
		}
		return out
	case []string:
		return append([]string(nil), x...)
	case json.RawMessage:
		return append(json.RawMessage(nil), x...)
	}
	return v
}

func sortedStrings(s []string) []string {
	sort.Strings(s)
	return s
}
