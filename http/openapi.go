package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core/apikeys"
	"github.com/keyward/keyward/http/apidocs"
)

// The OpenAPI 3.1 description of the API (issue 14), served at /api/openapi.json and
// browsable at /api/docs. It is built from the scope table (every route, its auth and
// scope) and the schemas below (bodies and answers of the routes named in
// operationSchemas; every other route answers the generic envelope). Tests keep it true:
// every route of the router is described and every described route exists, the examples
// validate against their schemas, and real answers validate against the description.

type obj = map[string]any

var pathParam = regexp.MustCompile(`:([A-Za-z]+)`)

// openAPIPath turns a gin pattern into an OpenAPI path.
func openAPIPath(route string) string { return pathParam.ReplaceAllString(route, "{$1}") }

// ref points at a component schema.
func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }

// envelope is the success envelope around data.
func envelope(data obj) obj {
	return obj{"type": "object", "required": []string{"success", "data"}, "properties": obj{
		"success": obj{"const": true}, "data": data}}
}

// opSchema names the body and answer of an operation.
type opSchema struct {
	summary string
	body    string // component schema of the JSON body ("" for the generic object)
	status  int    // success status; 0 means 200 (201 for POST creating a record)
	data    obj    // schema of data; nil means any JSON value
}

// operationSchemas are the operations described in detail; the others use the generic
// body and answer (an object body, and the envelope with any data).
var operationSchemas = map[string]opSchema{
	"GET /healthz":     {summary: "Liveness", data: obj{"type": "object", "properties": obj{"status": obj{"const": "ok"}}}},
	"GET /api/plans":   {summary: "The plans", data: obj{"type": "array", "items": ref("Plan")}},
	"GET /api/auth/me": {summary: "The signed-in account", data: ref("Account")},
	"POST /api/auth/login": {summary: "Sign in", body: "LoginInput", status: 200, data: obj{"type": "object", "required": []string{"token"},
		"properties": obj{"token": obj{"type": "string"}, "account": ref("Account")}}},
	"GET /api/auth/api-keys":           {summary: "List scoped API keys (masked)", data: obj{"type": "array", "items": ref("APIKey")}},
	"POST /api/auth/api-keys":          {summary: "Create a scoped API key (the full key is shown once)", body: "APIKeyInput", status: 201, data: ref("APIKeyCreated")},
	"PATCH /api/auth/api-keys/:keyId":  {summary: "Change a scoped API key", body: "APIKeyInput", data: ref("APIKey")},
	"PUT /api/auth/api-keys/:keyId":    {summary: "Change a scoped API key", body: "APIKeyInput", data: ref("APIKey")},
	"DELETE /api/auth/api-keys/:keyId": {summary: "Revoke a scoped API key", data: ref("Message")},
	"GET /api/audit":                   {summary: "The account's audit log", data: ref("AuditPage")},
	"GET /api/admin/audit":             {summary: "Any account's audit log (administrators)", data: ref("AuditPage")},
	"POST /api/apps":                   {summary: "Create an application", body: "AppInput", status: 201},
}

