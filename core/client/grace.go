package client

import (
	"time"

	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/storage"
)

// graceOf is the app's grace period after expiry (docs/LICENSING.md).
func graceOf(snap Snapshot) time.Duration {
	return time.Duration(snap.App.GraceSeconds) * time.Second
}

// expiryJudgedAt is the instant a user's expiry is judged at when signing in: now, moved
// back by the app's grace, so a user expired less than the grace ago still passes.
func expiryJudgedAt(snap Snapshot, now time.Time) time.Time { return now.Add(-graceOf(snap)) }

// signInWarnings are the warnings of a sign-in answer. A user in its grace period gets
// "expired; in grace until <RFC 3339>" (instead of the coming-expiry warning), and the
// log a user.grace entry (added to evs, published with the sign-in's).
func signInWarnings(call Call, u storage.AppUser, now time.Time, evs []events.Event) ([]string, []events.Event) {
	if u.ExpiresAt.IsZero() || now.Before(u.ExpiresAt) {
		return warnings(u, now), evs
	}
	until := u.ExpiresAt.Add(graceOf(call.Snap)).UTC().Format(time.RFC3339)
	evs = append(evs, events.Event{Name: events.UserGrace, AppID: call.Snap.App.ID, Username: u.Username, IP: call.Caller.IP,
		Country: call.Country, Level: events.LevelWarning, Message: "expired user signed in during the grace period",
		Data: map[string]any{"userId": u.ID, "expiredAt": u.ExpiresAt.UTC().Format(time.RFC3339), "graceUntil": until}})
	return []string{"expired; in grace until " + until}, evs
}
