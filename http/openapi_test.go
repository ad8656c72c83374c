package httpapi_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	ts "github.com/keyward/keyward/internal/testserver"
)

// TestRealResponsesMatchOpenAPI: a sample of real answers of a running server, successes
// and errors, validate against the description the server serves (libopenapi-validator).
func TestRealResponsesMatchOpenAPI(t *testing.T) {
	s := ts.Start(t, ts.Pairs[0])
	specResp, err := http.Get(s.URL + "/api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(specResp.Body)
	specResp.Body.Close()
	doc, err := libopenapi.NewDocument(raw)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	check := func(r ts.Req, want int) ts.Response {
		t.Helper()
		resp := s.Do(t, r)
		if resp.Status != want {
			t.Fatalf("%s %s: %d, want %d: %s", r.Method, r.Path, resp.Status, want, resp.Raw)
		}
		req, _ := http.NewRequest(r.Method, s.URL+r.Path, nil)
		httpResp := &http.Response{StatusCode: resp.Status, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(resp.Raw)), Request: req}
		if ok, verrs := v.ValidateHttpResponse(req, httpResp); !ok {
			for _, e := range verrs {
				t.Errorf("%s %s (%d): %s: %s", r.Method, r.Path, resp.Status, e.Message, e.Reason)
				for _, se := range e.SchemaValidationErrors {
					t.Errorf("  %s at %s", se.Reason, se.FieldPath)
				}
			}
		}
		return resp
	}
	o := newOwner(t, s)
	check(ts.Req{Method: "GET", Path: "/healthz"}, http.StatusOK)
	check(ts.Req{Method: "GET", Path: "/api/plans"}, http.StatusOK)
	check(ts.Req{Method: "GET", Path: "/api/auth/me", Token: o.Token}, http.StatusOK)
	check(ts.Req{Method: "POST", Path: "/api/auth/login", IP: nextIP(), Body: map[string]string{"username": o.Username, "password": o.Password}}, http.StatusOK)
	app := check(ts.Req{Method: "POST", Path: "/api/apps", Token: o.Token, Body: map[string]any{"name": "Described"}}, http.StatusCreated)
	appID := app.Data()["id"].(string)
	k := check(ts.Req{Method: "POST", Path: "/api/auth/api-keys", Token: o.Token, Body: map[string]any{"name": "k", "scopes": []string{"read"}}}, http.StatusCreated)
	keyID := k.Data()["id"].(string)
	check(ts.Req{Method: "GET", Path: "/api/auth/api-keys", Token: o.Token}, http.StatusOK)
	check(ts.Req{Method: "PATCH", Path: "/api/auth/api-keys/" + keyID, Token: o.Token, Body: map[string]any{"name": "renamed"}}, http.StatusOK)
	check(ts.Req{Method: "GET", Path: "/api/apps/" + appID + "/users", APIKey: k.Data()["key"].(string)}, http.StatusOK)
	// Errors: envelope of the error schema.
	check(ts.Req{Method: "POST", Path: "/api/apps/" + appID + "/licenses", APIKey: k.Data()["key"].(string), Body: map[string]any{"count": 1}}, http.StatusForbidden)
	check(ts.Req{Method: "POST", Path: "/api/auth/api-keys", Token: o.Token, Body: map[string]any{"name": ""}}, http.StatusBadRequest)
	check(ts.Req{Method: "DELETE", Path: "/api/auth/api-keys/nope", Token: o.Token}, http.StatusNotFound)
	check(ts.Req{Method: "GET", Path: "/api/auth/me"}, http.StatusUnauthorized)
	check(ts.Req{Method: "DELETE", Path: "/api/auth/api-keys/" + keyID, Token: o.Token}, http.StatusOK)
	check(ts.Req{Method: "GET", Path: "/api/audit", Token: o.Token}, http.StatusOK)

	// The reference page and its script come from the binary and load nothing else.
	for _, p := range []string{"/api/docs", "/api/docs/app.js"} {
		resp, err := http.Get(s.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(body) < 200 {
			t.Fatalf("%s: %d", p, resp.StatusCode)
		}
		if strings.Contains(string(body), "http://") || strings.Contains(string(body), "https://") {
			t.Errorf("%s refers to another host", p)
		}
	}
}
