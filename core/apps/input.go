package apps

import (
	"encoding/json"
	"regexp"
	"time"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/storage"
)

// Bounds of record fields, documented in docs/API.md.
const (
	maxNote         = 500
	maxDisplayName  = 64
	maxMetadata     = 16 << 10
	maxLevel        = 1_000_000
	maxDeviceLimit  = 10_000
	maxUses         = 1_000_000_000
	maxDuration     = 100 * 365 * 24 * 3600 // 100 years, in seconds
	maxHWID         = 256
	maxSearch       = 100
	maxPrefix       = 16
	maxBulkIDs      = 1000
	MaxLicenseBatch = 1000
	MaxTokenBatch   = 500
)

var appUsernamePattern = regexp.MustCompile(`^[A-Za-z0-9_.@-]{3,64}$`)

// ValidateUsername checks an application user name (dashboard and client API).
func ValidateUsername(field, s string) error {
	if s == "" {
		return core.Invalid(field, "%s is required", field)
	}
	if !appUsernamePattern.MatchString(s) {
		return core.Invalid(field, "%s must be 3 to 64 characters of letters, digits, '_', '.', '@' or '-'", field)
	}
	return nil
}

// ValidateUserPassword checks an application user password: required and bounded; owners
// choose their own strength rules.
func ValidateUserPassword(field, s string) error {
	if s == "" {
		return core.Invalid(field, "%s is required", field)
	}
	if len(s) > core.MaxPasswordLength {
		return core.Invalid(field, "%s must be at most %d bytes", field, core.MaxPasswordLength)
	}
	return nil
}

// intIn checks an optional integer against [min, max].
func intIn(field string, v *int, min, max int) error {
	if v != nil && (*v < min || *v > max) {
		return core.Invalid(field, "%s must be an integer from %d to %d", field, min, max)
	}
	return nil
}

func int64In(field string, v *int64, min, max int64) error {
	if v != nil && (*v < min || *v > max) {
		return core.Invalid(field, "%s must be an integer from %d to %d", field, min, max)
	}
	return nil
}

func maxLen(field string, v *string, n int) error {
	if v != nil && len([]rune(*v)) > n {
		return core.Invalid(field, "%s must be at most %d characters", field, n)
	}
	return nil
}

// parseTime reads an optional RFC 3339 timestamp: nil stays nil (unchanged), "" means
// "clear" (zero time), anything else must parse.
func parseTime(field string, v *string) (*time.Time, error) {
	if v == nil {
		return nil, nil
	}
	if *v == "" {
		zero := time.Time{}
		return &zero, nil
	}
	t, err := time.Parse(time.RFC3339, *v)
	if err != nil {
		return nil, core.Invalid(field, "%s must be an RFC 3339 timestamp such as 2030-01-02T15:04:05Z", field)
	}
	if !core.WithinTimeRange(t) {
		// Written back in UTC it would need a fifth year digit.
		return nil, core.Invalid(field, "%s must be at most %s", field, core.MaxTime().Format(time.RFC3339))
	}
	t = storage.Truncate(t)
	return &t, nil
}

// normalizeMetadata checks that raw is a JSON object of bounded size and returns its text.
func normalizeMetadata(raw json.RawMessage) (*string, error) {
	if raw == nil {
		return nil, nil
	}
	if len(raw) > maxMetadata {
		return nil, core.Invalid("metadata", "metadata must be at most %d bytes", maxMetadata)
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		if string(raw) == "null" {
			return nil, nil
		}
		return nil, core.Invalid("metadata", "metadata must be a JSON object")
	}
	text := string(raw)
	return &text, nil
}

func page(p storage.Page) (storage.Page, error) {
	if p.Limit < 0 || p.Limit > storage.MaxPageSize {
		return p, core.Invalid("limit", "limit must be from 1 to %d", storage.MaxPageSize)
	}
	if p.Offset < 0 {
		return p, core.Invalid("offset", "offset must not be negative")
	}
	return p.Normalize(), nil
}
