package core

import (
	"net/mail"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

var (
	usernamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{3,32}$`)
	sixDigits       = regexp.MustCompile(`^[0-9]{6}$`)
)

// MaxEmailLength is the longest address accepted (RFC 5321's path limit).
const MaxEmailLength = 254

// MaxPasswordLength bounds the work a single request can ask the password hash to do.
const MaxPasswordLength = 128

// ValidateUsername checks the account username rule: 3 to 32 of [A-Za-z0-9_.-].
func ValidateUsername(field, s string) error {
	if s == "" {
		return Invalid(field, "%s is required", field)
	}
	if !usernamePattern.MatchString(s) {
		return Invalid(field, "%s must be 3 to 32 characters of letters, digits, '_', '.' or '-'", field)
	}
	return nil
}

// ValidateEmail checks that s is one plain address (no display name) of sane length.
func ValidateEmail(field, s string) error {
	if s == "" {
		return Invalid(field, "%s is required", field)
	}
	if len(s) > MaxEmailLength {
		return Invalid(field, "%s must be at most %d characters", field, MaxEmailLength)
	}
	addr, err := mail.ParseAddress(s)
	if err != nil || addr.Address != s || addr.Name != "" || !strings.Contains(s[strings.LastIndexByte(s, '@')+1:], ".") {
		return Invalid(field, "%s must be a valid email address", field)
	}
	return nil
}

// ValidatePassword checks the complexity rule of SPEC 2: at least 8 characters with an
// uppercase letter, a lowercase letter and a digit. The message names the rule broken.
func ValidatePassword(field, s string) error {
	if s == "" {
		return Invalid(field, "%s is required", field)
	}
	if len([]rune(s)) < 8 {
		return Invalid(field, "%s must be at least 8 characters", field)
	}
	if len(s) > MaxPasswordLength {
		return Invalid(field, "%s must be at most %d bytes", field, MaxPasswordLength)
	}
	var upper, lower, digit bool
	for _, r := range s {
		switch {
		case unicode.IsUpper(r):
			upper = true
		case unicode.IsLower(r):
			lower = true
		case unicode.IsDigit(r):
			digit = true
		}
	}
	switch {
	case !upper:
		return Invalid(field, "%s must contain an uppercase letter", field)
	case !lower:
		return Invalid(field, "%s must contain a lowercase letter", field)
	case !digit:
		return Invalid(field, "%s must contain a digit", field)
	}
	return nil
}

// ValidateCode checks a 6-digit one-time code (TOTP).
func ValidateCode(field, s string) error {
	if s == "" {
		return Invalid(field, "%s is required", field)
	}
	if !sixDigits.MatchString(s) {
		return Invalid(field, "%s must be 6 digits", field)
	}
	return nil
}

// Required refuses an empty string member.
func Required(field, s string) error {
	if s == "" {
		return Invalid(field, "%s is required", field)
	}
	return nil
}

// FirstError returns the first non-nil error, so handlers can validate a request in order.
func FirstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// IntParam reads an optional integer query parameter: def when absent, else an integer
// from 1 to max, or a VALIDATION_ERROR naming the field.
func IntParam(field, s string, def, max int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > max {
		return 0, Invalid(field, "%s must be an integer from 1 to %d", field, max)
	}
	return n, nil
}

// Set copies *v into *dst when v is given: the "only given members change" rule of the
// dashboard's update calls.
func Set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}
