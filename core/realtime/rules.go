package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/storage"
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

// Explain answers what a socket is told about err: a domain error's code and message;
// UNAVAILABLE when a part the answer needs could not answer (the cluster engine, storage,
// an actor, a deadline), which the program may try again; INTERNAL for anything else,
// which is a bug: never "try again" (the caller logs and counts it).
func Explain(err error) (core.Code, string) {
	var de *core.Error
	switch {
	case errors.As(err, &de):
		return de.Code, de.Message
	case Unavailable(err):
		return core.CodeUnavailable, "the server cannot check this session now; try again"
	default:
		return core.CodeInternal, "internal error"
	}
}

// Unavailable says whether err is a part that did not answer rather than a bug: the
// cluster engine's or storage's ErrUnavailable, a deadline, a cancellation, or an error
// that says so itself (Unavailable() true: the actors' ErrUnavailable).
func Unavailable(err error) bool {
	var says interface{ Unavailable() bool }
	return errors.Is(err, cluster.ErrUnavailable) || errors.Is(err, storage.ErrUnavailable) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.As(err, &says) && says.Unavailable()
}
