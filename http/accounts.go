package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/storage"
)

// accountHandlers serves SPEC 4.1 and the administration routes.
type accountHandlers struct {
	svc     *accounts.Service
	limiter cluster.RateLimiter
	outbox  string // see Config.MailOutbox
}

func (h *accountHandlers) register(c *gin.Context) {
	var in struct {
		Email    string `json:"email"`
		Username string `json:"username"`
		Password string `json:"password"`
	}
	if err := bindJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	// Validate before counting, so a typo does not cost one of three tries.
	if err := core.FirstError(core.ValidatePassword("password", in.Password), core.ValidateUsername("username", in.Username),
		core.ValidateEmail("email", in.Email)); err != nil {
		fail(c, err)
		return
	}
	if err := rateLimit(c, h.limiter, limitRegister, c.ClientIP()); err != nil {
		fail(c, err)
		return
	}
	msg, err := h.svc.Register(c.Request.Context(), accounts.RegisterInput{Email: in.Email, Username: in.Username, Password: in.Password})
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusAccepted, gin.H{"message": msg, "requireVerify": true})
}

func (h *accountHandlers) login(c *gin.Context) {
	var in struct {
		Username      string `json:"username"`
		Password      string `json:"password"`
		TwoFactorCode string `json:"twoFactorCode"`
		RecoveryCode  string `json:"recoveryCode"`
		// Passkey stands in for the 2FA code (http/passkeys.go).
		Passkey *passkeyBody `json:"passkey"`
	}
	if err := bindJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	if err := core.FirstError(core.Required("username", in.Username), core.Required("password", in.Password)); err != nil {
		fail(c, err)
		return
	}
	// Per account, whichever of its names is typed (SPEC 8: per IP and username).
	account, err := h.svc.LoginLimitKey(c.Request.Context(), in.Username)
	if err != nil {
		fail(c, err)
		return
	}
	if err := rateLimit(c, h.limiter, limitLogin, c.ClientIP(), account); err != nil {
		fail(c, err)
		return
	}
	pk, err := in.Passkey.assertion()
	if err != nil {
		fail(c, err)
		return
	}
	s, err := h.svc.Login(clientCtx(c), accounts.LoginInput{Username: in.Username, Password: in.Password, TwoFactorCode: in.TwoFactorCode,
		RecoveryCode: in.RecoveryCode, Passkey: pk})
	if err != nil {
		fail(c, err)
		return
	}
	setRefreshCookie(c, s)
	ok(c, http.StatusOK, sessionOf(s))
}

func (h *accountHandlers) verifyEmail(c *gin.Context) {
	var in struct {
		Token string `json:"token"`
	}
	if err := bindJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	s, err := h.svc.VerifyEmail(clientCtx(c), in.Token)
	if err != nil {
		fail(c, err)
		return
	}
	setRefreshCookie(c, s)
	v := sessionOf(s)
	ok(c, http.StatusOK, gin.H{"message": "email verified", "account": v.Account, "token": v.Token, "expiresAt": v.ExpiresAt})
}

func (h *accountHandlers) resendVerification(c *gin.Context) {
	var in struct {
		Email string `json:"email"`
	}
	if err := bindJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	if err := core.ValidateEmail("email", in.Email); err != nil {
		fail(c, err)
		return
	}
	if err := rateLimit(c, h.limiter, limitResend, c.ClientIP()); err != nil {
		fail(c, err)
		return
	}
	msg, err := h.svc.ResendVerification(c.Request.Context(), in.Email)
	if err != nil {
		fail(c, err)
		return
	}
	message(c, msg)
}

func (h *accountHandlers) forgotPassword(c *gin.Context) {
	var in struct {
		Email string `json:"email"`
	}
	if err := bindJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	if err := core.ValidateEmail("email", in.Email); err != nil {
		fail(c, err)
		return
	}
	if err := rateLimit(c, h.limiter, limitForgot, c.ClientIP()); err != nil {
		fail(c, err)
		return
	}
	msg, err := h.svc.ForgotPassword(c.Request.Context(), in.Email)
	if err != nil {
		fail(c, err)
		return
	}
	message(c, msg)
}

func (h *accountHandlers) resetPassword(c *gin.Context) {
	var in struct {
		Token       string `json:"token"`
		NewPassword string `json:"newPassword"`
	}
	if err := bindJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	msg, err := h.svc.ResetPassword(c.Request.Context(), in.Token, in.NewPassword)
	if err != nil {
		fail(c, err)
		return
	}
	message(c, msg)
}

func (h *accountHandlers) resetPassword2FA(c *gin.Context) {
	var in struct {
		Username      string `json:"username"`
		TwoFactorCode string `json:"twoFactorCode"`
		NewPassword   string `json:"newPassword"`
	}
	if err := bindJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	if err := core.FirstError(core.Required("username", in.Username), core.ValidateCode("twoFactorCode", in.TwoFactorCode),
		core.ValidatePassword("newPassword", in.NewPassword)); err != nil {
		fail(c, err)
		return
	}
	if err := rateLimit(c, h.limiter, limitReset2FA, c.ClientIP()); err != nil {
		fail(c, err)
		return
	}
	msg, err := h.svc.ResetPasswordBy2FA(c.Request.Context(), in.Username, in.TwoFactorCode, in.NewPassword)
	if err != nil {
		fail(c, err)
		return
	}
	message(c, msg)
}

