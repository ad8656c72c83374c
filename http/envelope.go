package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/core/apikeys"
	"github.com/keyward/keyward/storage"
)

// okBody is the success envelope; the struct keeps "success" first on the wire, which the
// naive C++ SDK parser needs.
type okBody struct {
	Success bool `json:"success"`
	Data    any  `json:"data"`
}

type errorObject struct {
	Code    core.Code `json:"code"`
	Message string    `json:"message"`
	Field   string    `json:"field,omitempty"`
}

type errorBody struct {
	Success bool        `json:"success"`
	Error   errorObject `json:"error"`
}

// specialBody is the login answer of SPEC 7.2 (2FA needed, email unverified); it also
// carries the error object so that generic clients can read a code.
type specialBody struct {
	Success       bool        `json:"success"`
	Requires2FA   bool        `json:"requires2FA,omitempty"`
	RequireVerify bool        `json:"requireVerify,omitempty"`
	Message       string      `json:"message"`
	Error         errorObject `json:"error"`
}

// writeJSON writes v without HTML escaping (clients show "&" and "<" as they are).
func writeJSON(c *gin.Context, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		slog.Error("encoding response", "err", err, "requestId", requestIDOf(c))
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"success":false,"error":{"code":"INTERNAL","message":"internal error"}}`)
	}
	c.Data(status, "application/json; charset=utf-8", buf.Bytes())
}

// ok answers a success envelope. A nil data becomes {} so that data is never null.
func ok(c *gin.Context, status int, data any) {
	if data == nil {
		data = gin.H{}
	}
	writeJSON(c, status, okBody{Success: true, Data: data})
}

// message answers {"success":true,"data":{"message":msg}}.
func message(c *gin.Context, msg string) { ok(c, http.StatusOK, gin.H{"message": msg}) }

// statusOf maps every error code to its HTTP status: the one place where codes meet statuses.
func statusOf(code core.Code) int {
	switch code {
	case core.CodeValidation, accounts.CodePasswordBreached:
		return http.StatusBadRequest
	case core.CodeUnauthorized, core.CodeNonceRequired, core.CodeNotLoggedIn:
		return http.StatusUnauthorized
	case core.CodeForbidden, core.CodePlanFeature, core.CodePlanLimit, core.CodeRequireVerify, core.CodeBanned, core.CodeExpired,
		core.CodeHWIDLocked, core.CodeIPLocked, core.CodePCNameLocked, core.CodeDeviceLimit, core.CodeVersionMismatch,
		core.CodeAppDisabled, core.CodeAppPaused, core.CodeRuleBlocked, core.CodeLicenseInvalid, core.CodeLicenseUsed,
		core.CodeUserDisabled, core.CodeSeatsFull, apikeys.CodeScopeDenied, accounts.CodeReauthRequired:
		return http.StatusForbidden
	case core.CodeNotFound:
		return http.StatusNotFound
	case core.CodeNoMethod:
		return http.StatusMethodNotAllowed
	case core.CodeConflict:
		return http.StatusConflict
	case core.CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case codeRequestTimeout:
		return http.StatusRequestTimeout
	case core.CodeRateLimited, core.CodeQuotaExceeded:
		return http.StatusTooManyRequests
	case core.CodeUnavailable:
		return http.StatusServiceUnavailable
	case core.CodeRequires2FA:
		// Not a failure of the request: the dashboard shows the code field and retries.
		return http.StatusOK
	default:
		return http.StatusInternalServerError
	}
}

// toDomain turns any error into a domain error: engine sentinels map to their codes and
// everything unknown becomes INTERNAL (its cause is logged, never sent).
func toDomain(err error) *core.Error {
	var de *core.Error
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &de):
		return de
	case errors.Is(err, storage.ErrNotFound):
		return &core.Error{Code: core.CodeNotFound, Message: "not found", Cause: err}
	case errors.Is(err, storage.ErrConflict):
		return &core.Error{Code: core.CodeConflict, Message: "already exists", Cause: err}
	case errors.Is(err, storage.ErrUnavailable), errors.Is(err, cluster.ErrUnavailable):
		return &core.Error{Code: core.CodeUnavailable, Message: "service temporarily unavailable, retry shortly", Cause: err}
	case errors.As(err, &tooBig):
		return &core.Error{Code: core.CodeTooLarge, Message: fmt.Sprintf("request body exceeds %d bytes", tooBig.Limit), Cause: err}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return &core.Error{Code: core.CodeUnavailable, Message: "request timed out, retry shortly", Cause: err}
	default:
		return &core.Error{Code: core.CodeInternal, Message: "internal error", Cause: err}
	}
}

// fail answers err with the error envelope and the status of its code, and aborts the chain.
func fail(c *gin.Context, err error) {
	de := toDomain(err)
	status := statusOf(de.Code)
	if status >= 500 {
		slog.Error("request failed", "code", de.Code, "err", err, "method", c.Request.Method,
			"path", c.Request.URL.Path, "requestId", requestIDOf(c))
	}
	if de.Code == core.CodeRateLimited {
		secs := int64((de.RetryAfter + 999_999_999) / 1_000_000_000)
		if secs < 1 {
			secs = 1
		}
		c.Header("Retry-After", strconv.FormatInt(secs, 10))
	}
	obj := errorObject{Code: de.Code, Message: de.Message, Field: de.Field}
	switch de.Code {
	case core.CodeRequires2FA:
		writeJSON(c, status, specialBody{Requires2FA: true, Message: de.Message, Error: obj})
	case core.CodeRequireVerify:
		writeJSON(c, status, specialBody{RequireVerify: true, Message: de.Message, Error: obj})
	default:
		writeJSON(c, status, errorBody{Error: obj})
	}
	c.Abort()
}
