package httpapi

import (
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
// above all) send more than each route reads.
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
	if err := json.Unmarshal(body, dst); err != nil {
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
