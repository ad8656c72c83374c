package core

import (
	"errors"
	"fmt"
	"time"
)

// Code is a stable, machine-readable error code. Clients switch on it, so a code never
// changes meaning once released; the http package maps each code to one HTTP status.
type Code string

// The codes every part of Keyward may return. Specific flows add their own codes next to
// the flow (for example the client API's HWID_LOCKED); all of them are listed in the API docs.
const (
	CodeValidation   Code = "VALIDATION_ERROR"
	CodeUnauthorized Code = "UNAUTHORIZED"
	CodeForbidden    Code = "FORBIDDEN"
	CodeNotFound     Code = "NOT_FOUND"
	CodeConflict     Code = "CONFLICT"
	CodeRateLimited  Code = "RATE_LIMITED"
	// CodeQuotaExceeded refuses client API calls beyond the owner's monthly plan quota.
	CodeQuotaExceeded Code = "QUOTA_EXCEEDED"
	CodePlanFeature   Code = "PLAN_FEATURE"
	CodePlanLimit     Code = "PLAN_LIMIT"
	CodeTooLarge      Code = "PAYLOAD_TOO_LARGE"
	CodeNoMethod      Code = "METHOD_NOT_ALLOWED"
	CodeUnavailable   Code = "UNAVAILABLE"
	CodeInternal      Code = "INTERNAL"
	// CodeBanned and CodeExpired refuse a banned or expired user or license.
	CodeBanned  Code = "BANNED"
	CodeExpired Code = "EXPIRED"
	// Codes of the client API (SPEC 4.10, CLIENT-SDKS.md). The SDKs document the first
	// seven; the rest name the other refusals precisely.
	CodeNonceRequired   Code = "NONCE_REQUIRED"
	CodeHWIDLocked      Code = "HWID_LOCKED"
	CodeIPLocked        Code = "IP_LOCKED"
	CodePCNameLocked    Code = "PC_NAME_LOCKED"
	CodeDeviceLimit     Code = "DEVICE_LIMIT"
	CodeVersionMismatch Code = "VERSION_MISMATCH"
	CodeAppDisabled     Code = "APP_DISABLED"
	CodeAppPaused       Code = "APP_PAUSED"
	CodeRuleBlocked     Code = "RULE_BLOCKED"
	CodeLicenseInvalid  Code = "LICENSE_INVALID"
	CodeLicenseUsed     Code = "LICENSE_USED"
	// CodeSeatsFull refuses a sign-in when every floating seat of the license is in use.
	CodeSeatsFull    Code = "SEATS_FULL"
	CodeUserDisabled Code = "USER_DISABLED"
	CodeNotLoggedIn  Code = "NOT_LOGGED_IN"
	// CodeRequireVerify and CodeRequires2FA are the two special login answers of SPEC 7.2;
	// the http package writes them with their special bodies, not the error object.
	CodeRequireVerify Code = "REQUIRE_VERIFY"
	CodeRequires2FA   Code = "REQUIRES_2FA"
)

// Error is a domain error with everything the edge needs to answer a client: the code, a
// message safe to show to the user, and optional details. Internal causes stay in Cause and
// are logged, never sent.
type Error struct {
	Code    Code
	Message string
	// Field names the request member at fault, for validation errors.
	Field string
	// RetryAfter tells rate-limited callers when to come back.
	RetryAfter time.Duration
	// Cause is the underlying error, for logs only.
	Cause error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Cause)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Cause }

// E builds an Error with a code and a message.
func E(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid builds a VALIDATION_ERROR naming the field at fault.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Code: CodeValidation, Field: field, Message: fmt.Sprintf(format, args...)}
}

// RateLimited builds a RATE_LIMITED error telling the caller when to retry.
func RateLimited(retryAfter time.Duration) *Error {
	secs := int((retryAfter + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	return &Error{Code: CodeRateLimited, RetryAfter: retryAfter,
		Message: fmt.Sprintf("too many requests, retry in %d seconds", secs)}
}

// CodeOf returns the code of err when it is (or wraps) an *Error, and "" otherwise.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
