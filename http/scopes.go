package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/core/apikeys"
	"github.com/keyward/keyward/storage"
)

// Route classes of the scope table that are not scopes: who may call a route that no
// scoped key reaches through its scopes.
const (
	// scopePublic routes need no credentials (sign-up, login, health, plans).
	scopePublic = "public"
	// scopeClient routes are the Client API's, authenticated by the application.
	scopeClient = "client"
	// scopeSession routes take a dashboard session (JWT) only: the dashboard socket.
	scopeSession = "session"
)

const ctxAPIKey = "keyward.apiKey"

// routeScopes is the scope every route of the router needs ("METHOD /full/path"). New
// refuses to build a router with a route missing here, and docs/API.md lists the table.
var routeScopes = buildRouteScopes()

func buildRouteScopes() map[string]string {
	t := map[string]string{
		"GET /healthz": scopePublic, "GET /readyz": scopePublic, "GET /metrics": scopePublic,
		"GET /api/plans":        scopePublic,
		"GET /api/openapi.json": scopePublic, "GET /api/docs": scopePublic, "GET /api/docs/app.js": scopePublic,

		"POST /api/auth/register": scopePublic, "POST /api/auth/login": scopePublic,
		"POST /api/auth/verify-email": scopePublic, "POST /api/auth/resend-verification": scopePublic,
		"POST /api/auth/forgot-password": scopePublic, "POST /api/auth/reset-password": scopePublic,
		"POST /api/auth/reset-password-2fa": scopePublic,

		"GET /api/auth/me":                  "account:read",
		"GET /api/auth/mail-outbox":         "account:read",
		"POST /api/auth/change-password":    apikeys.Credentials,
		"POST /api/auth/logout":             apikeys.Credentials,
		"POST /api/auth/api-key/regenerate": apikeys.Credentials,
		"POST /api/auth/2fa/setup":          apikeys.Credentials,
		"POST /api/auth/2fa/enable":         apikeys.Credentials,
		"POST /api/auth/2fa/disable":        apikeys.Credentials,
		"POST /api/auth/plan":               apikeys.Credentials,
		"GET /api/auth/api-keys":            apikeys.Credentials,
		"POST /api/auth/api-keys":           apikeys.Credentials,
		"DELETE /api/auth/api-keys/:keyId":  apikeys.Credentials,

		"GET /api/admin/accounts": "admin:read",
		"GET /api/admin/audit":    "admin:read",
		"GET /api/audit":          "audit:read",

		"GET /api/apps": "apps:read", "POST /api/apps": "apps:create",
		"GET /api/integrations/events": "integrations:read",

		"GET /api/client/ws":                                  scopeClient,
		"GET /api/client/confirm-reset/:token":                scopeClient,
		"GET /api/apps/:appId/ws/connect":                     scopeSession,
		"GET /api/apps/:appId/ws/online":                      "realtime:read",
		"GET /api/apps/:appId/ws/sessions":                    "realtime:read",
		"POST /api/apps/:appId/ws/broadcast":                  "realtime:create",
		"POST /api/apps/:appId/ws/chat":                       "realtime:create",
		"POST /api/apps/:appId/ws/command":                    "realtime:create",
		"POST /api/apps/:appId/ws/push":                       "realtime:create",
		"POST /api/apps/:appId/ws/users/:userId/force-logout": "realtime:update",
		"POST /api/apps/:appId/ws/users/:userId/kick":         "realtime:update",
		"POST /api/apps/:appId/ws/users/:userId/ban":          "realtime:update",
	}
	for _, r := range []string{"init", "nonce", "login", "register", "license", "activate", "heartbeat", "check", "end",
		"variables", "variable", "license-variables", "license-variable", "user-variables", "user-variable",
		"set-user-variable", "delete-user-variable", "user", "log", "token", "check-license", "change-password",
		"check-update", "file", "request-reset", "license-file"} {
		t["POST /api/client/"+r] = scopeClient
	}
	// PATCH and PUT are one route (patchOrPut).
	update := func(path, scope string) {
		t["PATCH "+path], t["PUT "+path] = scope, scope
	}
	update("/api/auth/api-keys/:keyId", apikeys.Credentials)
	update("/api/admin/accounts/:accountId", "admin:update")
	// crud gives a collection and its members the usual scopes of the resource.
	crud := func(base, member, res string) {
		t["GET "+base], t["POST "+base] = res+":read", res+":create"
		if member != "" {
			t["GET "+base+"/"+member] = res + ":read"
			update(base+"/"+member, res+":update")
			t["DELETE "+base+"/"+member] = res + ":delete"
		}
	}
	app := "/api/apps/:appId"
	t["GET "+app], t["DELETE "+app] = "apps:read", "apps:delete"
	update(app, "apps:update")
	t["POST "+app+"/secret/regenerate"] = "apps:update"
	t["POST "+app+"/signing-key/regenerate"] = "apps:update"
	t["GET "+app+"/stats"] = "apps:read"

	crud(app+"/users", ":userId", "users")
	for _, a := range []string{"kill-sessions", "reset-hwid", "extend"} {
		t["POST "+app+"/users/:userId/"+a] = "users:update"
	}
	t["GET "+app+"/users/:userId/ip"] = "users:read"

	crud(app+"/licenses", ":licenseId", "licenses")
	t["POST "+app+"/licenses/verify"] = "licenses:read"
	t["POST "+app+"/licenses/bulk-delete"] = "licenses:delete"
	t["GET "+app+"/licenses/:licenseId/user"] = "licenses:read"
	t["POST "+app+"/licenses/:licenseId/file"] = "licenses:create" // issues a signed offline license file
	t["GET "+app+"/licenses/:licenseId/seats"] = "licenses:read"
	t["DELETE "+app+"/licenses/:licenseId/seats/:seatId"] = "licenses:update" // frees a seat: ends that session

	t["GET "+app+"/devices"], t["DELETE "+app+"/devices/:deviceId"] = "devices:read", "devices:delete"

	crud(app+"/tokens", ":tokenId", "tokens")
	delete(t, "GET "+app+"/tokens/:tokenId") // no single-token read route

	for _, base := range []string{"/variables", "/users/:userId/variables", "/licenses/:licenseId/variables"} {
		crud(app+base, ":varId", "variables")
		delete(t, "GET "+app+base+"/:varId")
	}
	t["POST "+app+"/variables/bulk"] = "variables:write"

	crud(app+"/rules", ":ruleId", "rules")
	delete(t, "GET "+app+"/rules/:ruleId")
	t["POST "+app+"/rules/bulk"] = "rules:write"

	for _, p := range []string{"/logs", "/logs/stats", "/logs/events"} {
		t["GET "+app+p] = "logs:read"
	}
	t["DELETE "+app+"/logs"] = "logs:delete"

	for _, p := range []string{"overview", "timeseries", "geography", "recent"} {
		t["GET "+app+"/analytics/"+p] = "analytics:read"
	}

	crud(app+"/files", ":fileId", "files")
	delete(t, "GET "+app+"/files/:fileId")
	t["GET "+app+"/files/:fileId/download"] = "files:read"

	crud(app+"/integrations", ":integrationId", "integrations")
	t["POST "+app+"/integrations/:integrationId/test"] = "integrations:update"
	t["POST "+app+"/integrations/:integrationId/secret/regenerate"] = "integrations:update"
	t["GET "+app+"/integrations/:integrationId/deliveries"] = "integrations:read"

	crud(app+"/ws/hooks", ":hookId", "hooks")
	delete(t, "GET "+app+"/ws/hooks/:hookId")
	return t
}

