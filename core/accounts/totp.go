package accounts

import (
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"
	"github.com/pquerna/otp/totp"
)

const totpPeriod = 30

// newTOTPSecret generates a TOTP secret and its otpauth:// URL (issuer Keyward, account
// name the owner's email), compatible with common authenticator apps.
func newTOTPSecret(email string) (secret, url string, err error) {
	key, err := totp.Generate(totp.GenerateOpts{Issuer: "Keyward", AccountName: email, Period: totpPeriod})
	if err != nil {
		return "", "", err
	}
	return key.Secret(), key.URL(), nil
}

// matchTOTP checks code against the secret within ±1 time step and returns the step that
// matched. Steps at or before lastStep are refused: a code is accepted once only, and an
// older code is not accepted after a newer one.
func matchTOTP(secret, code string, now time.Time, lastStep int64) (step int64, ok bool) {
	current := now.Unix() / totpPeriod
	opts := hotp.ValidateOpts{Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}
	for _, s := range []int64{current - 1, current, current + 1} {
		if s <= lastStep || s < 0 {
			continue
		}
		valid, err := hotp.ValidateCustom(code, uint64(s), secret, opts)
		if err == nil && valid {
			return s, true
		}
	}
	return 0, false
}
