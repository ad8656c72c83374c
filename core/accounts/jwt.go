package accounts

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/keyward/keyward/core/secrets"
)

// Claims are what Keyward puts in a dashboard JWT: the account id as subject, a unique id
// for revocation, issued-at and expiry. They implement jwt.Claims themselves (rather than
// embedding jwt.RegisteredClaims) for the issued-at time: it carries milliseconds, so that a
// token issued right after a password change is told apart from one issued earlier in the
// same second (TokensValidAfter), and jwt.NumericDate reads a fractional time through a
// float64, which can land a millisecond early and refuse the token just issued.
type Claims struct {
	Issuer  string `json:"iss"`
	Subject string `json:"sub"`
	ID      string `json:"jti"`
	// SessionID names the stored owner session the token belongs to.
	SessionID string           `json:"sid,omitempty"`
	IssuedAt  MilliTime        `json:"iat"`
	ExpiresAt *jwt.NumericDate `json:"exp"`
}

// GetExpirationTime implements jwt.Claims.
func (c Claims) GetExpirationTime() (*jwt.NumericDate, error) { return c.ExpiresAt, nil }

// GetIssuedAt implements jwt.Claims.
func (c Claims) GetIssuedAt() (*jwt.NumericDate, error) {
	if c.IssuedAt.IsZero() {
		return nil, nil
	}
	return &jwt.NumericDate{Time: c.IssuedAt.Time}, nil
}

// GetNotBefore implements jwt.Claims; Keyward tokens have none.
func (c Claims) GetNotBefore() (*jwt.NumericDate, error) { return nil, nil }

// GetIssuer implements jwt.Claims.
func (c Claims) GetIssuer() (string, error) { return c.Issuer, nil }

// GetSubject implements jwt.Claims.
func (c Claims) GetSubject() (string, error) { return c.Subject, nil }

// GetAudience implements jwt.Claims; Keyward tokens have none.
func (c Claims) GetAudience() (jwt.ClaimStrings, error) { return nil, nil }

// MilliTime is a JWT NumericDate with millisecond precision that reads back exactly what
// was written: seconds with three decimals, parsed as decimal text, never through a float.
type MilliTime struct{ time.Time }

// MarshalJSON writes seconds since the epoch with exactly three decimals.
func (t MilliTime) MarshalJSON() ([]byte, error) {
	ms := t.UnixMilli()
	sign := ""
	if ms < 0 {
		sign, ms = "-", -ms
	}
	return fmt.Appendf(nil, "%s%d.%03d", sign, ms/1000, ms%1000), nil
}

// UnmarshalJSON reads a JSON number of seconds; digits past the millisecond are dropped.
func (t *MilliTime) UnmarshalJSON(b []byte) error {
	s := string(b)
	if strings.ContainsAny(s, "eE") {
		// Not a form Keyward writes; read it as jwt does.
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("accounts: bad time %q", s)
		}
		t.Time = time.UnixMilli(int64(math.Floor(f * 1000)))
		return nil
	}
	whole, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(whole, "-")
	secs, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || secs > math.MaxInt64/1000 || secs < math.MinInt64/1000 {
		return fmt.Errorf("accounts: bad time %q", s)
	}
	frac = (frac + "000")[:3]
	ms, err := strconv.ParseInt(frac, 10, 64)
	if err != nil || ms < 0 {
		return fmt.Errorf("accounts: bad time %q", s)
	}
	if neg {
		ms = -ms
	}
	t.Time = time.UnixMilli(secs*1000 + ms)
	return nil
}

// tokenIssuer signs and checks HS256 dashboard tokens.
type tokenIssuer struct {
	secret []byte
	ttl    time.Duration
	// leeway is how long after its expiry a token is still accepted, and how far in the
	// future its issued-at may be: it forgives clock differences between the nodes of a
	// cluster (a token issued by one node and checked by another whose clock is behind).
	leeway time.Duration
}

const issuerName = "keyward"

// MaxTokenLeeway bounds Config.TokenLeeway: past it a "leeway" is a longer lifetime.
const MaxTokenLeeway = time.Minute

// issue signs a token of the session sid issued at now, truncated to the millisecond.
func (t tokenIssuer) issue(accountID, sid string, now time.Time) (string, Claims, error) {
	now = now.Truncate(time.Millisecond)
	return t.issueUntil(accountID, sid, now, now.Add(t.ttl))
}

// issueUntil signs a token issued at now that expires at expires (a refresh ends its token
// with its session).
func (t tokenIssuer) issueUntil(accountID, sid string, now, expires time.Time) (string, Claims, error) {
	now = now.Truncate(time.Millisecond)
	c := Claims{
		Issuer:    issuerName,
		Subject:   accountID,
		ID:        secrets.Random(16),
		SessionID: sid,
		IssuedAt:  MilliTime{now},
		ExpiresAt: jwt.NewNumericDate(expires),
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(t.secret)
	if err != nil {
		return "", Claims{}, fmt.Errorf("accounts: sign token: %w", err)
	}
	return s, c, nil
}

var errBadToken = errors.New("accounts: invalid token")

func (t tokenIssuer) parse(token string, now time.Time) (Claims, error) {
	var c Claims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithIssuer(issuerName), jwt.WithLeeway(t.leeway),
		jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil {
		return Claims{}, fmt.Errorf("%w: %v", errBadToken, err)
	}
	if c.Subject == "" || c.ID == "" || c.IssuedAt.IsZero() || c.ExpiresAt == nil {
		return Claims{}, fmt.Errorf("%w: missing claims", errBadToken)
	}
	return c, nil
}