// componentSchemas are the named schemas, each with an example the tests validate.
func componentSchemas() obj {
	str := obj{"type": "string"}
	strOrNull := obj{"type": []string{"string", "null"}}
	strs := obj{"type": "array", "items": str}
	apiKey := obj{"type": "object", "required": []string{"id", "name", "maskedKey", "scopes", "apps", "createdAt"},
		"properties": obj{"id": str, "name": str, "maskedKey": str, "scopes": strs, "apps": strs,
			"expiresAt": strOrNull, "lastUsedAt": strOrNull, "lastUsedIp": str, "createdAt": strOrNull, "updatedAt": strOrNull},
		"examples": []any{obj{"id": "5f0c6c1e-2d7e-4a57-9b0e-0b7f3f1f2b11", "name": "shop", "maskedKey": "kws_Ab3d...x9Yz",
			"scopes": []string{"licenses:create"}, "apps": []string{}, "expiresAt": nil, "lastUsedAt": "2026-05-01T10:00:00.000Z",
			"lastUsedIp": "203.0.113.9", "createdAt": "2026-04-01T10:00:00.000Z", "updatedAt": "2026-04-01T10:00:00.000Z"}}}
	created := obj{"allOf": []any{ref("APIKey"), obj{"type": "object", "required": []string{"key"}, "properties": obj{"key": str}}},
		"examples": []any{obj{"id": "5f0c6c1e-2d7e-4a57-9b0e-0b7f3f1f2b11", "name": "shop", "maskedKey": "kws_Ab3d...x9Yz",
			"key": "kws_Ab3dEfGhIjKlMnOpQrStUvWxYz0123x9Yz", "scopes": []string{"licenses:create"}, "apps": []string{},
			"expiresAt": nil, "lastUsedAt": nil, "lastUsedIp": "", "createdAt": "2026-04-01T10:00:00.000Z", "updatedAt": "2026-04-01T10:00:00.000Z"}}}
	scopes := append([]string{apikeys.PresetRead, apikeys.PresetFull}, scopeNames()...)
	return obj{
		"Error": obj{"type": "object", "required": []string{"success", "error"}, "properties": obj{
			"success": obj{"const": false},
			"error": obj{"type": "object", "required": []string{"code", "message"}, "properties": obj{
				"code":    obj{"type": "string", "description": "A stable code: " + strings.Join(errorCodes, ", ") + "."},
				"message": str, "field": str}},
			"requires2FA": obj{"type": "boolean"}, "requireVerify": obj{"type": "boolean"}, "message": str},
			"examples": []any{obj{"success": false, "error": obj{"code": "SCOPE_DENIED", "message": `missing scope "licenses:create"`}}}},
		"Envelope": obj{"type": "object", "required": []string{"success", "data"}, "properties": obj{"success": obj{"const": true}, "data": obj{}},
			"examples": []any{obj{"success": true, "data": obj{"message": "done"}}}},
		"Message": obj{"type": "object", "required": []string{"message"}, "properties": obj{"message": str},
			"examples": []any{obj{"message": "API key revoked"}}},
		"Plan": obj{"type": "object", "required": []string{"name", "displayName", "priceMonth", "limits"}, "properties": obj{
			"name": str, "displayName": str, "priceMonth": obj{"type": "number"}, "limits": obj{"type": "object"}},
			"examples": []any{obj{"name": "free", "displayName": "Free", "priceMonth": 0, "limits": obj{"maxApps": 1}}}},
		"Account": obj{"type": "object", "required": []string{"id", "username", "email", "role"}, "properties": obj{
			"id": str, "username": str, "email": str, "role": obj{"enum": []string{"user", "admin"}}, "plan": ref("Plan"),
			"apiKey": str, "emailVerified": obj{"type": "boolean"}, "twoFactorEnabled": obj{"type": "boolean"}},
			"examples": []any{obj{"id": "acc-1", "username": "owner", "email": "owner@example.com", "role": "user", "plan": obj{"name": "free", "displayName": "Free", "priceMonth": 0, "limits": obj{"maxApps": 1}},
				"apiKey": "kw_Ab12...wxyz", "emailVerified": true, "twoFactorEnabled": false}}},
		"LoginInput": obj{"type": "object", "required": []string{"username", "password"}, "properties": obj{
			"username": str, "password": str, "twoFactorCode": str},
			"examples": []any{obj{"username": "owner", "password": "Correct-Horse-9"}}},
		"AppInput": obj{"type": "object", "required": []string{"name"}, "properties": obj{"name": str, "description": str, "version": str},
			"examples": []any{obj{"name": "My program", "version": "1.0.0"}}},
		"APIKeyInput": obj{"type": "object", "properties": obj{
			"name":      obj{"type": "string", "minLength": 1, "maxLength": apikeys.MaxNameLength},
			"scopes":    obj{"type": "array", "items": obj{"enum": scopes}},
			"apps":      strs,
			"expiresAt": obj{"type": "string", "description": "RFC 3339; \"\" removes the expiry"}},
			"examples": []any{obj{"name": "shop", "scopes": []string{"licenses:create", "users:read"}, "apps": []string{"app-1"},
				"expiresAt": "2027-01-01T00:00:00Z"}}},
		"APIKey":        apiKey,
		"APIKeyCreated": created,
		"AuditEntry": obj{"type": "object", "required": []string{"id", "accountId", "actor", "method", "route", "recordType", "createdAt"},
			"properties": obj{"id": str, "accountId": str, "appId": str, "ip": str, "method": str, "route": str, "path": str,
				"recordType": str, "recordId": str, "status": obj{"type": "integer"}, "createdAt": strOrNull,
				"actor": obj{"type": "object", "required": []string{"type"}, "properties": obj{
					"type": obj{"enum": []string{"session", "account_key", "api_key"}}, "id": str, "name": str}},
				"before": obj{"type": []string{"object", "null"}}, "after": obj{"type": []string{"object", "null"}}},
			"examples": []any{obj{"id": "e1", "accountId": "acc-1", "appId": "app-1", "ip": "203.0.113.9", "method": "PATCH",
				"route": "/api/apps/:appId/users/:userId", "path": "/api/apps/app-1/users/u-1", "recordType": "users", "recordId": "u-1",
				"status": 200, "createdAt": "2026-05-01T10:00:00.000Z", "actor": obj{"type": "api_key", "id": "k-1", "name": "support bot"},
				"before": obj{"level": 1}, "after": obj{"level": 5, "password": "[redacted]"}}}},
		"AuditPage": obj{"type": "object", "required": []string{"entries", "total", "limit", "offset"}, "properties": obj{
			"entries": obj{"type": "array", "items": ref("AuditEntry")}, "total": obj{"type": "integer"},
			"limit": obj{"type": "integer"}, "offset": obj{"type": "integer"}},
			"examples": []any{obj{"entries": []any{}, "total": 0, "limit": 50, "offset": 0}}},
	}
}

