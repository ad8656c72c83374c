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
)

// The dashboard's refresh (issue 22): the secret rides an HttpOnly, SameSite=Strict cookie
// sent only to the refresh route, so no script and no other site's request can use it; the
// route also wants refreshHeader, which a cross-site form cannot send.
const (
	refreshCookie = "kw_refresh"
	refreshPath   = "/api/auth/refresh"
	refreshHeader = "X-Keyward-Refresh"
)

// clientCtx carries the caller's browser and address to the session records.
func clientCtx(c *gin.Context) context.Context {
	return accounts.WithClient(c.Request.Context(), accounts.ClientInfo{UserAgent: c.GetHeader("User-Agent"), IP: c.ClientIP()})
}

// setRefreshCookie hands the browser the session's refresh secret.
func setRefreshCookie(c *gin.Context, s accounts.Session) {
	if s.Refresh == "" {
		return
	}
	http.SetCookie(c.Writer, &http.Cookie{Name: refreshCookie, Value: s.Refresh, Path: refreshPath,
		Expires: s.RefreshExpiresAt, MaxAge: int(time.Until(s.RefreshExpiresAt).Seconds()),
		HttpOnly: true, Secure: c.Request.TLS != nil, SameSite: http.SameSiteStrictMode})
}

func clearRefreshCookie(c *gin.Context) {
	http.SetCookie(c.Writer, &http.Cookie{Name: refreshCookie, Value: "", Path: refreshPath, MaxAge: -1,
		HttpOnly: true, Secure: c.Request.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// refresh renews the session named by the cookie: a new JWT, the session's expiry moved on.
func (h *accountHandlers) refresh(c *gin.Context) {
	if c.GetHeader(refreshHeader) != "1" {
		fail(c, core.E(core.CodeForbidden, "send the %s: 1 header with a refresh", refreshHeader))
		return
	}
	cookie, err := c.Cookie(refreshCookie)
	if err != nil || cookie == "" {
		fail(c, core.E(core.CodeUnauthorized, "no session to refresh: sign in"))
		return
	}
	s, err := h.svc.Refresh(clientCtx(c), cookie)
	if err != nil {
		clearRefreshCookie(c)
		fail(c, err)
		return
	}
	setRefreshCookie(c, s)
	ok(c, http.StatusOK, sessionOf(s))
}

// wsTicket issues a single-use ticket of 30 s for the dashboard socket.
func (h *accountHandlers) wsTicket(c *gin.Context) {
	t, expires, err := h.svc.WSTicket(c.Request.Context(), principal(c))
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusOK, gin.H{"ticket": t, "expiresAt": stamp(expires)})
}

type ownerSessionView struct {
	ID         string  `json:"id"`
	UserAgent  string  `json:"userAgent"`
	IP         string  `json:"ip"`
	CreatedAt  *string `json:"createdAt"`
	LastUsedAt *string `json:"lastUsedAt"`
	ExpiresAt  *string `json:"expiresAt"`
	Current    bool    `json:"current"`
}

func (h *accountHandlers) listSessions(c *gin.Context) {
	list, err := h.svc.ListSessions(c.Request.Context(), principal(c))
	if err != nil {
		fail(c, err)
		return
	}
	out := make([]ownerSessionView, 0, len(list))
	for _, s := range list {
		out = append(out, ownerSessionView{ID: s.ID, UserAgent: s.UserAgent, IP: s.IP, CreatedAt: stamp(s.CreatedAt),
			LastUsedAt: stamp(s.LastUsedAt), ExpiresAt: stamp(s.ExpiresAt), Current: s.Current})
	}
	ok(c, http.StatusOK, out)
}

func (h *accountHandlers) revokeSession(c *gin.Context) {
	if err := h.svc.RevokeSession(c.Request.Context(), principal(c), c.Param("sessionId")); err != nil {
		fail(c, err)
		return
	}
	message(c, "session signed out")
}

func (h *accountHandlers) revokeOtherSessions(c *gin.Context) {
	n, err := h.svc.RevokeOtherSessions(c.Request.Context(), principal(c))
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusOK, gin.H{"message": "other sessions signed out", "count": n})
}

func (h *accountHandlers) reauth(c *gin.Context) {
	var in struct {
		Password      string       `json:"password"`
		TwoFactorCode string       `json:"twoFactorCode"`
		Passkey       *passkeyBody `json:"passkey"`
	}
	if err := bindJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	pk, err := in.Passkey.assertion()
	if err != nil {
		fail(c, err)
		return
	}
	p := principal(c)
	if err := rateLimit(c, h.limiter, limitLogin, c.ClientIP(), p.Account.ID); err != nil {
		fail(c, err)
		return
	}
	until, err := h.svc.Reauth(c.Request.Context(), p, accounts.ReauthInput{Password: in.Password, TwoFactorCode: in.TwoFactorCode, Passkey: pk})
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusOK, gin.H{"message": "confirmed", "validUntil": stamp(until)})
}

func (h *accountHandlers) recoveryCodesLeft(c *gin.Context) {
	n, err := h.svc.RecoveryCodesLeft(c.Request.Context(), principal(c))
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusOK, gin.H{"remaining": n})
}

