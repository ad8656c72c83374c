package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core"
)

// bindJSON decodes the request body into dst. An empty body counts as {} (optional bodies);
// anything else must be Content-Type application/json and one JSON object whose members
// have the right types. Errors are VALIDATION_ERROR naming the field at fault, or
// PAYLOAD_TOO_LARGE past the body limit. Unknown members are ignored: clients (the SDKs
// above all) send more than each route reads. Member names are matched exactly, as the
// client API's map lookups do: encoding/json would take "Password", "PASSWORD" or
// "pa\u017f\u017fword" (ſ folds to s) for "password", so such spellings are dropped
// before decoding and are unknown members like any other (exactMembers).
func bindJSON(c *gin.Context, dst any) error {
	r := c.Request
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil
	}
	if ct := c.ContentType(); ct != "application/json" {
		if ct == "" {
			return core.Invalid("Content-Type", "Content-Type must be application/json")
		}
		return core.Invalid("Content-Type", "Content-Type %q is not supported: send application/json", ct)
	}
	dec := json.NewDecoder(r.Body)
	var body json.RawMessage
	if err := dec.Decode(&body); err != nil {
		return decodeError(err)
	}
	// A literal null would decode into dst as "nothing given" and let a create run with
	// every default: the body is an object or nothing.
	if string(body) == "null" {
		return core.Invalid("body", "body must be a JSON object")
	}
	if err := json.Unmarshal(exactMembers(body, reflect.TypeOf(dst)), dst); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var tooBig *http.MaxBytesError
		var domain *core.Error
		if errors.As(err, &tooBig) || errors.As(err, &domain) {
			return err
		}
		return core.Invalid("body", "body must contain exactly one JSON object")
	}
	return nil
}

func decodeError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tooBig *http.MaxBytesError
	var domain *core.Error
	switch {
	case errors.Is(err, io.EOF):
		return nil // whitespace-only body: nothing given
	case errors.As(err, &domain):
		return err // the body reader's own refusal (REQUEST_TIMEOUT)
	case errors.As(err, &tooBig):
		return err
	case errors.As(err, &syntax):
		return core.Invalid("body", "malformed JSON at byte %d", syntax.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return core.Invalid("body", "malformed JSON: body ends too early")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return core.Invalid("body", "body must be a JSON object")
		}
		return core.Invalid(typ.Field, "%s must be %s", typ.Field, kindName(typ.Type))
	default:
		return core.Invalid("body", "malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
}

func kindName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	default:
		return fmt.Sprintf("of type %s", t)
	}
}

// exactMembers answers raw without the members that encoding/json would match to a field
// of t only by folding case (Unicode simple folding: "Level", "LEVEL", "pa\u017f\u017fword"),
// at any depth of nested structs, slices and maps of them. raw is answered as it is when
// nothing is dropped, or when it is not what t decodes from (the decoder then reports
// that).
func exactMembers(raw json.RawMessage, t reflect.Type) json.RawMessage {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return raw
	}
	switch t.Kind() {
	case reflect.Struct:
		if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
			return raw
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil || obj == nil {
			return raw
		}
		fields := jsonFields(t)
		changed := false
		for name, v := range obj {
			ft, exact := fields[name]
			if !exact {
				for fname := range fields {
					if strings.EqualFold(fname, name) {
						delete(obj, name) // a folded spelling of a field's name
						changed = true
						break
					}
				}
				continue
			}
			if nv := exactMembers(v, ft); !bytes.Equal(nv, v) {
				obj[name] = nv
				changed = true
			}
		}
		if !changed {
			return raw
		}
		out, err := json.Marshal(obj)
		if err != nil {
			return raw
		}
		return out
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return raw
		}
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil {
			return raw
		}
		changed := false
		for i, v := range list {
			if nv := exactMembers(v, t.Elem()); !bytes.Equal(nv, v) {
				list[i] = nv
				changed = true
			}
		}
		if !changed {
			return raw
		}
		out, err := json.Marshal(list)
		if err != nil {
			return raw
		}
		return out
	case reflect.Map:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil || obj == nil {
			return raw
		}
		changed := false
		for k, v := range obj {
			if nv := exactMembers(v, t.Elem()); !bytes.Equal(nv, v) {
				obj[k] = nv
				changed = true
			}
		}
		if !changed {
			return raw
		}
		out, err := json.Marshal(obj)
		if err != nil {
			return raw
		}
		return out
	}
	return raw
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// jsonFields answers the member names encoding/json decodes into t (a struct), with each
// field's type; fields of embedded structs without a name of their own are t's.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for n, t := range jsonFields(et) {
					if _, taken := out[n]; !taken {
						out[n] = t
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = ft
	}
	return out
}
