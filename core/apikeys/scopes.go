package apikeys

import (
	"slices"
	"strings"
)

// The presets: every read scope, and everything a key may hold.
const (
	PresetRead = "read"
	PresetFull = "full"
)

// Actions of a scope. Write is a shorthand that grants create, update and delete.
const (
	ActionRead   = "read"
	ActionCreate = "create"
	ActionUpdate = "update"
	ActionDelete = "delete"
	ActionWrite  = "write"
)

// Credentials is the scope of the account routes that change credentials (password, 2FA,
// API keys, plan). No scoped key can hold it: only a session or the account key reach
// those routes.
const Credentials = "account:credentials"

// AccountRead is held by every key: reading the account the key belongs to.
const AccountRead = "account:read"

// Resources are the resource parts a scope may name.
var resources = []string{
	"account", "admin", "apps", "users", "licenses", "devices", "tokens", "variables", "rules", "logs",
	"analytics", "files", "integrations", "realtime", "hooks", "audit", "stores",
}

// Resources answers the resource names scopes may use, in documentation order.
func Resources() []string { return slices.Clone(resources) }

// ValidScope reports whether s is a preset or a grantable "resource:action".
func ValidScope(s string) bool {
	if s == PresetRead || s == PresetFull {
		return true
	}
	if s == Credentials {
		return false
	}
	res, act, ok := strings.Cut(s, ":")
	if !ok || !slices.Contains(resources, res) {
		return false
	}
	switch act {
	case ActionRead, ActionCreate, ActionUpdate, ActionDelete, ActionWrite:
		return true
	}
	return false
}

// Grants is the set of scopes a key holds, expanded for a lookup per request.
type Grants struct {
	full, read bool
	set        map[string]struct{}
}

// NewGrants expands scopes (already validated): "resource:write" adds create, update and
// delete of the resource. Unknown scopes grant nothing.
func NewGrants(scopes []string) Grants {
	g := Grants{set: make(map[string]struct{}, len(scopes)+2)}
	// Every key may read the account it belongs to (GET /api/auth/me).
	g.set[AccountRead] = struct{}{}
	for _, s := range scopes {
		switch s {
		case PresetFull:
			g.full = true
			continue
		case PresetRead:
			g.read = true
			continue
		case Credentials:
			continue
		}
		res, act, ok := strings.Cut(s, ":")
		if !ok {
			continue
		}
		if act == ActionWrite {
			g.set[s] = struct{}{}
			for _, a := range []string{ActionCreate, ActionUpdate, ActionDelete} {
				g.set[res+":"+a] = struct{}{}
			}
			continue
		}
		g.set[s] = struct{}{}
	}
	return g
}

// Allows reports whether the grants include the needed scope. Credentials is never
// granted, not even by "full".
func (g Grants) Allows(needed string) bool {
	if needed == Credentials {
		return false
	}
	if g.full {
		return true
	}
	if _, ok := g.set[needed]; ok {
		return true
	}
	return g.read && strings.HasSuffix(needed, ":"+ActionRead)
}
