package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"hash"
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

// signingWriter holds a client answer back until the handler is done, so that its exact
// bytes can be signed into headers sent before them. A download (a 2xx with X-File-Hash)
// is not held: its signature covers the hash, known before the first byte, and the bytes
// stream through.
type signingWriter struct {
	gin.ResponseWriter
	sign    func(body []byte) (signed bool)
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
			w.sign(nil) // over the hash
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

// hashingBody hashes the request body as the handler reads it, so the signature can be
// bound to the body without keeping a copy of it.
type hashingBody struct {
	io.ReadCloser
	sum hash.Hash
}

func (b *hashingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.sum.Write(p[:n])
	return n, err
}

// digest reads what the handler left of the body (within the body limit the edge
// applies) and answers the SHA-256 of all of it. A body the server could not read whole
// (over the limit) is hashed as far as it was read, so its answer does not verify.
func (b *hashingBody) digest() []byte {
	_, _ = io.Copy(io.Discard, b)
	return b.sum.Sum(nil)
}

// signClient signs every client answer of an app with signResponses on (docs/LICENSING.md,
// pkg/signedresponse): X-Signature-Version 2, X-Signature-Timestamp (unix seconds) and
// X-Signature-Ed25519, the hex Ed25519 signature of signedresponse.Message: the timestamp,
// the status, the request's method, path, body digest, X-Nonce and X-Signature-Challenge,
// then the exact body bytes, or X-File-Hash for a download. So an answer verifies only for
// the request it answers. The body is never changed: clients that ignore signatures get
// the same bytes as from an app without signing.
// Error envelopes are signed as well, once the app is known: from the call (begin, init),
// else from the session token of the body. An answer that names no app (a wrong secret,
// an unknown token) cannot be signed, and a client that expects signatures treats an
// unsigned answer as forged.
func (h *clientHandlers) signClient(c *gin.Context) {
	orig := c.Writer
	body := &hashingBody{ReadCloser: c.Request.Body, sum: sha256.New()}
	c.Request.Body = body
	w := &signingWriter{ResponseWriter: orig, status: http.StatusOK}
	w.sign = func(payload []byte) bool {
		snap, ok := h.signingSnapshot(c)
		if !ok || !snap.SignsResponses() {
			return false
		}
		r := c.Request
		req := signedresponse.Request{Method: r.Method, Path: r.URL.EscapedPath(), BodySHA256: body.digest(),
			Nonce: r.Header.Get(signedresponse.HeaderNonce), Challenge: r.Header.Get(signedresponse.HeaderChallenge)}
		answer := signedresponse.Answer{Status: w.status, Body: payload}
		if hash := orig.Header().Get(signedresponse.HeaderFileHash); hash != "" && w.status/100 == 2 {
			answer = signedresponse.Answer{Status: w.status, FileHash: hash}
		}
		ts := strconv.FormatInt(h.now().Unix(), 10)
		hdr := orig.Header()
		hdr.Set(signedresponse.HeaderVersion, signedresponse.Version)
		hdr.Set(signedresponse.HeaderTimestamp, ts)
		hdr.Set(signedresponse.HeaderSignature, signedresponse.Sign(snap.Signer, ts, req, answer))
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
	w.sign(w.buf.Bytes()) // an empty download (no byte went through) is signed over its hash
	orig.WriteHeader(w.status)
	_, _ = orig.Write(w.buf.Bytes())
}

// signingSnapshot finds the app of the call: set by the handler, else from the body's
// session token.
func (h *clientHandlers) signingSnapshot(c *gin.Context) (client.Snapshot, bool) {
	if v, ok := c.Get(ctxSigningSnap); ok {
		return v.(client.Snapshot), true
	}
	ctx := c.Request.Context()
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
