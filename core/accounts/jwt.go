package accounts

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/keyward/keyward/core/secrets"
)

func init() {
	// Issued-at times carry milliseconds, so that a token issued right after a password
	// change is told apart from one issued earlier in the same second (TokensValidAfter).
	jwt.TimePrecision = time.Millisecond
}

// Claims are what Keyward puts in a dashboard JWT: the account id as subject, a unique id
// for revocation, issued-at and expiry.
type Claims struct {
	jwt.RegisteredClaims
}

// tokenIssuer signs and checks HS256 dashboard tokens.
type tokenIssuer struct {
	secret []byte
	ttl    time.Duration
}

const issuerName = "keyward"

func (t tokenIssuer) issue(accountID string, now time.Time) (string, Claims, error) {
	c := Claims{jwt.RegisteredClaims{
		Issuer:    issuerName,
		Subject:   accountID,
		ID:        secrets.Random(16),
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(t.ttl)),
	}}
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
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithIssuer(issuerName),
		jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil {
		return Claims{}, fmt.Errorf("%w: %v", errBadToken, err)
	}
	if c.Subject == "" || c.ID == "" || c.IssuedAt == nil {
		return Claims{}, fmt.Errorf("%w: missing claims", errBadToken)
	}
	return c, nil
}
