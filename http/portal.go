package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"html/template"
	"log/slog"
	"mime"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/core/commerce"
	"github.com/keyward/keyward/storage"
	webportal "github.com/keyward/keyward/web/portal"
)

// portalPrefix is the buyer portal's address; the app's id follows.
const portalPrefix = "/portal/"

// portalCookie holds the buyer's session token, scoped to the app's portal path.
const portalCookie = "keyward_portal"

// The portal's limits: codes mailed per key and per address, sign-in tries per key and
// per address (a code is 8 digits: 5 tries in 15 minutes leave a guess no chance), key
// resends per license.
var (
	limitPortalCodeKey = limitRule{Name: "portal-code-key", Limit: 3, Window: 15 * time.Minute}
	limitPortalCodeIP  = limitRule{Name: "portal-code-ip", Limit: 10, Window: 15 * time.Minute}
	limitPortalTryKey  = limitRule{Name: "portal-try-key", Limit: 5, Window: 15 * time.Minute}
	limitPortalTryIP   = limitRule{Name: "portal-try-ip", Limit: 20, Window: 15 * time.Minute}
	limitPortalResend  = limitRule{Name: "portal-resend", Limit: 3, Window: time.Hour}
)

// portalHandlers serve the buyer portal (issue 23): the page, its assets and its JSON
// routes. The routes are public in the table; the session cookie (or the key and the
// mailed code that make it) is the credential, checked here.
type portalHandlers struct {
	portal  *commerce.Portal
	limiter cluster.RateLimiter
	page    *template.Template
	assets  map[string]webportal.Asset
	version string
}

func newPortalHandlers(p *commerce.Portal, limiter cluster.RateLimiter) (*portalHandlers, error) {
	page, err := webportal.Page()
	if err != nil {
		return nil, err
	}
	assets, err := webportal.Assets()
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	for _, name := range []string{"portal.js", "portal.css"} {
		h.Write(assets[name].Body)
	}
	return &portalHandlers{portal: p, limiter: limiter, page: page, assets: assets, version: hex.EncodeToString(h.Sum(nil)[:6])}, nil
}

var errPortalOff = core.E(core.CodeUnavailable, "the buyer portal is not set up on this server")

// ready checks the portal is wired and the app id is an id (so that nothing else reaches
// storage or a cookie path).
func (h *portalHandlers) ready(c *gin.Context) bool {
	if h == nil || h.portal == nil {
		fail(c, errPortalOff)
		return false
	}
	if _, err := uuid.Parse(c.Param("appId")); err != nil {
		fail(c, core.E(core.CodeNotFound, "this app has no buyer portal"))
		return false
	}
	return true
}

func portalHeaders(c *gin.Context) {
	c.Header("Content-Security-Policy", webportal.ContentSecurityPolicy)
	c.Header("X-Frame-Options", "DENY")
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Referrer-Policy", "no-referrer")
}

// page serves the portal's page for an app whose portal is on.
func (h *portalHandlers) pageOf(c *gin.Context) {
	if !h.ready(c) {
		return
	}
	appID := c.Param("appId")
	app, err := h.portal.Settings(c.Request.Context(), appID)
	if err != nil {
		fail(c, err)
		return
	}
	name := app.Name
	var buf bytes.Buffer
	if err := h.page.Execute(&buf, webportal.PageData{AppID: appID, AppName: name, Version: h.version}); err != nil {
		fail(c, err)
		return
	}
	portalHeaders(c)
	c.Header("Cache-Control", "no-store")
	c.Data(http.StatusOK, "text/html; charset=utf-8", buf.Bytes())
}

func (h *portalHandlers) asset(name string) gin.HandlerFunc {
	return func(c *gin.Context) {
		if !h.ready(c) {
			return
		}
		a := h.assets[name]
		portalHeaders(c)
		c.Header("ETag", a.ETag)
		// The page names the assets with their version: a year is safe.
		c.Header("Cache-Control", "public, max-age=31536000, immutable")
		if c.GetHeader("If-None-Match") == a.ETag {
			c.Status(http.StatusNotModified)
			return
		}
		c.Data(http.StatusOK, a.ContentType, a.Body)
	}
}

