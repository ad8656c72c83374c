package apikeys

import "testing"

func TestGrants(t *testing.T) {
	cases := []struct {
		scopes  []string
		allowed []string
		denied  []string
	}{
		{[]string{"licenses:create"}, []string{"licenses:create", AccountRead}, []string{"licenses:read", "licenses:write", "users:create"}},
		{[]string{"files:write"}, []string{"files:create", "files:update", "files:delete", "files:write"}, []string{"files:read"}},
		{[]string{PresetRead}, []string{"users:read", "admin:read", "logs:read"}, []string{"users:update", "rules:write"}},
		{[]string{PresetFull}, []string{"users:delete", "rules:write", "admin:update"}, []string{Credentials}},
		{[]string{Credentials, "bogus"}, []string{AccountRead}, []string{Credentials, "bogus"}},
	}
	for _, c := range cases {
		g := NewGrants(c.scopes)
		for _, s := range c.allowed {
			if !g.Allows(s) {
				t.Errorf("%v does not allow %s", c.scopes, s)
			}
		}
		for _, s := range c.denied {
			if g.Allows(s) {
				t.Errorf("%v allows %s", c.scopes, s)
			}
		}
	}
}

func TestValidScope(t *testing.T) {
	for _, s := range []string{"read", "full", "licenses:create", "files:write", "users:read", "admin:update"} {
		if !ValidScope(s) {
			t.Errorf("%q refused", s)
		}
	}
	for _, s := range []string{"", "write", "licenses", "licenses:", ":read", "licenses:fly", "planets:read", Credentials} {
		if ValidScope(s) {
			t.Errorf("%q accepted", s)
		}
	}
}