// mailOutbox tells a signed-in owner where mails are written when no SMTP server is set;
// the signed-out pages only say that they are.
func (h *accountHandlers) mailOutbox(c *gin.Context) {
	ok(c, http.StatusOK, gin.H{"outbox": h.outbox})
}

func (h *accountHandlers) me(c *gin.Context) {
	v, err := h.svc.Me(c.Request.Context(), principal(c))
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusOK, viewOf(v))
}

func (h *accountHandlers) changePassword(c *gin.Context) {
	var in struct {
		CurrentPassword string `json:"currentPassword"`
		TwoFactorCode   string `json:"twoFactorCode"`
		NewPassword     string `json:"newPassword"`
	}
	if err := bindJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	s, err := h.svc.ChangePassword(clientCtx(c), principal(c), accounts.ChangePasswordInput{
		CurrentPassword: in.CurrentPassword, TwoFactorCode: in.TwoFactorCode, NewPassword: in.NewPassword})
	if err != nil {
		fail(c, err)
		return
	}
	setRefreshCookie(c, s)
	// Every earlier token is revoked, the one of this request included: hand over a new one.
	v := sessionOf(s)
	ok(c, http.StatusOK, gin.H{"message": "password changed", "token": v.Token, "expiresAt": v.ExpiresAt})
}

func (h *accountHandlers) logout(c *gin.Context) {
	msg, err := h.svc.Logout(c.Request.Context(), principal(c))
	if err != nil {
		fail(c, err)
		return
	}
	clearRefreshCookie(c)
	message(c, msg)
}

func (h *accountHandlers) regenerateAPIKey(c *gin.Context) {
	key, err := h.svc.RegenerateAPIKey(c.Request.Context(), principal(c))
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusOK, gin.H{"apiKey": key})
}

func (h *accountHandlers) setup2FA(c *gin.Context) {
	secret, url, err := h.svc.Setup2FA(c.Request.Context(), principal(c))
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusOK, gin.H{"secret": secret, "otpauth": url})
}

func (h *accountHandlers) enable2FA(c *gin.Context) {
	var in struct {
		Code string `json:"code"`
	}
	if err := bindJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	msg, err := h.svc.Enable2FA(c.Request.Context(), principal(c), in.Code)
	if err != nil {
		fail(c, err)
		return
	}
	// The first time a second factor is on, the recovery codes are made and shown once.
	codes, err := h.svc.EnsureRecoveryCodes(c.Request.Context(), principal(c))
	if err != nil {
		fail(c, err)
		return
	}
	if codes != nil {
		ok(c, http.StatusOK, gin.H{"message": msg, "recoveryCodes": codes})
		return
	}
	message(c, msg)
}

func (h *accountHandlers) disable2FA(c *gin.Context) {
	var in struct {
		Password string `json:"password"`
		Code     string `json:"code"`
	}
	if err := bindJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	msg, err := h.svc.Disable2FA(c.Request.Context(), principal(c), in.Password, in.Code)
	if err != nil {
		fail(c, err)
		return
	}
	message(c, msg)
}

func (h *accountHandlers) listPlans(c *gin.Context) { ok(c, http.StatusOK, h.svc.Plans()) }

func (h *accountHandlers) selectPlan(c *gin.Context) {
	var in struct {
		Plan string `json:"plan"`
	}
	if err := bindJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	v, err := h.svc.SelectPlan(c.Request.Context(), principal(c), in.Plan)
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusOK, viewOf(v))
}

func (h *accountHandlers) adminList(c *gin.Context) {
	page, err := pageOf(c)
	if err != nil {
		fail(c, err)
		return
	}
	search := c.Query("search")
	if len(search) > 100 {
		fail(c, core.Invalid("search", "search must be at most 100 characters"))
		return
	}
	list, total, err := h.svc.ListAccounts(c.Request.Context(), storage.AccountQuery{Search: search, Page: page})
	if err != nil {
		fail(c, err)
		return
	}
	out := make([]accountView, 0, len(list))
	for _, v := range list {
		out = append(out, viewOf(v))
	}
	ok(c, http.StatusOK, gin.H{"accounts": out, "total": total, "limit": page.Limit, "offset": page.Offset})
}

func (h *accountHandlers) adminChange(c *gin.Context) {
	var in struct {
		Plan *string `json:"plan"`
		Role *string `json:"role"`
	}
	if err := bindJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	v, err := h.svc.ChangeAccount(c.Request.Context(), c.Param("accountId"), accounts.Change{Plan: in.Plan, Role: in.Role})
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusOK, viewOf(v))
}
