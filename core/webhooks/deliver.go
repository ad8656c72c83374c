package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// MaxRetryAfter caps a receiver's Retry-After, so a hostile or confused receiver cannot
// park a delivery beyond the retry window; it equals the backoff cap.
const MaxRetryAfter = MaxDelay

// maxAttemptResponse is how much of the response an Attempt keeps for the delivery log.
const maxAttemptResponse = 512

// Attempt is the outcome of one delivery attempt.
type Attempt struct {
	// StatusCode is the receiver's HTTP status, zero when no response arrived.
	StatusCode int
	Latency    time.Duration
	// Err is empty on success and otherwise says why the attempt failed, in words safe to
	// show the owner: it never contains the URL (a Telegram URL holds the bot token).
	Err string
	// Retryable says whether trying again later can succeed.
	Retryable bool
	// RetryAfter is the receiver's requested wait (Retry-After on 429 or 503, capped at
	// MaxRetryAfter); zero when it asked for none. The queue waits at least this long.
	RetryAfter time.Duration
	// Response is the start of the response body (at most 512 bytes), for the delivery log.
	Response string
	// Sent is the request as it went out (headers as written, body bytes); nil when
	// nothing was written to a connection (a refused destination, a failed dial).
	Sent *SentRequest
}

// OK reports whether the attempt succeeded.
func (a Attempt) OK() bool { return a.Err == "" }

var defaultClient = sync.OnceValue(func() *http.Client { return NewClient(Config{}) })

// Deliver sends req with client and classifies the result: 2xx is success; 408, 425, 429,
// 5xx, timeouts and network errors are retryable; other statuses, redirects included, and
// refused (non-public) destinations are permanent. A nil client means a default
// NewClient(Config{}), so the address policy is never skipped by accident.
func Deliver(ctx context.Context, client *http.Client, req *http.Request) Attempt {
	if client == nil {
		client = defaultClient()
	}
	var rec sentRecorder
	body := requestBody(req)
	start := time.Now()
	resp, err := client.Do(req.WithContext(httptrace.WithClientTrace(ctx, rec.trace())))
	if err != nil {
		// A refused destination is permanent: retrying would only knock on the same
		// private address again.
		permanent := errors.Is(err, ErrBlockedAddress) || errors.Is(err, errNotHTTPS)
		return Attempt{Latency: time.Since(start), Err: describeError(err), Retryable: !permanent,
			Sent: rec.sent(req.Method, body)}
	}
	// The transport already caps the body; reading it to the end lets the connection be
	// reused. A failed body read changes nothing: the status is the receiver's answer.
	respBody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	a := classify(resp.StatusCode, resp.Header, respBody, time.Now())
	a.Latency = time.Since(start)
	a.Response = snippet(respBody)
	a.Sent = rec.sent(req.Method, body)
	return a
}

// classify turns a received response into an Attempt. now anchors an HTTP-date Retry-After.
func classify(status int, h http.Header, body []byte, now time.Time) Attempt {
	a := Attempt{StatusCode: status}
	switch {
	case status >= 200 && status < 300:
		return a
	case status >= 300 && status < 400:
		// Redirects are not followed (the target could be anywhere); the owner must
		// register the final URL.
		a.Err = fmt.Sprintf("HTTP %d: redirects are not followed, register the final URL", status)
		return a
	case status == http.StatusRequestTimeout, status == http.StatusTooEarly,
		status == http.StatusTooManyRequests, status >= 500 && status < 600:
		a.Retryable = true
	}
	a.Err = fmt.Sprintf("HTTP %d %s", status, http.StatusText(status))
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		a.RetryAfter = retryAfter(h.Get("Retry-After"), body, now)
	}
	return a
}

// retryAfter reads Retry-After (delay-seconds or HTTP-date, RFC 9110 10.2.3). Discord and
// Telegram also give the wait in their JSON error bodies, used when the header is absent.
func retryAfter(header string, body []byte, now time.Time) time.Duration {
	var d time.Duration
	header = strings.TrimSpace(header)
	if header != "" && strings.Trim(header, "0123456789") == "" {
		secs, err := strconv.ParseUint(header, 10, 64)
		if err != nil || secs > uint64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter // only overflow fails here: a huge number
		}
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(header); err == nil {
		d = t.Sub(now)
	} else {
		var b struct {
			RetryAfter float64 `json:"retry_after"` // Discord, seconds
			Parameters struct {
				RetryAfter float64 `json:"retry_after"` // Telegram, seconds
			} `json:"parameters"`
		}
		if json.Unmarshal(body, &b) == nil {
			secs := max(b.RetryAfter, b.Parameters.RetryAfter)
			if secs > 0 && secs < MaxRetryAfter.Seconds() {
				d = time.Duration(secs * float64(time.Second))
			} else if secs >= MaxRetryAfter.Seconds() {
				d = MaxRetryAfter
			}
		}
	}
	return min(max(d, 0), MaxRetryAfter)
}

// describeError says why a request failed without the URL, which url.Error would print.
func describeError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, ErrBlockedAddress) {
		// The dial-time half of the destination rule (the URL was checked when saved):
		// the name now resolves to a private, loopback or link-local address.
		var oe *net.OpError
		addr := ""
		if errors.As(err, &oe) && oe.Addr != nil {
			addr = " (" + hostOnly(oe.Addr.String()) + ")"
		}
		return "refused at delivery: " + ErrBlockedAddress.Error() + addr +
			": the webhook host resolves to a private, loopback or link-local address now; " +
			"such destinations need KEYWARD_WEBHOOKS_ALLOW_PRIVATE=true"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		return "timeout: " + err.Error()
	}
	return err.Error()
}

func snippet(body []byte) string {
	if len(body) > maxAttemptResponse {
		body = body[:maxAttemptResponse]
	}
	return strings.ToValidUTF8(string(body), string(utf8.RuneError))
}

// hostOnly drops the port of host:port, for a message that names only the address.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}
