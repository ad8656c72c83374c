package core

import (
	"strings"
	"testing"
)

func TestValidators(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string // "" means valid; else a substring of the message
	}{
		{"username ok", ValidateUsername("u", "a.b-c_9"), ""},
		{"username short", ValidateUsername("u", "ab"), "3 to 32"},
		{"username long", ValidateUsername("u", strings.Repeat("a", 33)), "3 to 32"},
		{"username space", ValidateUsername("u", "a b c"), "3 to 32"},
		{"username empty", ValidateUsername("u", ""), "required"},
		{"email ok", ValidateEmail("e", "a@b.co"), ""},
		{"email no domain dot", ValidateEmail("e", "a@b"), "valid email"},
		{"email display name", ValidateEmail("e", "A <a@b.co>"), "valid email"},
		{"email long", ValidateEmail("e", strings.Repeat("a", 250)+"@b.co"), "at most"},
		{"password ok", ValidatePassword("p", "Abcdefg1"), ""},
		{"password short", ValidatePassword("p", "Abcdef1"), "at least 8"},
		{"password upper", ValidatePassword("p", "abcdefg1"), "uppercase"},
		{"password lower", ValidatePassword("p", "ABCDEFG1"), "lowercase"},
		{"password digit", ValidatePassword("p", "Abcdefgh"), "digit"},
		{"password long", ValidatePassword("p", "Aa1"+strings.Repeat("x", 200)), "at most"},
		{"code ok", ValidateCode("c", "012345"), ""},
		{"code short", ValidateCode("c", "12345"), "6 digits"},
		{"code letters", ValidateCode("c", "12345a"), "6 digits"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.want == "" {
				if c.err != nil {
					t.Fatalf("unexpected %v", c.err)
				}
				return
			}
			if c.err == nil || !strings.Contains(c.err.Error(), c.want) || CodeOf(c.err) != CodeValidation {
				t.Fatalf("got %v, want %q", c.err, c.want)
			}
		})
	}
}
