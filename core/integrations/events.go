package integrations

import "slices"

// EventNames are the subscribable events of SPEC 6.1, in the spec's order.
var EventNames = []string{
	"user.login", "user.login_failed", "user.register", "user.create", "user.update", "user.delete",
	"user.ban", "user.extend", "user.hwid_reset", "user.session_kill",
	"license.activate", "license.create", "license.update", "license.delete",
	"session.init", "session.end",
	"token.validate", "token.create", "token.delete",
	"file.upload", "file.download", "file.update", "file.delete",
	"variable.create", "variable.update", "variable.delete",
	"rule.create", "rule.update", "rule.delete", "rule.triggered",
	"integration.create", "integration.update", "integration.delete",
	"app.update", "app.secret_reset",
	// Beyond SPEC 6.1 (docs/LICENSING.md).
	"license.file", "user.grace", "app.signing_key_reset",
}

// Subscribable reports whether name is one of EventNames.
func Subscribable(name string) bool { return slices.Contains(EventNames, name) }
