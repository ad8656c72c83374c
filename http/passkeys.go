package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/accounts"
)

// Passkeys of the owner's account (issue 25). A ceremony is two calls: begin answers the
// options for navigator.credentials.create/get and a challenge id; finish sends the
// browser's PublicKeyCredential (as JSON, with the challenge id) back.
var (
	// limitPasskeyBegin bounds the challenges an address can have stored.
	limitPasskeyBegin = limitRule{"auth.passkey.begin", 30, 5 * time.Minute}
	// limitPasskeyLogin bounds passkey sign-in attempts per address.
	limitPasskeyLogin = limitRule{"auth.passkey.login", 20, 15 * time.Minute}
)

type passkeyView struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	CreatedAt     *string  `json:"createdAt"`
	LastUsedAt    *string  `json:"lastUsedAt"`
	BackedUp      bool     `json:"backedUp"`
	RecoveryCodes []string `json:"recoveryCodes,omitempty"`
}

func passkeyViewOf(p accounts.PasskeyInfo) passkeyView {
	return passkeyView{ID: p.ID, Name: p.Name, CreatedAt: stamp(p.CreatedAt), LastUsedAt: stamp(p.LastUsedAt), BackedUp: p.BackedUp}
}

func ceremonyOf(c accounts.PasskeyCeremony) gin.H {
	return gin.H{"challengeId": c.ChallengeID, "options": c.Options, "expiresAt": stamp(c.ExpiresAt)}
}

// passkeyBody is the finish of a ceremony.
type passkeyBody struct {
	ChallengeID string          `json:"challengeId"`
	Credential  json.RawMessage `json:"credential"`
}

func (b *passkeyBody) assertion() (*accounts.PasskeyAssertion, error) {
	if b == nil {
		return nil, nil
	}
	if err := core.Required("challengeId", b.ChallengeID); err != nil {
		return nil, err
	}
	return &accounts.PasskeyAssertion{ChallengeID: b.ChallengeID, Credential: b.Credential}, nil
}

func (h *accountHandlers) passkeyLoginBegin(c *gin.Context) {
	var in struct {
		Username string `json:"username"`
	}
	if err := bindJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	if err := rateLimit(c, h.limiter, limitPasskeyBegin, c.ClientIP()); err != nil {
		fail(c, err)
		return
	}
	ceremony, err := h.svc.BeginPasskeyLogin(c.Request.Context(), in.Username)
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusOK, ceremonyOf(ceremony))
}

func (h *accountHandlers) passkeyLoginFinish(c *gin.Context) {
	var in passkeyBody
	if err := bindJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	a, err := in.assertion()
	if err != nil {
		fail(c, err)
		return
	}
	if err := rateLimit(c, h.limiter, limitPasskeyLogin, c.ClientIP()); err != nil {
		fail(c, err)
		return
	}
	s, err := h.svc.FinishPasskeyLogin(clientCtx(c), *a)
	if err != nil {
		fail(c, err)
		return
	}
	setRefreshCookie(c, s)
	ok(c, http.StatusOK, sessionOf(s))
}

func (h *accountHandlers) listPasskeys(c *gin.Context) {
	list, err := h.svc.ListPasskeys(c.Request.Context(), principal(c))
	if err != nil {
		fail(c, err)
		return
	}
	out := make([]passkeyView, 0, len(list))
	for _, p := range list {
		out = append(out, passkeyViewOf(p))
	}
	ok(c, http.StatusOK, out)
}

func (h *accountHandlers) passkeyRegisterBegin(c *gin.Context) {
	ceremony, err := h.svc.BeginPasskeyRegistration(c.Request.Context(), principal(c))
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusOK, ceremonyOf(ceremony))
}

func (h *accountHandlers) passkeyRegisterFinish(c *gin.Context) {
	var in struct {
		passkeyBody
		Name string `json:"name"`
	}
	if err := bindJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	if err := core.Required("challengeId", in.ChallengeID); err != nil {
		fail(c, err)
		return
	}
	p, codes, err := h.svc.FinishPasskeyRegistration(c.Request.Context(), principal(c), in.ChallengeID, in.Name, in.Credential)
	if err != nil {
		fail(c, err)
		return
	}
	v := passkeyViewOf(p)
	v.RecoveryCodes = codes
	ok(c, http.StatusCreated, v)
}

func (h *accountHandlers) renamePasskey(c *gin.Context) {
	var in struct {
		Name string `json:"name"`
	}
	if err := bindJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	if err := core.Required("name", in.Name); err != nil {
		fail(c, err)
		return
	}
	if err := h.svc.RenamePasskey(c.Request.Context(), principal(c), c.Param("passkeyId"), in.Name); err != nil {
		fail(c, err)
		return
	}
	message(c, "passkey renamed")
}

func (h *accountHandlers) deletePasskey(c *gin.Context) {
	if err := h.svc.DeletePasskey(c.Request.Context(), principal(c), c.Param("passkeyId")); err != nil {
		fail(c, err)
		return
	}
	message(c, "passkey removed")
}

func (h *accountHandlers) passkeyReauthBegin(c *gin.Context) {
	ceremony, err := h.svc.BeginPasskeyReauth(c.Request.Context(), principal(c))
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusOK, ceremonyOf(ceremony))
}
