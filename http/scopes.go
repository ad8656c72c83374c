package httpapi

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/core/apikeys"
	"github.com/keyward/keyward/storage"
)

// Route classes of the route table's scope column that are not scopes: who may call a
// route that no scoped key reaches through its scopes.
const (
	// scopePublic routes need no credentials (sign-up, login, health, plans).
	scopePublic = "public"
	// scopeClient routes are the Client API's, authenticated by the application.
	scopeClient = "client"
	// scopeSession routes take a dashboard session (JWT) only: the dashboard socket.
	scopeSession = "session"
)

const ctxAPIKey = "keyward.apiKey"

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

type apiKeyView struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	MaskedKey  string   `json:"maskedKey"`
	Key        string   `json:"key,omitempty"`
	Scopes     []string `json:"scopes"`
	Apps       []string `json:"apps"`
	ExpiresAt  *string  `json:"expiresAt"`
	LastUsedAt *string  `json:"lastUsedAt"`
	LastUsedIP *string  `json:"lastUsedIp"` // null until the key is used, as lastUsedAt
	CreatedAt  *string  `json:"createdAt"`
	UpdatedAt  *string  `json:"updatedAt"`
}

func viewOfAPIKey(k storage.APIKey) apiKeyView {
	return apiKeyView{ID: k.ID, Name: k.Name, MaskedKey: apikeys.Masked(k), Scopes: orEmptyList(k.Scopes), Apps: orEmptyList(k.Apps),
		ExpiresAt: stamp(k.ExpiresAt), LastUsedAt: stamp(k.LastUsedAt), LastUsedIP: nullIfEmpty(k.LastUsedIP),
		CreatedAt: stamp(k.CreatedAt), UpdatedAt: stamp(k.UpdatedAt)}
}

// nullIfEmpty answers nil for "": a member documented as null when absent.
func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
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
	if err := fullScopeNeedsReauth(c, in); err != nil {
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
