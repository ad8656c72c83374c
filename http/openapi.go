package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/core/apikeys"
	"github.com/keyward/keyward/http/apidocs"
)

// The OpenAPI 3.1 description of the API (issue 14), served at /api/openapi.json and
// browsable at /api/docs. It is built from the route table (every route: its auth and
// scope, its tag, its summary, query, body and answer; route_table.go) and the component
// schemas (records reflected from the handlers' views, inputs, socket
// messages). Tests keep it true: every route of the router is described in detail and
// every described route exists, the examples validate against their schemas, and real
// answers and socket messages validate against the description.

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

// operation is a route's OpenAPI detail, declared in its row of the route table.
type operation struct {
	summary string
	body    obj // schema of the JSON body; nil for none
	status  int // success status; 0 means 200
	data    obj // schema of data; nil for an answer that is not the envelope
	// raw is the media type of a success that is not the JSON envelope (a file, a page).
	raw string
	// formBody is the schema of a multipart/form-data body (an upload), instead of JSON.
	formBody obj
	// orErr: the success may be the Error envelope too (a sign-in answering requires2FA).
	orErr bool
	// sock names the message schemas of a WebSocket upgrade ("WSClient": WSClientIn and
	// WSClientOut).
	sock string
}

// answers sets the media type of a success that is not the envelope.
func (o operation) answers(mediaType string) operation { o.raw = mediaType; return o }

// form sets a multipart/form-data body.
func (o operation) form(schema obj) operation { o.formBody = schema; return o }

// orError lets the success be the Error envelope too.
func (o operation) orError() operation { o.orErr = true; return o }

// socket makes the operation a WebSocket upgrade whose messages are side+"In"/"Out".
func (o operation) socket(side string) operation { o.sock = side; return o }