// scopeOf answers the scope of a route ("" and false when the table lacks it).
func scopeOf(method, fullPath string) (string, bool) {
	s, ok := routeScopes[method+" "+fullPath]
	return s, ok
}

// RouteScope is one row of the scope table, for the documentation and the OpenAPI
// description.
type RouteScope struct{ Method, Path, Scope string }

// RouteScopes answers the scope table sorted by path and method.
func RouteScopes() []RouteScope {
	out := make([]RouteScope, 0, len(routeScopes))
	for k, s := range routeScopes {
		m, p, _ := strings.Cut(k, " ")
		out = append(out, RouteScope{Method: m, Path: p, Scope: s})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Method < out[j].Method
	})
	return out
}

// unscopedRoutes answers the routes of the router the scope table does not name.
func unscopedRoutes(routes gin.RoutesInfo) []string {
	var missing []string
	for _, r := range routes {
		if _, ok := scopeOf(r.Method, r.Path); !ok {
			missing = append(missing, r.Method+" "+r.Path)
		}
	}
	return missing
}

// Routes answers the routes of a handler made by New (nil for any other handler).
func Routes(h http.Handler) gin.RoutesInfo {
	if e, ok := h.(*gin.Engine); ok {
		return e.Routes()
	}
	return nil
}

// appFreeScopes are what an app-restricted key may call outside /api/apps/:appId: its
// own account view and the list of integration events, which show no app's data.
var appFreeScopes = []string{"account:read", "integrations:read"}

