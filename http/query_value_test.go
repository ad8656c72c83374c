package httpapi

import (
	"net/url"
	"testing"
)

// TestQueryValueAsParseQuery: queryValue answers what url.ParseQuery's first value of the
// key is, for well-formed queries and for the malformed parts ParseQuery skips.
func TestQueryValueAsParseQuery(t *testing.T) {
	for _, raw := range []string{
		"", "token=abc", "token=", "token", "x=1&token=abc&token=def", "token=a%20b+c", "to%6Ben=escaped-key",
		"token=%zz&token=second", "token=a;b&token=after-semicolon", "&&token=after-empties", "token==eq",
		"x=1", "token=A-Za-z0-9_-", "%zz=1&token=ok", "token=%E6%97%A5",
	} {
		want := ""
		if q, _ := url.ParseQuery(raw); q != nil {
			want = q.Get("token")
		}
		if got := queryValue(raw, "token"); got != want {
			t.Errorf("queryValue(%q) = %q, want %q (url.ParseQuery)", raw, got, want)
		}
	}
}

func FuzzQueryValueAsParseQuery(f *testing.F) {
	for _, s := range []string{"token=abc", "a=1&token=%41", "token=a;b", "to%6ben=x&token=y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		want := ""
		if q, _ := url.ParseQuery(raw); q != nil {
			want = q.Get("token")
		}
		if got := queryValue(raw, "token"); got != want {
			t.Fatalf("queryValue(%q) = %q, want %q (url.ParseQuery)", raw, got, want)
		}
	})
}
