package realtime

import (
	"encoding/json"
	"fmt"

	"github.com/keyward/keyward/core"
)

// What a socket message or an operation of SPEC 4.9 may hold: each rule answers the
// domain error (or text) that refuses it.

// ValidText checks a text field: required when required, at most MaxText characters.
func ValidText(field, v string, required bool) error {
	switch {
	case required && v == "":
		return core.Invalid(field, "%s is required", field)
	case len(v) > MaxText:
		return core.Invalid(field, "%s must be at most %d characters", field, MaxText)
	}
	return nil
}

// ValidPayload checks a JSON payload: an object of at most MaxPayloadBytes once encoded
// (nil passes unless required).
func ValidPayload(field string, p map[string]any, required bool) error {
	if p == nil {
		if required {
			return core.Invalid(field, "%s must be a JSON object", field)
		}
		return nil
	}
	raw, err := json.Marshal(p)
	if err != nil || len(raw) > MaxPayloadBytes {
		return core.Invalid(field, "%s must be a JSON object of at most %d bytes", field, MaxPayloadBytes)
	}
	return nil
}

// ValidUser checks the user id an operation names.
func ValidUser(userID string) error {
	switch {
	case userID == "":
		return core.Invalid("userId", "userId is required")
	case len(userID) > 100:
		return core.Invalid("userId", "userId is not a user id")
	}
	return nil
}

// ValidMetadata answers why a client's set_metadata is refused ("" when it passes).
func ValidMetadata(meta map[string]any) string {
	if len(meta) > MaxMetadataPairs {
		return fmt.Sprintf("metadata holds at most %d pairs", MaxMetadataPairs)
	}
	for k, v := range meta {
		if k == "" || len(k) > MaxMetaKey {
			return fmt.Sprintf("metadata keys are 1 to %d characters", MaxMetaKey)
		}
		switch x := v.(type) {
		case string:
			if len(x) > MaxMetaValue {
				return fmt.Sprintf("metadata values are at most %d characters", MaxMetaValue)
			}
		case float64, bool, nil:
		default:
			return "metadata values are strings, numbers, booleans or null"
		}
	}
	return ""
}

// AuditedDashboardAction says whether a dashboard message of type typ changes something;
// those go to the audit log once they succeeded (refused ones are not changes).
func AuditedDashboardAction(typ string) bool {
	switch typ {
	case "kick", "ban", "command", "push_json", "chat":
		return true
	}
	return false
}
