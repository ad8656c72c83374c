package httpapi

import (
	"time"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/core/plans"
	"github.com/keyward/keyward/storage"
)

// timeFormat is RFC 3339 in UTC with milliseconds, the form of every timestamp on the wire.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// stamp formats t; the zero time is left out (nil pointer with omitempty).
func stamp(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := core.Writable(t).UTC().Format(timeFormat)
	return &s
}

// accountSummary is the account in login and verify answers (SPEC 4.1).
type accountSummary struct {
	ID               string `json:"id"`
	Username         string `json:"username"`
	Email            string `json:"email"`
	Role             string `json:"role"`
	TwoFactorEnabled bool   `json:"twoFactorEnabled"`
}

func summaryOf(a storage.Account) accountSummary {
	return accountSummary{ID: a.ID, Username: a.Username, Email: a.Email, Role: a.Role, TwoFactorEnabled: a.TwoFactorEnabled}
}

// accountView is the full Account record of SPEC 2.
type accountView struct {
	ID               string     `json:"id"`
	Email            string     `json:"email"`
	Username         string     `json:"username"`
	Role             string     `json:"role"`
	APIKey           string     `json:"apiKey"`
	EmailVerified    bool       `json:"emailVerified"`
	TwoFactorEnabled bool       `json:"twoFactorEnabled"`
	LastLoginAt      *string    `json:"lastLoginAt,omitempty"`
	CreatedAt        *string    `json:"createdAt,omitempty"`
	ApplicationCount int        `json:"applicationCount"`
	Plan             plans.Plan `json:"plan"`
	APICallsUsed     int64      `json:"apiCallsUsed"`
	APICallsResetAt  *string    `json:"apiCallsResetAt,omitempty"`
}

func viewOf(v accounts.View) accountView {
	a := v.Account
	return accountView{ID: a.ID, Email: a.Email, Username: a.Username, Role: a.Role, APIKey: accounts.MaskedAPIKey(a),
		EmailVerified: a.EmailVerified, TwoFactorEnabled: a.TwoFactorEnabled, LastLoginAt: stamp(a.LastLoginAt),
		CreatedAt: stamp(a.CreatedAt), ApplicationCount: v.ApplicationCount, Plan: v.Plan,
		APICallsUsed: v.APICallsUsed, APICallsResetAt: stamp(v.APICallsResetAt)}
}

type sessionView struct {
	Token     string         `json:"token"`
	ExpiresAt *string        `json:"expiresAt,omitempty"`
	Account   accountSummary `json:"account"`
}

func sessionOf(s accounts.Session) sessionView {
	return sessionView{Token: s.Token, ExpiresAt: stamp(s.ExpiresAt), Account: summaryOf(s.Account)}
}