func portalCall(c *gin.Context) commerce.PortalCall {
	return commerce.PortalCall{IP: c.ClientIP(), Method: c.Request.Method, Route: c.FullPath(), Path: c.Request.URL.Path}
}

type portalKeyBody struct {
	Key  string `json:"key"`
	Code string `json:"code"`
}

// requestCode mails a one-time code for the key (the answer is the same for every key).
func (h *portalHandlers) requestCode(c *gin.Context) {
	var in struct {
		Key string `json:"key"`
	}
	if !h.ready(c) || !bind(c, &in) {
		return
	}
	if in.Key == "" || len(in.Key) > 128 {
		fail(c, core.Invalid("key", "key is required (at most 128 characters)"))
		return
	}
	key := commerce.NormalizeKey(in.Key)
	if err := core.FirstError(rateLimit(c, h.limiter, limitPortalCodeIP, c.ClientIP()),
		rateLimit(c, h.limiter, limitPortalCodeKey, c.Param("appId"), key)); err != nil {
		fail(c, err)
		return
	}
	err := h.portal.RequestCode(c.Request.Context(), c.Param("appId"), key)
	reply(c, http.StatusOK, gin.H{"message": "If the key is known, a code was mailed to the address of its order. It works once, for 10 minutes."}, err)
}

// signIn takes the key and the mailed code and sets the session cookie.
func (h *portalHandlers) signIn(c *gin.Context) {
	var in portalKeyBody
	if !h.ready(c) || !bind(c, &in) {
		return
	}
	if len(in.Key) > 128 || len(in.Code) > 16 {
		fail(c, core.Invalid("code", "the key is at most 128 characters and the code at most 16"))
		return
	}
	key := commerce.NormalizeKey(in.Key)
	if err := core.FirstError(rateLimit(c, h.limiter, limitPortalTryIP, c.ClientIP()),
		rateLimit(c, h.limiter, limitPortalTryKey, c.Param("appId"), key)); err != nil {
		fail(c, err)
		return
	}
	token, err := h.portal.SignIn(c.Request.Context(), portalCall(c), c.Param("appId"), key, in.Code)
	if err != nil {
		fail(c, err)
		return
	}
	h.setCookie(c, token, int(commerce.PortalSessionTTL/time.Second))
	ok(c, http.StatusOK, gin.H{"message": "signed in"})
}

func (h *portalHandlers) setCookie(c *gin.Context, value string, maxAge int) {
	http.SetCookie(c.Writer, &http.Cookie{Name: portalCookie, Value: value, Path: portalPrefix + c.Param("appId"), MaxAge: maxAge,
		HttpOnly: true, Secure: c.Request.TLS != nil || c.GetHeader("X-Forwarded-Proto") == "https", SameSite: http.SameSiteStrictMode})
}

func (h *portalHandlers) token(c *gin.Context) string {
	v, err := c.Cookie(portalCookie)
	if err != nil {
		return ""
	}
	return v
}

// session answers the signed-in buyer, or fails the request.
func (h *portalHandlers) session(c *gin.Context) (commerce.PortalSession, bool) {
	if !h.ready(c) {
		return commerce.PortalSession{}, false
	}
	s, err := h.portal.Session(c.Request.Context(), c.Param("appId"), h.token(c))
	if err != nil {
		fail(c, err)
		return s, false
	}
	return s, true
}

func (h *portalHandlers) signOut(c *gin.Context) {
	if !h.ready(c) {
		return
	}
	err := h.portal.SignOut(c.Request.Context(), h.token(c))
	h.setCookie(c, "", -1)
	reply(c, http.StatusOK, gin.H{"message": "signed out"}, err)
}

type portalSeatView struct {
	ID       string  `json:"id"`
	Username string  `json:"username"`
	Since    *string `json:"since"`
}

type portalFileView struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version string `json:"version"`
	Size    int64  `json:"size"`
}