// componentSchemas are the named schemas, each with an example the tests validate: the
// records reflected from the views, the inputs and small answers, the envelopes.
func componentSchemas() obj {
	out := newReflector().comps
	for k, v := range handWritten() {
		out[k] = v
	}
	str := obj{"type": "string"}
	strOrNull := obj{"type": []string{"string", "null"}}
	strs := obj{"type": "array", "items": str}
	codes := make([]string, 0, len(errorCodes))
	for _, c := range errorCodes {
		codes = append(codes, string(c))
	}
	apiKeyCreated := obj{"allOf": []any{ref("APIKey"), obj{"type": "object", "required": []string{"key"}, "properties": obj{"key": str}}},
		"examples": []any{obj{"id": "5f0c6c1e-2d7e-4a57-9b0e-0b7f3f1f2b11", "name": "shop", "maskedKey": "kws_Ab3d...x9Yz",
			"key": "kws_Ab3dEfGhIjKlMnOpQrStUvWxYz0123x9Yz", "scopes": []string{"licenses:create"}, "apps": []string{},
			"expiresAt": nil, "lastUsedAt": nil, "lastUsedIp": "", "createdAt": "2026-04-01T10:00:00.000Z", "updatedAt": "2026-04-01T10:00:00.000Z"}}}
	scopes := append([]string{apikeys.PresetRead, apikeys.PresetFull}, scopeNames()...)
	for k, v := range (obj{
		"Error": obj{"type": "object", "required": []string{"success", "error"}, "properties": obj{
			"success": obj{"const": false},
			"error": obj{"type": "object", "required": []string{"code", "message"}, "properties": obj{
				"code":    obj{"enum": codes, "description": "A stable code; each operation lists the ones it answers (x-keyward-error-codes)."},
				"message": str, "field": str}},
			"requires2FA": obj{"type": "boolean"}, "requireVerify": obj{"type": "boolean"}, "message": str},
			"examples": []any{obj{"success": false, "error": obj{"code": "SCOPE_DENIED", "message": `missing scope "licenses:create"`}}}},
		"Envelope": obj{"type": "object", "required": []string{"success", "data"}, "properties": obj{"success": obj{"const": true}, "data": obj{}},
			"examples": []any{obj{"success": true, "data": obj{"message": "done"}}}},
		"Message": obj{"type": "object", "required": []string{"message"}, "properties": obj{"message": str},
			"examples": []any{obj{"message": "API key revoked"}}},
		"APIKeyInput": obj{"type": "object", "properties": obj{
			"name":      obj{"type": "string", "minLength": 1, "maxLength": apikeys.MaxNameLength},
			"scopes":    obj{"type": "array", "items": obj{"enum": scopes}},
			"apps":      strs,
			"expiresAt": obj{"type": "string", "description": "RFC 3339; \"\" removes the expiry"}},
			"examples": []any{obj{"name": "shop", "scopes": []string{"licenses:create", "users:read"}, "apps": []string{"app-1"},
				"expiresAt": "2027-01-01T00:00:00Z"}}},
		"APIKeyCreated": apiKeyCreated,
		"AuditEntry": obj{"type": "object", "required": []string{"id", "accountId", "appId", "actor", "ip", "method", "route", "path", "recordType", "recordId", "status", "before", "after", "createdAt"},
			"properties": obj{"id": str, "accountId": str, "appId": str, "ip": str, "method": str, "route": str, "path": str,
				"recordType": str, "recordId": str, "status": obj{"type": "integer"}, "createdAt": strOrNull,
				"actor": obj{"type": "object", "required": []string{"type", "id", "name"}, "properties": obj{
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
	}) {
		out[k] = v
	}
	return out
}

// errorCodes are listed in the description of Error.code.
var errorCodes = []core.Code{core.CodeValidation, core.CodeUnauthorized, core.CodeForbidden, apikeys.CodeScopeDenied,
	core.CodeNotFound, core.CodeNoMethod, core.CodeConflict, core.CodePlanFeature, core.CodePlanLimit, core.CodeTooLarge,
	codeRequestTimeout, core.CodeRateLimited, core.CodeQuotaExceeded, core.CodeUnavailable, core.CodeInternal,
	core.CodeRequireVerify, core.CodeRequires2FA, core.CodeNonceRequired, core.CodeNotLoggedIn, core.CodeAppDisabled,
	core.CodeAppPaused, core.CodeVersionMismatch, core.CodeRuleBlocked, core.CodeBanned, core.CodeUserDisabled, core.CodeExpired,
	core.CodeHWIDLocked, core.CodeDeviceLimit, core.CodeIPLocked, core.CodePCNameLocked, core.CodeLicenseInvalid,
	core.CodeLicenseUsed, core.CodeSeatsFull, accounts.CodeReauthRequired, accounts.CodePasswordBreached}

// errorResponses are the error answers of a route, by status, each with the codes it may
// carry (x-keyward-error-codes); anything else is the default (INTERNAL).
func errorResponses(named obj, r RouteScope, hasBody bool) obj {
	byStatus := map[int][]core.Code{http.StatusServiceUnavailable: {core.CodeUnavailable}}
	add := func(codes ...core.Code) {
		for _, c := range codes {
			st := statusOf(c)
			byStatus[st] = append(byStatus[st], c)
		}
	}
	add(core.CodeValidation)
	if hasBody {
		add(core.CodeTooLarge, codeRequestTimeout)
	}
	switch r.Scope {
	case scopePublic:
		if strings.HasPrefix(r.Path, "/api/auth/") {
			add(core.CodeUnauthorized, core.CodeRateLimited, core.CodeRequireVerify, core.CodeConflict, accounts.CodePasswordBreached)
		}
	case scopeClient:
		add(core.CodeUnauthorized, core.CodeNotLoggedIn, core.CodeNonceRequired, core.CodeNotFound, core.CodeRateLimited, core.CodeQuotaExceeded,
			core.CodeAppDisabled, core.CodeAppPaused, core.CodeVersionMismatch, core.CodeRuleBlocked, core.CodeBanned, core.CodeUserDisabled,
			core.CodeExpired, core.CodeHWIDLocked, core.CodeDeviceLimit, core.CodeIPLocked, core.CodePCNameLocked, core.CodeLicenseInvalid,
			core.CodeLicenseUsed, core.CodeSeatsFull, core.CodeForbidden)
	default:
		add(core.CodeUnauthorized, core.CodeForbidden, core.CodePlanFeature, core.CodePlanLimit, core.CodeRateLimited, accounts.CodeReauthRequired)
		if r.Scope != scopeSession {
			add(apikeys.CodeScopeDenied)
		}
		if strings.Contains(r.Path, ":") {
			add(core.CodeNotFound)
		}
		if r.Method == http.MethodPost || r.Method == http.MethodPatch || r.Method == http.MethodPut {
			add(core.CodeConflict)
		}
	}
	out := obj{"default": responseRef(named, "Internal", []string{string(core.CodeInternal)})}
	for st, codes := range byStatus {
		names := make([]string, 0, len(codes))
		for _, c := range codes {
			names = append(names, string(c))
		}
		out[fmt.Sprint(st)] = responseRef(named, fmt.Sprint(st), names)
	}
	return out
}

// responseRef answers a reference to the shared error answer with these codes, adding it
// to named (components.responses) the first time: routes share a handful of them.
func responseRef(named obj, status string, codes []string) obj {
	var b strings.Builder
	b.WriteString("Error" + status)
	for _, c := range codes {
		for _, w := range strings.Split(strings.ToLower(c), "_") {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	name := b.String()
	if named[name] == nil {
		named[name] = obj{"description": "Error envelope: " + strings.Join(codes, ", "), "x-keyward-error-codes": codes,
			"content": obj{"application/json": obj{"schema": ref("Error")}}}
	}
	return obj{"$ref": "#/components/responses/" + name}
}

// scopeNames are the grantable scopes of the scope table, sorted.
func scopeNames() []string {
	seen := map[string]bool{}
	for _, r := range routeIndex.sorted {
		if s := r.scope; strings.Contains(s, ":") && s != apikeys.Credentials {
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

// buildOpenAPI makes the description of every route of the table.
func buildOpenAPI(routes []*route) obj {
	paths, named := obj{}, obj{}
	ids := map[string]int{}
	for _, r := range routes {
		p := openAPIPath(r.path)
		item, _ := paths[p].(obj)
		if item == nil {
			item = obj{}
			paths[p] = item
		}
		spec := r.op
		id := operationID(r.method, r.path)
		if ids[id]++; ids[id] > 1 {
			id = fmt.Sprintf("%s%d", id, ids[id])
		}
		op := obj{"operationId": id, "tags": []string{r.tag}, "x-keyward-scope": r.scope}
		summary := spec.summary
		if summary == "" {
			summary = r.method + " " + r.path
		}
		op["summary"] = summary
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(r.path, -1) {
			params = append(params, obj{"name": m[1], "in": "path", "required": true, "schema": obj{"type": "string"}})
		}
		params = append(params, queryParams(spec.summary)...)
		switch r.scope {
		case scopePublic, scopeClient:
			op["security"] = []any{}
		case scopeSession:
			op["security"] = []any{obj{"bearer": []string{}}}
		default:
			op["security"] = []any{obj{"bearer": []string{}}, obj{"apiKey": []string{}}}
			op["description"] = fmt.Sprintf("Scoped API keys need the scope `%s`.", r.scope)
		}
		if r.scope == apikeys.Credentials {
			op["description"] = "A session or the account key only: no scoped key reaches this route."
		}
		hasBody := spec.body != nil || spec.formBody != nil
		if hasBody {
			body, ct := spec.body, "application/json"
			if spec.formBody != nil {
				ct, body = "multipart/form-data", spec.formBody
			}
			required, _ := body["required"].([]string)
			op["requestBody"] = obj{"required": len(required) > 0 || body["$ref"] != nil, "content": obj{ct: obj{"schema": body}}}
		}
		responses := errorResponses(named, RouteScope{Method: r.method, Path: r.path, Scope: r.scope}, hasBody)
		status := spec.status
		if status == 0 {
			status = http.StatusOK
		}
		success := obj{"description": "Success"}
		switch {
		case spec.sock != "":
			op["description"] = "WebSocket upgrade (token in the `token` query member). The messages are the schemas WSClientIn/WSClientOut (program's socket) and WSDashboardIn/WSDashboardOut (dashboard socket), and the tables in docs/API.md (WebSocket channels)."
			params = append(params, obj{"name": "token", "in": "query", "required": true, "schema": obj{"type": "string"}})
			status, success = http.StatusSwitchingProtocols, obj{"description": "Switching Protocols: the socket is open"}
			op["x-keyward-messages"] = obj{"send": ref(spec.sock + "In"), "receive": ref(spec.sock + "Out")}
		case spec.raw != "":
			success["content"] = obj{spec.raw: obj{"schema": obj{"type": "string"}}}
			if spec.raw == "application/json" {
				success["content"] = obj{spec.raw: obj{"schema": obj{"type": "object"}}}
			}
		default:
			schema := envelope(spec.data)
			if spec.orErr {
				schema = obj{"anyOf": []any{schema, ref("Error")}}
			}
			success["content"] = obj{"application/json": obj{"schema": schema}}
		}
		responses[fmt.Sprint(status)] = success
		op["responses"] = responses
		if params != nil {
			op["parameters"] = params
		}
		item[strings.ToLower(r.method)] = op
	}
	return obj{
		"openapi": "3.1.0",
		"info": obj{"title": "Keyward API", "version": "1",
			"description": "Dashboard, admin and Client API of Keyward. Every answer is the envelope: `{success:true,data}` or `{success:false,error:{code,message,field?}}`. See docs/API.md for the prose, the WebSocket message tables and the scope of every route."},
		"servers": []any{obj{"url": "/"}},
		"tags":    []any{},
		"paths":   paths,
		"components": obj{
			"schemas":   componentSchemas(),
			"responses": named,
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

// apiSpec is the OpenAPI description as served, built once per process: it is the route
// table's, the same for every router, and building it took a third of a server's start
// CPU (the http tests build hundreds of routers in one process).
var apiSpec = sync.OnceValues(func() ([]byte, error) { return json.Marshal(buildOpenAPI(routeIndex.sorted)) })

func newAPIDocs() (*apiDocsHandlers, error) {
	b, err := apiSpec()
	if err != nil {
		return nil, fmt.Errorf("httpapi: OpenAPI description: %w", err)
	}
	return &apiDocsHandlers{spec: b}, nil
}

func (h *apiDocsHandlers) openAPI(c *gin.Context) { c.Data(http.StatusOK, "application/json", h.spec) }

func (h *apiDocsHandlers) page(c *gin.Context) {
	c.Header("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
	c.Data(http.StatusOK, "text/html; charset=utf-8", apidocs.Page)
}

func (h *apiDocsHandlers) script(c *gin.Context) {
	c.Data(http.StatusOK, "text/javascript; charset=utf-8", apidocs.Script)
}