func (h *accountHandlers) regenerateRecoveryCodes(c *gin.Context) {
	codes, err := h.svc.RegenerateRecoveryCodes(c.Request.Context(), principal(c))
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusOK, gin.H{"recoveryCodes": codes})
}

// recentAuthChecker is what requireOwner asks before a sensitive action (accounts.Service).
type recentAuthChecker interface {
	RequireRecentAuth(p accounts.Principal) error
}

const ctxRecentAuth = "keyward.recentAuth"

// reauthRoutes need a sign-in or re-authentication within the last 10 minutes
// (REAUTH_REQUIRED otherwise). Creating a full-scope API key is checked in its handler
// (the scopes are in the body).
var reauthRoutes = []string{
	"POST /api/auth/api-key/regenerate",
	"POST /api/apps/:appId/secret/regenerate",
	"POST /api/apps/:appId/signing-key/regenerate",
	"DELETE /api/apps/:appId",
	"POST /api/auth/2fa/disable",
	"POST /api/auth/recovery-codes/regenerate",
	"POST /api/auth/passkeys/register/begin",
	"DELETE /api/auth/passkeys/:passkeyId",
	"POST /api/auth/change-email",
}

// checkRecentAuth runs in requireOwner after authentication: it refuses the routes of
// reauthRoutes without a recent proof and keeps the answer for handlers that decide by body.
func checkRecentAuth(c *gin.Context, auth Authenticator, p accounts.Principal) error {
	if oa, wrapped := auth.(ownerAuth); wrapped {
		auth = oa.Authenticator
	}
	rc, ok := auth.(recentAuthChecker)
	if !ok {
		return nil
	}
	err := rc.RequireRecentAuth(p)
	if err == nil {
		return nil
	}
	c.Set(ctxRecentAuth, err)
	if slices.Contains(reauthRoutes, c.Request.Method+" "+c.FullPath()) {
		return err
	}
	return nil
}

// requireRecentAuth answers REAUTH_REQUIRED when the caller's session needs to prove who
// it is again before this action.
func requireRecentAuth(c *gin.Context) error {
	if v, found := c.Get(ctxRecentAuth); found {
		if err, _ := v.(error); err != nil {
			return err
		}
	}
	return nil
}

// fullScopeNeedsReauth is the rule of a new API key: one with the full preset is as
// strong as the account key and needs a recent proof.
func fullScopeNeedsReauth(c *gin.Context, in apikeys.Input) error {
	if in.Scopes != nil && slices.Contains(*in.Scopes, apikeys.PresetFull) {
		return requireRecentAuth(c)
	}
	return nil
}

// accountRefreshSection is the open route of the session refresh (it authenticates by its cookie).
func accountRefreshSection(h *handlerSet) section {
	return section{tag: "Account", access: accessOpen, rows: []row{
		{post, refreshPath, scopePublic, notAudited, h.accounts.refresh,
			op("Renew the dashboard session from its HttpOnly cookie (header "+refreshHeader+": 1)", noBody, ref("Session"))},
	}}
}

// accountSessionSection holds the owner's routes of sessions and re-authentication.
func accountSessionSection(h *handlerSet) section {
	cred := apikeys.Credentials
	sessionList := obj{"type": "array", "items": props("id!:string", "userAgent!:string", "ip!:string", "createdAt!:string",
		"lastUsedAt!:string", "expiresAt!:string", "current!:boolean")}
	return section{tag: "Account", access: accessOwner, rows: []row{
		// A socket ticket is an artifact of the sign-in, not a change: no audit entry per socket.
		{post, "/api/auth/ws-ticket", cred, notAudited, h.accounts.wsTicket,
			op("A single-use ticket of 30 s for the dashboard socket (?ticket=)", noBody, props("ticket!:string", "expiresAt!:string"))},
		{get, "/api/auth/sessions", cred, notAudited, h.accounts.listSessions, op("The signed-in sessions of the account", noBody, sessionList)},
		{del, "/api/auth/sessions/:sessionId", cred, auditDelete("account"), h.accounts.revokeSession, op("Sign one session out", noBody, msgData)},
		{post, "/api/auth/sessions/revoke-others", cred, auditCommand("account"), h.accounts.revokeOtherSessions,
			op("Sign out every other session", noBody, props("message!:string", "count!:integer"))},
		{get, "/api/auth/recovery-codes", cred, notAudited, h.accounts.recoveryCodesLeft, op("How many recovery codes are left", noBody, props("remaining!:integer"))},
		{post, "/api/auth/recovery-codes/regenerate", cred, auditCommand("account"), h.accounts.regenerateRecoveryCodes,
			op("Replace the recovery codes with ten new ones (shown once)", noBody, props("recoveryCodes!:string[]"))},
		{post, "/api/auth/reauth", cred, auditCommand("account"), h.accounts.reauth,
			op("Confirm it is you (password, 2FA code or a passkey's assertion) before sensitive actions",
				props("password:string", "twoFactorCode:string", "passkey:object"),
				props("message!:string", "validUntil!:string"))},
	}}
}
