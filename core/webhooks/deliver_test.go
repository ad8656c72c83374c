package webhooks

import (
	"net/http"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		status    int
		ok        bool
		retryable bool
	}{
		{200, true, false}, {201, true, false}, {202, true, false}, {204, true, false}, {299, true, false},
		{301, false, false}, {302, false, false}, {304, false, false}, {307, false, false}, {308, false, false},
		{400, false, false}, {401, false, false}, {403, false, false}, {404, false, false}, {405, false, false},
		{409, false, false}, {410, false, false}, {413, false, false}, {422, false, false}, {451, false, false},
		{408, false, true}, {425, false, true}, {429, false, true},
		{500, false, true}, {502, false, true}, {503, false, true}, {504, false, true}, {599, false, true},
	}
	for _, c := range cases {
		a := classify(c.status, http.Header{}, nil, now)
		if a.OK() != c.ok || a.Retryable != c.retryable || a.StatusCode != c.status {
			t.Errorf("classify(%d) = %+v, want ok=%v retryable=%v", c.status, a, c.ok, c.retryable)
		}
		if !c.ok && a.Err == "" {
			t.Errorf("classify(%d) has no error text", c.status)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	cases := []struct {
		name   string
		status int
		header string
		body   string
		want   time.Duration
	}{
		{"seconds on 429", 429, "7", "", 7 * time.Second},
		{"seconds on 503", 503, "120", "", 2 * time.Minute},
		{"spaces", 429, " 30 ", "", 30 * time.Second},
		{"zero", 429, "0", "", 0},
		{"HTTP-date", 503, date(90 * time.Second), "", 90 * time.Second},
		{"past HTTP-date", 503, date(-time.Hour), "", 0},
		{"capped seconds", 429, "86400", "", MaxRetryAfter},
		{"overflowing seconds", 429, "99999999999999999999999", "", MaxRetryAfter},
		{"capped date", 503, date(48 * time.Hour), "", MaxRetryAfter},
		{"negative", 429, "-5", "", 0},
		{"garbage", 429, "soon", "", 0},
		{"Discord body", 429, "", `{"message":"You are being rate limited.","retry_after":1.5,"global":false}`, 1500 * time.Millisecond},
		{"Telegram body", 429, "", `{"ok":false,"error_code":429,"parameters":{"retry_after":30}}`, 30 * time.Second},
		{"header wins over body", 429, "3", `{"retry_after":60}`, 3 * time.Second},
		{"huge body value", 429, "", `{"retry_after":1e12}`, MaxRetryAfter},
		{"ignored on 500", 500, "60", "", 0},
		{"ignored on 502", 502, "60", "", 0},
		{"ignored on 408", 408, "60", "", 0},
	}
	for _, c := range cases {
		h := http.Header{}
		if c.header != "" {
			h.Set("Retry-After", c.header)
		}
		a := classify(c.status, h, []byte(c.body), now)
		if a.RetryAfter != c.want || !a.Retryable {
			t.Errorf("%s: RetryAfter %v retryable %v, want %v", c.name, a.RetryAfter, a.Retryable, c.want)
		}
	}
}
