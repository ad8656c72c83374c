package httpapi

import (
	"errors"
	"html/template"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/client"
)

func (h *clientHandlers) requestReset(c *gin.Context) {
	call, b, ok := h.begin(c, false)
	if !ok {
		return
	}
	err := h.svc.RequestReset(c.Request.Context(), call, b.str("licenseKey"), b.str("hwid"))
	reply(c, http.StatusOK, gin.H{"message": "a confirmation link was mailed to the account's address; it works once, for an hour"}, err)
}

// resetPage is the page the mailed link opens; html/template escapes every value.
var resetPage = template.Must(template.New("reset").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}
h1{font-size:1.4rem}</style></head>
<body><h1>{{.Title}}</h1><p>{{.Text}}</p></body></html>
`))

func (h *clientHandlers) confirmReset(c *gin.Context) {
	u, err := h.svc.ConfirmReset(c.Request.Context(), c.Param("token"))
	status, title, text := http.StatusOK, "Reset confirmed",
		"The device and IP address bound to "+u.Username+" were reset. You can sign in from your new device now."
	var de *core.Error
	switch {
	case errors.Is(err, client.ErrResetLink):
		status, title, text = http.StatusNotFound, "Link not valid", "This reset link is invalid, was already used or has expired. Ask for a new one from the program."
	case errors.As(err, &de):
		status, title, text = statusOf(de.Code), "Reset refused", de.Message
	case err != nil:
		slog.Error("confirm reset", "err", err, "requestId", requestIDOf(c))
		status, title, text = http.StatusInternalServerError, "Something went wrong", "The reset could not be applied; try the link again later."
	}
	c.Header("Content-Type", "text/html; charset=utf-8")
	c.Header("Cache-Control", "no-store")
	c.Status(status)
	if err := resetPage.Execute(c.Writer, struct{ Title, Text string }{title, text}); err != nil {
		slog.Warn("writing the reset page", "err", err)
	}
}
