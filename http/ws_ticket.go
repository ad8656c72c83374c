package httpapi

import (
	"context"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/actors/sockets"
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
func (h *wsHandlers) dashboardCaller(c *gin.Context) (accounts.Principal, sockets.TokenCheck, error, bool) {
	if ticket := c.Query("ticket"); ticket != "" {
		ta, isTicket := h.auth.(ticketAuthenticator)
		if isTicket {
			if err := rateLimit(c, h.limiter, limitUpgrade, c.ClientIP()); err != nil {
				fail(c, err)
				return accounts.Principal{}, nil, nil, false
			}
			p, err := ta.AuthenticateTicket(c.Request.Context(), strings.Clone(ticket))
			return p, ticketRecheck{auth: ta, p: p}, err, true
		}
	}
	token, ok := h.admitUpgrade(c, "JWT")
	if !ok {
		return accounts.Principal{}, nil, nil, false
	}
	p, err := h.auth.Authenticate(c.Request.Context(), token)
	return p, tokenRecheck{auth: h.auth, token: token}, err, true
}

// ticketRecheck checks again that the session a dashboard's ticket was made for is live.
type ticketRecheck struct {
	auth ticketAuthenticator
	p    accounts.Principal
}

func (r ticketRecheck) Recheck(ctx context.Context) error { return r.auth.CheckSessionLive(ctx, r.p) }

// tokenRecheck checks again that a dashboard's JWT authenticates.
type tokenRecheck struct {
	auth  Authenticator
	token string
}

func (r tokenRecheck) Recheck(ctx context.Context) error {
	_, err := r.auth.Authenticate(ctx, r.token)
	return err
}
