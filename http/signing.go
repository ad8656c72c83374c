package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/pkg/signedresponse"
)

// ctxSigningSnap holds the client.Snapshot of the app a client call belongs to, set by
// the handlers once they know it (begin, init), for the signing middleware.
const ctxSigningSnap = "keyward.signingSnap"

// ctxSigningApp holds the id of the app a client call belongs to when the handler knows
// the app but not its snapshot (init).
const ctxSigningApp = "keyward.signingApp"

// signingWriter holds a client answer back until the handler is done, so that its exact
// bytes can be signed into headers sent before them. A download (a 2xx with X-File-Hash)
// is not held: its signature covers the hash, known before the first byte, and the bytes
// stream through.
type signingWriter struct {
	gin.ResponseWriter
	sign    func(payload []byte) (signed bool)
	status  int
	buf     bytes.Buffer
	passing bool // streaming a download straight through
}

func (w *signingWriter) WriteHeader(code int) {
	if w.passing {
		return
	}
	if code > 0 {
		w.status = code
	}
}

func (w *signingWriter) WriteHeaderNow() {}

func (w *signingWriter) Write(p []byte) (int, error) {
	if !w.passing && w.buf.Len() == 0 {
		if hash := w.Header().Get(signedresponse.HeaderFileHash); hash != "" && w.status/100 == 2 {
			w.sign([]byte(hash))
			w.passing = true
			w.ResponseWriter.WriteHeader(w.status)
		}
	}
	if w.passing {
		return w.ResponseWriter.Write(p)
	}
	return w.buf.Write(p)
}

func (w *signingWriter) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

func (w *signingWriter) Status() int { return w.status }

func (w *signingWriter) Size() int {
	if w.passing {
		return w.ResponseWriter.Size()
	}
	return w.buf.Len()
}

func (w *signingWriter) Written() bool { return w.passing || w.buf.Len() > 0 }

// Flush is a no-op while the answer is held (it is sent whole at the end).
func (w *signingWriter) Flush() {
	if w.passing {
		w.ResponseWriter.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *signingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// signClient signs every client answer of an app with signResponses on (docs/LICENSING.md):
// X-Signature-Timestamp (unix seconds) and X-Signature-Ed25519, the hex Ed25519 signature
// of the timestamp followed by the exact body bytes, or by X-File-Hash for a download.
// Error envelopes are signed as well, once the app is known: from the call (begin, init),
// else from the session token of the body. An answer that names no app (a wrong secret,
// an unknown token) cannot be signed, and a client that expects signatures treats an
// unsigned answer as forged.
func (h *clientHandlers) signClient(c *gin.Context) {
	orig := c.Writer
	w := &signingWriter{ResponseWriter: orig, status: http.StatusOK}
	w.sign = func(payload []byte) bool {
		snap, ok := h.signingSnapshot(c)
		if !ok || !snap.SignsResponses() {
			return false
		}
		ts := strconv.FormatInt(h.now().Unix(), 10)
		hdr := orig.Header()
		hdr.Set(signedresponse.HeaderTimestamp, ts)
		hdr.Set(signedresponse.HeaderSignature, signedresponse.Sign(snap.Signer, ts, payload))
		return true
	}
	c.Writer = w
	// A panic leaves the held answer unsent: the recovery middleware writes its envelope
	// on the connection's own writer.
	defer func() { c.Writer = orig }()
	c.Next()
	if w.passing {
		return
	}
	body := w.buf.Bytes()
	if hash := orig.Header().Get(signedresponse.HeaderFileHash); hash != "" && w.status/100 == 2 {
		w.sign([]byte(hash)) // an empty download: no byte went through
	} else {
		w.sign(body)
	}
	orig.WriteHeader(w.status)
	_, _ = orig.Write(body)
}

// signingSnapshot finds the app of the call: set by the handler, else from the body's
// session token.
func (h *clientHandlers) signingSnapshot(c *gin.Context) (client.Snapshot, bool) {
	if v, ok := c.Get(ctxSigningSnap); ok {
		return v.(client.Snapshot), true
	}
	ctx := c.Request.Context()
	if id := c.GetString(ctxSigningApp); id != "" {
		return h.svc.AppSnapshot(ctx, id)
	}
	token := ""
	if b, ok := c.Get(ctxClientBody); ok {
		token = b.(clientBody).str("sessionToken")
	} else if c.Request.Body != nil {
		// The handler did not read the body (a refusal before it): read it here, within
		// the body limit the edge already applies.
		raw, err := io.ReadAll(c.Request.Body)
		if err == nil {
			var b struct {
				SessionToken string `json:"sessionToken"`
			}
			if json.Unmarshal(raw, &b) == nil {
				token = b.SessionToken
			}
		}
	}
	return h.svc.SessionSnapshot(ctx, token)
}

func (h *clientHandlers) now() time.Time { return h.svc.Now() }