// scopeDecision says whether the scoped key k may call the route (method, fullPath) on the
// app appID ("" for routes without one): nil, or a SCOPE_DENIED error naming what is missing.
func scopeDecision(method, fullPath, appID string, k *apikeys.Key) error {
	needed, known := scopeOf(method, fullPath)
	switch {
	case !known:
		// Fail closed: a route nobody classified is refused to scoped keys.
		return core.E(apikeys.CodeScopeDenied, "this route has no scope; only a session or the account key may call it")
	case needed == apikeys.Credentials || needed == scopeSession:
		return core.E(apikeys.CodeScopeDenied, "missing scope %q: a scoped API key never reaches credential routes; use a session or the account key", apikeys.Credentials)
	case needed == scopePublic || needed == scopeClient:
		return nil
	case !k.Grants.Allows(needed):
		return core.E(apikeys.CodeScopeDenied, "missing scope %q", needed)
	case len(k.Apps) == 0:
		return nil
	case appID != "":
		if !k.AllowsApp(appID) {
			return core.E(apikeys.CodeScopeDenied, "this API key may not touch application %q", appID)
		}
		return nil
	case !slices.Contains(appFreeScopes, needed):
		return core.E(apikeys.CodeScopeDenied, "this API key is limited to some applications; %q outside them needs an unrestricted key", needed)
	}
	return nil
}

// checkScope runs after authentication: a scoped key outside its scopes or apps is refused.
// Sessions and the account key pass.
func checkScope(c *gin.Context) error {
	v, found := c.Get(ctxAPIKey)
	if !found {
		return nil
	}
	k, _ := v.(*apikeys.Key)
	return scopeDecision(c.Request.Method, c.FullPath(), c.Param("appId"), k)
}

// scopedAuthenticator authenticates scoped keys beside the account's own credentials.
type scopedAuthenticator interface {
	AuthenticateScopedKey(ctx context.Context, key, ip string) (accounts.Principal, *apikeys.Key, error)
}

// ownerAuth is the Authenticator of the owner routes: the account service, and the
// scoped keys.
type ownerAuth struct {
	Authenticator
	keys *apikeys.Service
}

func (a ownerAuth) AuthenticateScopedKey(ctx context.Context, key, ip string) (accounts.Principal, *apikeys.Key, error) {
	acc, k, err := a.keys.Authenticate(ctx, key, ip)
	if err != nil {
		return accounts.Principal{}, nil, err
	}
	return accounts.Principal{Account: acc, ViaAPIKey: true}, &k, nil
}

// authenticateKey authenticates an X-API-Key: a scoped key (kws_) through the scoped keys,
// remembered on the request for checkScope; any other key as the account key.
func authenticateKey(c *gin.Context, auth Authenticator, key string) (accounts.Principal, error) {
	sa, ok := auth.(scopedAuthenticator)
	if !ok || !apikeys.IsScoped(key) {
		return auth.AuthenticateAPIKey(c.Request.Context(), key)
	}
	p, k, err := sa.AuthenticateScopedKey(c.Request.Context(), key, c.ClientIP())
	if err == nil {
		c.Set(ctxAPIKey, k)
	}
	return p, err
}

