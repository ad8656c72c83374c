package httpapi

import (
	"context"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/accounts"
)

const ctxPrincipal = "keyward.principal"

// Authenticator checks dashboard credentials (accounts.Service).
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (accounts.Principal, error)
	AuthenticateAPIKey(ctx context.Context, key string) (accounts.Principal, error)
}

// requireOwner authenticates the caller by `Authorization: Bearer <JWT>` or `X-API-Key`.
// Any other Authorization form, or none at all, is 401.
func requireOwner(auth Authenticator) gin.HandlerFunc {
	return func(c *gin.Context) {
		var (
			p   accounts.Principal
			err error
		)
		header := c.GetHeader("Authorization")
		switch {
		case header != "":
			scheme, token, found := strings.Cut(header, " ")
			token = strings.TrimSpace(token)
			if !found || !strings.EqualFold(scheme, "Bearer") || token == "" {
				fail(c, core.E(core.CodeUnauthorized, "Authorization must be \"Bearer <token>\""))
				return
			}
			p, err = auth.Authenticate(clientCtx(c), token)
		case c.GetHeader("X-API-Key") != "":
			p, err = authenticateKey(c, auth, c.GetHeader("X-API-Key"))
		default:
			fail(c, core.E(core.CodeUnauthorized, "authentication required: send a bearer token or X-API-Key"))
			return
		}
		if err != nil {
			fail(c, err)
			return
		}
		c.Set(ctxPrincipal, p)
		if err := checkScope(c); err != nil {
			fail(c, err)
			return
		}
		if err := checkRecentAuth(c, auth, p); err != nil {
			fail(c, err)
			return
		}
		c.Next()
	}
}

// requireAdmin lets only accounts with the admin role through; it runs after requireOwner.
func requireAdmin() gin.HandlerFunc {
	return func(c *gin.Context) {
		if !principal(c).IsAdmin() {
			fail(c, core.E(core.CodeForbidden, "administrator role required"))
			return
		}
		c.Next()
	}
}

// principal returns the authenticated caller set by requireOwner.
func principal(c *gin.Context) accounts.Principal {
	p, _ := c.Get(ctxPrincipal)
	pr, _ := p.(accounts.Principal)
	return pr
}
