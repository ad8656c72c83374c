package webhooks

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"unicode/utf8"
)

// SentRequest is a request as it went out on the wire: the method, every header field in
// the order the transport wrote it (Host, Content-Length, Accept-Encoding and the
// signature headers included, as net/http/httptrace reports them) and the body bytes. It is
// what the dashboard shows as the payload of a delivery, so the owner compares the exact
// bytes their receiver verified. The URL's path is never kept: it holds the credentials of
// Discord, Slack and Telegram webhooks (HTTP/2's ":path" field is masked for that reason).
type SentRequest struct {
	Method  string   `json:"method"`
	Headers []Header `json:"headers"`
	Body    []byte   `json:"body"`
}

// Header is one header field as written.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// maskedPath stands for a request path in a SentRequest.
const maskedPath = "/***"

// Encode is the stored form of s (JSON; the body base64, so every byte survives).
func (s *SentRequest) Encode() []byte {
	if s == nil {
		return nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil // cannot happen: strings and bytes only
	}
	return b
}

// DecodeSent reads Encode's form; nil for an empty or unreadable record.
func DecodeSent(b []byte) *SentRequest {
	if len(b) == 0 {
		return nil
	}
	var s SentRequest
	if json.Unmarshal(b, &s) != nil {
		return nil
	}
	return &s
}

// BodyText answers the body as text when it is valid UTF-8 (every payload Build makes is)
// and otherwise ok=false, for a caller that shows it base64.
func (s *SentRequest) BodyText() (text string, ok bool) {
	if !utf8.Valid(s.Body) {
		return "", false
	}
	return string(s.Body), true
}

// sentRecorder collects the header fields the transport writes. The HTTP/1 transport
// writes from its own goroutine, which may still run when a quick answer arrives, hence
// the lock.
type sentRecorder struct {
	mu      sync.Mutex
	headers []Header
	wrote   bool
}

func (r *sentRecorder) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		WroteHeaderField: func(key string, values []string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, v := range values {
				switch {
				case key == ":path":
					v = maskedPath
				case isSecretHeader(key):
					v = "***"
				}
				r.headers = append(r.headers, Header{Name: key, Value: v})
			}
		},
		WroteHeaders: func() {
			r.mu.Lock()
			r.wrote = true
			r.mu.Unlock()
		},
	}
}

// sent answers what went out, or nil when no header reached a connection (a refused or
// failed dial sends nothing).
func (r *sentRecorder) sent(method string, body []byte) *SentRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.wrote && len(r.headers) == 0 {
		return nil
	}
	return &SentRequest{Method: method, Headers: append([]Header(nil), r.headers...), Body: body}
}

// requestBody reads a copy of req's body without consuming it (Build's requests can be
// read again through GetBody).
func requestBody(req *http.Request) []byte {
	if req.GetBody == nil {
		return nil
	}
	rc, err := req.GetBody()
	if err != nil || rc == nil {
		return nil
	}
	defer rc.Close()
	b, _ := io.ReadAll(io.LimitReader(rc, 1<<20))
	return b
}

// isSecretHeader reports header names never kept (none of Build's requests carry one;
// this keeps a future Authorization header out of the delivery log).
func isSecretHeader(name string) bool {
	switch strings.ToLower(name) {
	case "authorization", "proxy-authorization", "cookie":
		return true
	}
	return false
}
