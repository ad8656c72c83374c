package httpapi

import (
	"context"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core/accounts"
)

// ticketAuthenticator opens a dashboard socket with a single-use ticket
// (POST /api/auth/ws-ticket) instead of the JWT in the URL (accounts.Service).
type ticketAuthenticator interface {
	AuthenticateTicket(ctx context.Context, ticket string) (accounts.Principal, error)
	CheckSessionLive(ctx context.Context, p accounts.Principal) error
}

// dashboardCaller authenticates a dashboard socket by ?ticket= (the dashboard's way: the
// JWT never travels in a URL) or ?token= (API clients). It answers the caller and the
// check its socket repeats on its timer; ok false when the request was answered already.
func (h *wsHandlers) dashboardCaller(c *gin.Context) (accounts.Principal, func(context.Context) error, error, bool) {
	if ticket := c.Query("ticket"); ticket != "" {
		ta, isTicket := h.auth.(ticketAuthenticator)
		if isTicket {
			if err := rateLimit(c, h.limiter, limitUpgrade, c.ClientIP()); err != nil {
				fail(c, err)
				return accounts.Principal{}, nil, nil, false
			}
			p, err := ta.AuthenticateTicket(c.Request.Context(), strings.Clone(ticket))
			return p, func(ctx context.Context) error { return ta.CheckSessionLive(ctx, p) }, err, true
		}
	}
	token, ok := h.admitUpgrade(c, "JWT")
	if !ok {
		return accounts.Principal{}, nil, nil, false
	}
	p, err := h.auth.Authenticate(c.Request.Context(), token)
	return p, func(ctx context.Context) error {
		_, err := h.auth.Authenticate(ctx, token)
		return err
	}, err, true
}
