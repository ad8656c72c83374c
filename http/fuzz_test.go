package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/hooks"
)

// fuzzTargets are the destinations the handlers decode bodies into: the named body types
// and copies of the anonymous structs of the richer routes.
var fuzzTargets = []func() any{
	func() any { return &variableBody{} },
	func() any { return &ruleBody{} },
	func() any { return &apiKeyBody{} },
	func() any {
		return &struct {
			Name        string            `json:"name"`
			Event       string            `json:"event"`
			Description string            `json:"description"`
			Conditions  []hooks.Condition `json:"conditions"`
			Actions     []hooks.Action    `json:"actions"`
			Enabled     *bool             `json:"enabled"`
			Priority    *int              `json:"priority"`
		}{}
	},
	func() any {
		return &struct {
			Email, Username, Password string
		}{}
	},
	func() any {
		return &struct {
			Count     int               `json:"count"`
			Level     *int              `json:"level"`
			Duration  *int64            `json:"duration"`
			ExpiresAt *string           `json:"expiresAt"`
			Variables map[string]string `json:"variables"`
			Enabled   *bool             `json:"enabled"`
			Prefix    string            `json:"prefix"`
		}{}
	},
}

const fuzzBodyLimit = 4 << 10

// fuzzEngine is a gin engine with the request id, the body limit and the real decoders,
// and no recovery: a panic in a decoder fails the fuzzer.
func fuzzEngine() *gin.Engine {
	r := gin.New()
	r.Use(requestID(), bodyLimit(fuzzBodyLimit, nil))
	r.POST("/bind/:kind", func(c *gin.Context) {
		i := int(c.Param("kind")[0]-'0') % len(fuzzTargets)
		if dst := fuzzTargets[i](); bind(c, dst) {
			ok(c, http.StatusOK, dst)
		}
	})
	r.POST("/client", func(c *gin.Context) {
		b, good := bindClient(c)
		if !good {
			return
		}
		for k := range b {
			_ = b.str(k)
		}
		_ = b.key()
		ok(c, http.StatusOK, b)
	})
	return r
}

// FuzzDecode sends arbitrary bodies and content types to the dashboard decoder (bind) and
// the Client API decoder (bindClient): the answer is a success, or a 400 VALIDATION_ERROR
// (413 PAYLOAD_TOO_LARGE past the limit) in the error envelope; never a panic or a 5xx.
func FuzzDecode(f *testing.F) {
	seeds := []string{
		`{"key":"k","value":"v","type":"string"}`, `{"key":"k","value":12.5}`, `{"value":{"a":[1]}}`,
		`{"type":"ip","action":"block","value":"1.2.3.4","enabled":"yes"}`, `{"scopes":["apps:read"],"apps":null,"expiresAt":""}`,
		`{"name":"h","event":"e","conditions":[{"field":"a","operator":"eq","value":1}],"actions":[{"type":"respond","payload":{"x":1}}],"priority":1e99}`,
		`{"email":1,"username":[],"password":{}}`, `{"count":-1,"level":"1","duration":9223372036854775808,"variables":{"a":1}}`,
		`{"sessionToken":"t","key":9223372036854775807,"hwid":true,"name":null}`, ``, ` `, `null`, `[]`, `"x"`, `12`,
		`{`, `{"a":1}{"b":2}`, `{"a":1} x`, `{"a":"\ud800"}`, "\xef\xbb\xbf{}", `{"a":` + string(bytes.Repeat([]byte("["), 5000)),
	}
	for i, s := range seeds {
		f.Add([]byte(s), "application/json", uint8(i))
	}
	f.Add([]byte(`{}`), "text/plain", uint8(0))
	f.Add([]byte(`{}`), "", uint8(1))
	f.Add([]byte(`{}`), "application/json; charset=utf-8", uint8(2))
	f.Add([]byte(`{}`), "application/json;;;=", uint8(3))
	r := fuzzEngine()
	f.Fuzz(func(t *testing.T, body []byte, contentType string, kind uint8) {
		path := "/client"
		if kind%2 == 0 {
			path = "/bind/" + string(rune('0'+int(kind/2)%len(fuzzTargets)))
		}
		req := httptest.NewRequest("POST", path, bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		var env struct {
			Success bool
			Error   *struct{ Code, Message string }
		}
		if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil {
			t.Fatalf("%d not an envelope: %q", w.Code, w.Body.String())
		}
		if w.Header().Get("X-Request-Id") == "" {
			t.Fatal("no X-Request-Id")
		}
		switch {
		case w.Code == http.StatusOK && env.Success:
		case w.Code == http.StatusBadRequest && !env.Success && env.Error != nil && env.Error.Code == "VALIDATION_ERROR" && env.Error.Message != "":
		case w.Code == http.StatusRequestEntityTooLarge && !env.Success && env.Error != nil && env.Error.Code == "PAYLOAD_TOO_LARGE":
		default:
			t.Fatalf("body %q (%s): %d %s", body, contentType, w.Code, w.Body.String())
		}
	})
}

// TestDecodeRefusesNull: a body of null is refused like any other non-object; it used to
// decode as "nothing given" and let POST .../licenses and .../tokens create one with every
// default (found by TestBadInputEveryRoute).
func TestDecodeRefusesNull(t *testing.T) {
	r := fuzzEngine()
	for _, path := range []string{"/bind/5", "/client"} {
		req := httptest.NewRequest("POST", path, bytes.NewReader([]byte(" null ")))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if w.Code != http.StatusBadRequest || !bytes.Contains(w.Body.Bytes(), []byte(`"VALIDATION_ERROR"`)) {
			t.Fatalf("%s null: %d %s", path, w.Code, w.Body.String())
		}
	}
}
