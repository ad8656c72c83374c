package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
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

// TestOpenAPIDocumentIsValid: the served description is valid OpenAPI 3.1 (that it
// describes every route and no other is TestRouteTable's).
func TestOpenAPIDocumentIsValid(t *testing.T) {
	raw := servedSpec(t)
	var spec struct {
		OpenAPI string `json:"openapi"`
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	if spec.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q", spec.OpenAPI)
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
