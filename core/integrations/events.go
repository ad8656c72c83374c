package integrations

import (
	"github.com/keyward/keyward/core/events"
)

// subscribable are the events integrations may subscribe to: SPEC 6.1's, and beyond it
// (docs/LICENSING.md) license.file, user.grace and app.signing_key_reset, and the store
// sales' order events (core/commerce).
var subscribable = append(append(append([]events.Type(nil), events.SpecNames...), events.LicenseFile, events.UserGrace, events.AppSigningKeyReset),
	events.CommerceNames...)

// EventNames are the subscribable events, in the spec's order, as the API lists them.
var EventNames = func() []string {
	out := make([]string, len(subscribable))
	for i, t := range subscribable {
		out[i] = string(t)
	}
	return out
}()

var subscribableSet = events.NewSet(subscribable...)

// Subscribable reports whether name is one of EventNames.
func Subscribable(name events.Type) bool { return subscribableSet.Has(name) }