type portalLicenseView struct {
	App          string                 `json:"app"`
	Key          string                 `json:"key"`
	Status       string                 `json:"status"`
	Level        int                    `json:"level"`
	ExpiresAt    *string                `json:"expiresAt"`
	MaxSeats     int                    `json:"maxSeats"`
	SeatsUsed    int                    `json:"seatsUsed"`
	DeviceLimit  int                    `json:"deviceLimit"`
	HWIDBound    bool                   `json:"hwidBound"`
	HWIDResets   int                    `json:"hwidResets"`
	HWIDResetMax int                    `json:"hwidResetMax"`
	NextResetAt  *string                `json:"nextResetAt"`
	Switches     storage.PortalSwitches `json:"switches"`
	Seats        []portalSeatView       `json:"seats"`
	Files        []portalFileView       `json:"files"`
}

func (h *portalHandlers) license(c *gin.Context) {
	s, signedIn := h.session(c)
	if !signedIn {
		return
	}
	v, err := h.portal.View(c.Request.Context(), s)
	if err != nil {
		fail(c, err)
		return
	}
	l := v.License
	out := portalLicenseView{App: v.AppName, Key: l.Key, Status: v.Status, Level: l.Level, ExpiresAt: stamp(v.ExpiresAt), MaxSeats: l.MaxSeats,
		SeatsUsed: len(v.Seats), DeviceLimit: l.DeviceLimit, HWIDBound: v.HWIDBound, HWIDResets: v.HWIDResets, HWIDResetMax: v.HWIDResetMax,
		NextResetAt: stamp(v.NextResetAt), Switches: v.Switches,
		Seats: mapSlice(v.Seats, func(s client.Seat) portalSeatView {
			return portalSeatView{ID: s.ID, Username: s.Username, Since: stamp(s.Since)}
		}),
		Files: mapSlice(v.Files, func(f storage.File) portalFileView {
			return portalFileView{ID: f.ID, Name: f.Name, Version: f.Version, Size: f.Size}
		})}
	c.Header("Cache-Control", "no-store")
	ok(c, http.StatusOK, out)
}

func (h *portalHandlers) resetHWID(c *gin.Context) {
	s, signedIn := h.session(c)
	if !signedIn {
		return
	}
	n, err := h.portal.ResetHWID(c.Request.Context(), portalCall(c), s)
	reply(c, http.StatusOK, gin.H{"message": "hardware binding reset", "devicesRemoved": n}, err)
}

func (h *portalHandlers) releaseSeat(c *gin.Context) {
	s, signedIn := h.session(c)
	if !signedIn {
		return
	}
	err := h.portal.ReleaseSeat(c.Request.Context(), portalCall(c), s, c.Param("seatId"))
	reply(c, http.StatusOK, gin.H{"message": "seat released"}, err)
}

func (h *portalHandlers) resend(c *gin.Context) {
	s, signedIn := h.session(c)
	if !signedIn {
		return
	}
	if err := rateLimit(c, h.limiter, limitPortalResend, s.AppID, s.LicenseID); err != nil {
		fail(c, err)
		return
	}
	err := h.portal.Resend(c.Request.Context(), portalCall(c), s)
	reply(c, http.StatusOK, gin.H{"message": "the key was mailed again"}, err)
}

func (h *portalHandlers) download(c *gin.Context) {
	s, signedIn := h.session(c)
	if !signedIn {
		return
	}
	f, r, err := h.portal.Download(c.Request.Context(), s, c.Param("fileId"))
	if err != nil {
		fail(c, err)
		return
	}
	defer func() {
		if err := r.Close(); err != nil && !errors.Is(err, http.ErrBodyNotAllowed) {
			slog.Debug("portal download close", "err", err)
		}
	}()
	c.Header("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": f.Name}))
	c.Header("X-File-Hash", f.SHA256)
	c.Header("Cache-Control", "no-store")
	c.DataFromReader(http.StatusOK, f.Size, "application/octet-stream", r, nil)
}
