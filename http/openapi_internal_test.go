package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/schema_validation"
)

// servedSpec answers the description as the router serves it.
func servedSpec(t *testing.T) []byte {
	t.Helper()
	w := httptest.NewRecorder()
	routerOnly(t).ServeHTTP(w, httptest.NewRequest("GET", "/api/openapi.json", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("GET /api/openapi.json: %d", w.Code)
	}
	return w.Body.Bytes()
}

// TestOpenAPIDescribesEveryRoute: every route of the router is an operation of the served
// description, and every operation is a route; the document is valid OpenAPI 3.1.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	raw := servedSpec(t)
	var spec struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	if spec.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q", spec.OpenAPI)
	}
	described := map[string]bool{}
	for p, ops := range spec.Paths {
		for m := range ops {
			described[strings.ToUpper(m)+" "+p] = true
		}
	}
	routes := map[string]bool{}
	for _, r := range routerOnly(t).Routes() {
		key := r.Method + " " + openAPIPath(r.Path)
		routes[key] = true
		if !described[key] {
			t.Errorf("route %s is not described", key)
		}
	}
	for key := range described {
		if !routes[key] {
			t.Errorf("described operation %s is no route", key)
		}
	}

	doc, err := libopenapi.NewDocument(raw)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("document: %s: %s", e.Message, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  %s at %s", se.Reason, se.FieldPath)
			}
		}
	}
}

// TestOpenAPIExamplesValidate: each component's examples validate against its schema.
func TestOpenAPIExamplesValidate(t *testing.T) {
	doc, err := libopenapi.NewDocument(servedSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	sv := schema_validation.NewSchemaValidator()
	checked := 0
	for name, s := range componentSchemas() {
		examples, _ := s.(obj)["examples"].([]any)
		if len(examples) == 0 {
			t.Errorf("schema %s has no example", name)
			continue
		}
		proxy, found := model.Model.Components.Schemas.Get(name)
		if !found {
			t.Fatalf("schema %s not in the model", name)
		}
		for _, ex := range examples {
			b, _ := json.Marshal(ex)
			if ok, verrs := sv.ValidateSchemaBytes(proxy.Schema(), b); !ok {
				for _, e := range verrs {
					t.Errorf("example of %s: %s: %s %v", name, e.Message, e.Reason, e.SchemaValidationErrors)
				}
			}
			checked++
		}
	}
	// And a wrong example is refused, so the check is not vacuous.
	proxy, _ := model.Model.Components.Schemas.Get("APIKeyInput")
	if ok, _ := sv.ValidateSchemaBytes(proxy.Schema(), []byte(`{"scopes":["planets:fly"]}`)); ok {
		t.Error("an unknown scope validated against APIKeyInput")
	}
	if checked < 10 {
		t.Errorf("only %d examples checked", checked)
	}
}

// TestEveryRouteHasItsSchemas: each route of the router has its detail (summary, body,
// answer) in operationSchemas, and no detail names a route that is gone.
func TestEveryRouteHasItsSchemas(t *testing.T) {
	routes := map[string]bool{}
	detailed := 0
	for _, r := range routerOnly(t).Routes() {
		spec, found := specOf(r.Method, r.Path)
		key := r.Method + " " + r.Path
		if r.Method == http.MethodPut {
			key = http.MethodPatch + " " + r.Path
		}
		routes[key] = true
		switch {
		case !found:
			t.Errorf("route %s %s has no entry in operationSchemas", r.Method, r.Path)
		case spec.summary == "":
			t.Errorf("route %s %s has no summary", r.Method, r.Path)
		case spec.data == nil && rawAnswers[r.Method+" "+r.Path] == "" && !strings.Contains(r.Path, "/ws"):
			t.Errorf("route %s %s has no answer schema", r.Method, r.Path)
		default:
			detailed++
		}
	}
	for key := range operationSchemas {
		if !routes[key] {
			t.Errorf("operationSchemas describes %s, which is no route", key)
		}
	}
	t.Logf("%d of %d routes described in detail", detailed, len(routerOnly(t).Routes()))
}