// apiKeyHandlers serve /api/auth/api-keys: the owner's scoped keys.
type apiKeyHandlers struct{ svc *apikeys.Service }

func (h *apiKeyHandlers) routes(owner *gin.RouterGroup) {
	owner.GET("/api-keys", h.list)
	owner.POST("/api-keys", h.create)
	patchOrPut(owner, "/api-keys/:keyId", h.update)
	owner.DELETE("/api-keys/:keyId", h.revoke)
}

type apiKeyView struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	MaskedKey  string   `json:"maskedKey"`
	Key        string   `json:"key,omitempty"`
	Scopes     []string `json:"scopes"`
	Apps       []string `json:"apps"`
	ExpiresAt  *string  `json:"expiresAt"`
	LastUsedAt *string  `json:"lastUsedAt"`
	LastUsedIP string   `json:"lastUsedIp"`
	CreatedAt  *string  `json:"createdAt"`
	UpdatedAt  *string  `json:"updatedAt"`
}

func viewOfAPIKey(k storage.APIKey) apiKeyView {
	return apiKeyView{ID: k.ID, Name: k.Name, MaskedKey: apikeys.Masked(k), Scopes: orEmptyList(k.Scopes), Apps: orEmptyList(k.Apps),
		ExpiresAt: stamp(k.ExpiresAt), LastUsedAt: stamp(k.LastUsedAt), LastUsedIP: k.LastUsedIP,
		CreatedAt: stamp(k.CreatedAt), UpdatedAt: stamp(k.UpdatedAt)}
}

func orEmptyList(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// apiKeyBody is the body of create and update; absent members are kept on update.
type apiKeyBody struct {
	Name   *string   `json:"name"`
	Scopes *[]string `json:"scopes"`
	Apps   *[]string `json:"apps"`
	// ExpiresAt is RFC 3339; "" removes the expiry.
	ExpiresAt *string `json:"expiresAt"`
}

func (b apiKeyBody) input() (apikeys.Input, error) {
	in := apikeys.Input{Name: b.Name, Scopes: b.Scopes, Apps: b.Apps}
	if b.ExpiresAt != nil {
		var at time.Time
		if *b.ExpiresAt != "" {
			t, err := time.Parse(time.RFC3339, *b.ExpiresAt)
			if err != nil {
				return in, &core.Error{Code: core.CodeValidation, Field: "expiresAt", Message: "expiresAt must be an RFC 3339 time"}
			}
			at = t
		}
		in.ExpiresAt = &at
	}
	return in, nil
}

func (h *apiKeyHandlers) list(c *gin.Context) {
	list, err := h.svc.List(c.Request.Context(), principal(c).Account.ID)
	reply(c, http.StatusOK, mapSlice(list, viewOfAPIKey), err)
}

func (h *apiKeyHandlers) create(c *gin.Context) {
	var b apiKeyBody
	if !bind(c, &b) {
		return
	}
	in, err := b.input()
	if err != nil {
		fail(c, err)
		return
	}
	k, full, err := h.svc.Create(c.Request.Context(), principal(c).Account, in)
	if err != nil {
		fail(c, err)
		return
	}
	v := viewOfAPIKey(k)
	v.Key = full
	ok(c, http.StatusCreated, v)
}

func (h *apiKeyHandlers) update(c *gin.Context) {
	var b apiKeyBody
	if !bind(c, &b) {
		return
	}
	in, err := b.input()
	if err != nil {
		fail(c, err)
		return
	}
	k, err := h.svc.Update(c.Request.Context(), principal(c).Account.ID, c.Param("keyId"), in)
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusOK, viewOfAPIKey(k))
}

func (h *apiKeyHandlers) revoke(c *gin.Context) {
	err := h.svc.Revoke(c.Request.Context(), principal(c).Account.ID, c.Param("keyId"))
	reply(c, http.StatusOK, gin.H{"message": "API key revoked"}, err)
}

// errUnscoped is New's refusal of a router with routes outside the scope table.
func errUnscoped(missing []string) error {
	return fmt.Errorf("httpapi: routes without a scope (add them to routeScopes): %s", strings.Join(missing, ", "))
}
