package httpapi

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"
)

// The email change confirmed from both addresses (core/accounts/email_change.go).

// limitEmailToken bounds the tries of the mailed links' tokens per address.
var limitEmailToken = limitRule{"auth.email-change", 20, 15 * time.Minute}

func (h *accountHandlers) changeEmail(c *gin.Context) {
	var in struct {
		Email string `json:"email"`
	}
	if err := bindJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	msg, err := h.svc.RequestEmailChange(c.Request.Context(), principal(c), in.Email)
	if err != nil {
		fail(c, err)
		return
	}
	message(c, msg)
}

func (h *accountHandlers) confirmEmailChange(c *gin.Context) {
	h.emailToken(c, h.svc.ConfirmEmailChange)
}
func (h *accountHandlers) cancelEmailChange(c *gin.Context) { h.emailToken(c, h.svc.CancelEmailChange) }

// emailToken serves the routes of the two mailed links, which authenticate by their token.
func (h *accountHandlers) emailToken(c *gin.Context, act func(ctx context.Context, token string) (string, error)) {
	var in struct {
		Token string `json:"token"`
	}
	if err := bindJSON(c, &in); err != nil {
		fail(c, err)
		return
	}
	if err := rateLimit(c, h.limiter, limitEmailToken, c.ClientIP()); err != nil {
		fail(c, err)
		return
	}
	msg, err := act(c.Request.Context(), in.Token)
	if err != nil {
		fail(c, err)
		return
	}
	message(c, msg)
}