// errorCodes are listed in the description of Error.code.
var errorCodes = []string{"VALIDATION_ERROR", "UNAUTHORIZED", "FORBIDDEN", "SCOPE_DENIED", "NOT_FOUND", "METHOD_NOT_ALLOWED",
	"CONFLICT", "PLAN_FEATURE", "PLAN_LIMIT", "PAYLOAD_TOO_LARGE", "REQUEST_TIMEOUT", "RATE_LIMITED", "QUOTA_EXCEEDED",
	"UNAVAILABLE", "INTERNAL", "REQUIRE_VERIFY", "REQUIRES_2FA", "NONCE_REQUIRED", "NOT_LOGGED_IN", "APP_DISABLED", "APP_PAUSED",
	"VERSION_MISMATCH", "RULE_BLOCKED", "BANNED", "USER_DISABLED", "EXPIRED", "HWID_LOCKED", "DEVICE_LIMIT", "IP_LOCKED",
	"PC_NAME_LOCKED", "LICENSE_INVALID", "LICENSE_USED"}

// scopeNames are the grantable scopes of the scope table, sorted.
func scopeNames() []string {
	seen := map[string]bool{}
	for _, s := range routeScopes {
		if strings.Contains(s, ":") && s != apikeys.Credentials {
			res, _, _ := strings.Cut(s, ":")
			for _, a := range []string{"read", "create", "update", "delete", "write"} {
				seen[res+":"+a] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// tagOf groups a route in the reference.
func tagOf(path, scope string) string {
	switch {
	case scope == scopeClient:
		return "Client API"
	case strings.HasPrefix(path, "/api/admin"):
		return "Administration"
	case strings.HasPrefix(path, "/api/auth/api-keys"):
		return "API keys"
	case strings.HasPrefix(path, "/api/auth") || path == "/api/plans":
		return "Account"
	case path == "/api/audit":
		return "Audit"
	case strings.Contains(path, "/ws"):
		return "WebSocket"
	case !strings.HasPrefix(path, "/api/"), path == "/api/openapi.json", path == "/api/docs":
		return "Operations"
	}
	res, _, _ := strings.Cut(scope, ":")
	return strings.ToUpper(res[:1]) + res[1:]
}

// operationID is a unique name made of the method and the path's words.
func operationID(method, route string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, w := range regexp.MustCompile(`[A-Za-z0-9]+`).FindAllString(strings.TrimPrefix(route, "/api"), -1) {
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	if strings.Contains(route, ":") {
		b.WriteString("ById")
	}
	return b.String()
}

// buildOpenAPI makes the description of every route of the scope table.
func buildOpenAPI() obj {
	paths := obj{}
	ids := map[string]int{}
	for _, r := range RouteScopes() {
		p := openAPIPath(r.Path)
		item, _ := paths[p].(obj)
		if item == nil {
			item = obj{}
			paths[p] = item
		}
		key := r.Method + " " + r.Path
		spec := operationSchemas[key]
		id := operationID(r.Method, r.Path)
		if ids[id]++; ids[id] > 1 {
			id = fmt.Sprintf("%s%d", id, ids[id])
		}
		op := obj{"operationId": id, "tags": []string{tagOf(r.Path, r.Scope)}, "x-keyward-scope": r.Scope}
		summary := spec.summary
		if summary == "" {
			summary = r.Method + " " + r.Path
		}
		op["summary"] = summary
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(r.Path, -1) {
			params = append(params, obj{"name": m[1], "in": "path", "required": true, "schema": obj{"type": "string"}})
		}
		switch r.Scope {
		case scopePublic, scopeClient:
			op["security"] = []any{}
		case scopeSession:
			op["security"] = []any{obj{"bearer": []string{}}}
		default:
			op["security"] = []any{obj{"bearer": []string{}}, obj{"apiKey": []string{}}}
			op["description"] = fmt.Sprintf("Scoped API keys need the scope `%s`.", r.Scope)
		}
		if r.Scope == apikeys.Credentials {
			op["description"] = "A session or the account key only: no scoped key reaches this route."
		}
		if strings.HasSuffix(r.Path, "/ws") || strings.HasSuffix(r.Path, "/ws/connect") {
			op["description"] = "WebSocket upgrade (token in the `token` query member). The messages are listed in docs/API.md (WebSocket channels)."
			params = append(params, obj{"name": "token", "in": "query", "required": true, "schema": obj{"type": "string"}})
			op["responses"] = obj{"101": obj{"description": "Switching Protocols: the socket is open"},
				"default": obj{"description": "Refused before the upgrade", "content": obj{"application/json": obj{"schema": ref("Error")}}}}
		}
		if params != nil {
			op["parameters"] = params
		}
		if r.Method == http.MethodPost || r.Method == http.MethodPatch || r.Method == http.MethodPut {
			body := obj{"type": "object"}
			if spec.body != "" {
				body = ref(spec.body)
			}
			ct := "application/json"
			if key == "POST "+uploadRoute {
				ct, body = "multipart/form-data", obj{"type": "object", "properties": obj{"file": obj{"type": "string", "contentMediaType": "application/octet-stream"}}}
			}
			op["requestBody"] = obj{"required": r.Method != http.MethodPost || spec.body != "", "content": obj{ct: obj{"schema": body}}}
		}
		if op["responses"] == nil {
			status := spec.status
			if status == 0 {
				status = http.StatusOK
				if r.Method == http.MethodPost && spec.body != "" {
					status = http.StatusCreated
				}
			}
			var okSchema obj
			switch {
			case r.Path == "/metrics":
				op["responses"] = obj{"200": obj{"description": "Prometheus metrics", "content": obj{"text/plain": obj{"schema": obj{"type": "string"}}}}}
			case r.Path == "/api/docs":
				op["responses"] = obj{"200": obj{"description": "The browsable reference", "content": obj{"text/html": obj{"schema": obj{"type": "string"}}}}}
			case r.Path == "/api/openapi.json":
				op["responses"] = obj{"200": obj{"description": "This description", "content": obj{"application/json": obj{"schema": obj{"type": "object"}}}}}
			case spec.data != nil:
				okSchema = envelope(spec.data)
			default:
				okSchema = ref("Envelope")
			}
			if okSchema != nil {
				// Routes without a detailed schema answer 200 or 201 (creations).
				success := obj{"description": "Success", "content": obj{"application/json": obj{"schema": okSchema}}}
				resp := obj{fmt.Sprint(status): success,
					"default": obj{"description": "Error envelope", "content": obj{"application/json": obj{"schema": ref("Error")}}}}
				if spec.data == nil && r.Method == http.MethodPost {
					resp["200"], resp["201"] = success, success
				}
				op["responses"] = resp
			}
		}
		item[strings.ToLower(r.Method)] = op
	}
	return obj{
		"openapi": "3.1.0",
		"info": obj{"title": "Keyward API", "version": "1",
			"description": "Dashboard, admin and Client API of Keyward. Every answer is the envelope: `{success:true,data}` or `{success:false,error:{code,message,field?}}`. See docs/API.md for the prose, the WebSocket message tables and the scope of every route."},
		"servers": []any{obj{"url": "/"}},
		"tags":    []any{},
		"paths":   paths,
		"components": obj{
			"schemas": componentSchemas(),
			"securitySchemes": obj{
				"bearer": obj{"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
				"apiKey": obj{"type": "apiKey", "in": "header", "name": "X-API-Key",
					"description": "The account key (kw_) or a scoped key (kws_), limited to the route's scope (x-keyward-scope)."},
			},
		},
	}
}

// apiDocsHandlers serve the description and the reference page.
type apiDocsHandlers struct{ spec []byte }

func newAPIDocs() (*apiDocsHandlers, error) {
	b, err := json.Marshal(buildOpenAPI())
	if err != nil {
		return nil, fmt.Errorf("httpapi: OpenAPI description: %w", err)
	}
	return &apiDocsHandlers{spec: b}, nil
}

func (h *apiDocsHandlers) routes(api *gin.RouterGroup) {
	api.GET("/openapi.json", func(c *gin.Context) { c.Data(http.StatusOK, "application/json", h.spec) })
	api.GET("/docs", func(c *gin.Context) {
		c.Header("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
		c.Data(http.StatusOK, "text/html; charset=utf-8", apidocs.Page)
	})
	api.GET("/docs/app.js", func(c *gin.Context) { c.Data(http.StatusOK, "text/javascript; charset=utf-8", apidocs.Script) })
}
