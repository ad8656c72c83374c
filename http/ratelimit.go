package httpapi

import (
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core"
)

// limitRule is one rate limit of SPEC 8: at most Limit requests per Window per key.
type limitRule struct {
	Name   string
	Limit  int
	Window time.Duration
}

// The HTTP rate limits of SPEC 8 (dashboard part). Resend verification is not in the spec;
// it shares register's budget shape so that it cannot be used to flood an inbox.
var (
	limitLogin    = limitRule{"auth.login", 5, 15 * time.Minute}
	limitRegister = limitRule{"auth.register", 3, time.Hour}
	limitResend   = limitRule{"auth.resend", 3, time.Hour}
	limitForgot   = limitRule{"auth.forgot", 2, 24 * time.Hour}
	limitReset2FA = limitRule{"auth.reset2fa", 2, 24 * time.Hour}
)

// rateLimit counts one hit of rule for the key parts and answers RATE_LIMITED (with
// Retry-After) past the limit. Keys are built from the parts given, lower-cased, so that
// "Alice" and "alice" share a budget.
func rateLimit(c *gin.Context, l cluster.RateLimiter, rule limitRule, parts ...string) error {
	key := "rl:" + rule.Name + ":" + strings.ToLower(strings.Join(parts, "|"))
	d, err := l.Allow(c.Request.Context(), key, rule.Limit, rule.Window)
	if err != nil {
		return err
	}
	if !d.Allowed {
		return core.RateLimited(d.RetryAfter)
	}
	return nil
}
