package jsontext

import (
	"encoding/json"
	"slices"
)

// AppendString appends v as a JSON string, as encoding/json writes it: printable ASCII
// that needs no escape as it is, anything else through encoding/json.
func AppendString(b []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			out, _ := json.Marshal(v) // a string always encodes
			return append(b, out...)
		}
	}
	b = append(b, '"')
	b = append(b, v...)
	return append(b, '"')
}

// smallObject is how many members AppendObject sorts without allocating.
const smallObject = 8

// AppendObject appends m as a JSON object, as json.Marshal writes it (members sorted by
// key), when every value is a string and m has at most smallObject members; ok is false
// (and b unchanged) otherwise, for the caller to use encoding/json.
func AppendObject(b []byte, m map[string]any) (_ []byte, ok bool) {
	if len(m) > smallObject {
		return b, false
	}
	var keysArr [smallObject]string
	keys := keysArr[:0]
	for k, v := range m {
		if _, isString := v.(string); !isString {
			return b, false
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, k)
		b = append(b, ':')
		b = AppendString(b, m[k].(string))
	}
	return append(b, '}'), true
}
