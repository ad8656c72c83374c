package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/transport/ws"
)

// EnvelopeListener wraps the API listener so that the answers net/http writes by itself,
// before any handler runs, are error envelopes with a request id like every other answer:
// a malformed request line or header (a control character in a value), a missing Host,
// headers too large, an unsupported transfer encoding, an Expect other than 100-continue.
//
// net/http offers no hook for these: it writes them straight onto the connection in one
// write, in a fixed plain-text form (text/plain, Connection: close, no Date), which no
// handler's answer has. The connection wrapper recognises exactly that form and writes the
// envelope in its place; everything else passes through untouched.
func EnvelopeListener(ln net.Listener, log *slog.Logger) net.Listener {
	return &envelopeListener{Listener: ln, log: log}
}

type envelopeListener struct {
	net.Listener
	log *slog.Logger
}

func (l *envelopeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &envelopeConn{WrappedConn: ws.WrappedConn{Conn: c}, log: l.log}, nil
}

var _ ws.SocketConner = (*envelopeConn)(nil)

type envelopeConn struct {
	ws.WrappedConn // bodies' kernel copy and the half-close
	log            *slog.Logger
}

func (c *envelopeConn) Write(b []byte) (int, error) {
	// Every write of a connection passes here, a socket's frames included: what cannot be
	// one of net/http's answers goes straight through, without calling rewrite (whose
	// large frame would grow the stack of each socket's short-lived writer goroutine).
	if !bytes.HasPrefix(b, []byte(http11)) {
		return c.Conn.Write(b)
	}
	out, ok := c.rewrite(b)
	if !ok {
		return c.Conn.Write(b)
	}
	if _, err := c.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// SocketConn answers the wrapped connection: once upgraded, a socket's frames skip the
// wrapper (they are never net/http's answers), and the transport writes them through to
// the plain socket (ws.SocketConner).
func (c *envelopeConn) SocketConn() net.Conn { return c.Conn }

const (
	// goErrorHeaders are the headers of net/http's own error answers (server.go, readRequest
	// failures), between the status line and the plain-text body.
	goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
	http11         = "HTTP/1.1 "
	// expectationFailed starts net/http's answer to an Expect header other than
	// 100-continue, written without a body and without calling any handler.
	expectationFailed = "HTTP/1.1 417 Expectation Failed\r\n"
)

// rewrite answers the envelope form of one of net/http's own error answers, or false when
// b is anything else.
func (c *envelopeConn) rewrite(b []byte) ([]byte, bool) {
	if !bytes.HasPrefix(b, []byte(http11)) {
		return nil, false
	}
	var status int
	var message string
	if bytes.HasPrefix(b, []byte(expectationFailed)) {
		status, message = http.StatusExpectationFailed, "the Expect header is not supported (only 100-continue)"
	} else {
		i := bytes.Index(b, []byte(goErrorHeaders))
		if i < 0 {
			return nil, false
		}
		line, body := string(b[len(http11):i]), string(b[i+len(goErrorHeaders):])
		if len(line) < 4 || line[3] != ' ' {
			return nil, false
		}
		code, err := strconv.Atoi(line[:3])
		if err != nil || code < 400 || code > 599 {
			return nil, false
		}
		// The body repeats the status line, or names the transfer encoding problem.
		if body != line && body != "Unsupported transfer encoding" {
			return nil, false
		}
		status, message = code, requestErrorMessage(code, line, body)
	}
	errCode := core.CodeValidation
	if status == http.StatusRequestHeaderFieldsTooLarge {
		errCode = core.CodeTooLarge
	}
	payload, _ := json.Marshal(errorBody{Error: errorObject{Code: errCode, Message: message}})
	payload = append(payload, '\n')
	id := uuid.NewString()
	c.log.Info("http request refused before routing", "status", status, "code", errCode, "message", message,
		"ip", c.RemoteAddr().String(), "requestId", id)
	var out bytes.Buffer
	fmt.Fprintf(&out, "HTTP/1.1 %d %s\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: %d\r\n"+
		"Connection: close\r\nDate: %s\r\nX-Request-Id: %s\r\n\r\n",
		status, http.StatusText(status), len(payload), time.Now().UTC().Format(http.TimeFormat), id)
	out.Write(payload)
	return out.Bytes(), true
}

// requestErrorMessage says what was wrong with a request net/http refused.
func requestErrorMessage(code int, line, body string) string {
	if _, detail, found := strings.Cut(line, ": "); found {
		return "malformed request: " + detail
	}
	switch {
	case body == "Unsupported transfer encoding":
		return "unsupported Transfer-Encoding (only chunked is accepted)"
	case code == http.StatusRequestHeaderFieldsTooLarge:
		return "request headers too large"
	default:
		return "malformed request line or header (a header value may hold a control character)"
	}
}
