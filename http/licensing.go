package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/core/licensing"
	"github.com/keyward/keyward/pkg/licensefile"
	"github.com/keyward/keyward/storage"
)

// licensingSettings are the licensing members of an app update (docs/LICENSING.md).
type licensingSettings struct {
	SignResponses   *bool `json:"signResponses"`
	GraceSeconds    *int  `json:"graceSeconds"`
	LicenseFileDays *int  `json:"licenseFileDays"`
}

// publicKeyView is the app's Ed25519 public key in the two forms verifiers read.
type publicKeyView struct {
	Base64 string `json:"base64"`
	PEM    string `json:"pem"`
}

func publicKeyOf(a storage.App) *publicKeyView {
	pub, err := licensing.PublicOf(a.SigningKey)
	if err != nil {
		slog.Error("unreadable signing key", "app", a.ID, "err", err)
		return nil
	}
	if pub.Base64 == "" {
		return nil
	}
	return &publicKeyView{Base64: pub.Base64, PEM: pub.PEM}
}

// licenseFileDays shows the check-in deadline in effect (0 stored means the default).
func licenseFileDays(a storage.App) int {
	if a.LicenseFileDays > 0 {
		return a.LicenseFileDays
	}
	return licensing.DefaultLicenseFileDays
}

// regenerateSigningKey replaces the app's key pair and answers the app with the new
// public key; responses and license files signed with the old key no longer verify.
func (h *appHandlers) regenerateSigningKey(c *gin.Context) {
	a, err := h.svc.RegenerateSigningKey(c.Request.Context(), ownerOf(c), c.Param("appId"))
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusOK, appOf(a, ""))
}

// licenseFileView is an issued license file: the text to save (name suggested), and
// what it states.
type licenseFileView struct {
	File     string              `json:"file"`
	Filename string              `json:"filename"`
	Payload  licensefile.Payload `json:"payload"`
}

func licenseFileOf(is licensing.Issued) licenseFileView {
	return licenseFileView{File: string(is.Text), Filename: is.Payload.Key + ".lic", Payload: is.Payload}
}

// licenseFile issues an offline license file of one of the app's licenses (owner).
func (h *appHandlers) licenseFile(c *gin.Context) {
	ctx := c.Request.Context()
	a, err := h.svc.SigningApp(ctx, ownerOf(c), c.Param("appId"))
	if err != nil {
		fail(c, err)
		return
	}
	is, err := h.files.Issue(ctx, a, c.Param("licenseId"), licensing.Request{By: "owner", IP: c.ClientIP()})
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusOK, licenseFileOf(is))
}

// licenseFile issues the signed-in client's own license file (no nonce: it grants nothing
// the session does not already have).
func (h *clientHandlers) licenseFile(c *gin.Context) {
	call, _, ok := h.begin(c, false)
	if !ok {
		return
	}
	is, err := h.svc.LicenseFile(c.Request.Context(), call)
	if err != nil {
		fail(c, err)
		return
	}
	ok200(c, licenseFileOf(is))
}

// seatKeeper lists and frees the floating seats of a license (client.Service).
type seatKeeper interface {
	Seats(ctx context.Context, appID, licenseID string) ([]client.Seat, error)
	FreeSeat(ctx context.Context, appID, licenseID, seatID string) error
}

// seatView is a seat in use: who holds it, since when, from where. The session token is
// never shown.
type seatView struct {
	ID       string  `json:"id"`
	UserID   string  `json:"userId"`
	Username string  `json:"username"`
	IP       string  `json:"ip"`
	HWID     string  `json:"hwid"`
	Since    *string `json:"since,omitempty"`
}

func (h *appHandlers) listSeats(c *gin.Context) {
	ctx := c.Request.Context()
	l, err := h.svc.GetLicense(ctx, ownerOf(c), c.Param("appId"), c.Param("licenseId"))
	if err != nil {
		fail(c, err)
		return
	}
	seats, err := h.seats.Seats(ctx, l.AppID, l.ID)
	reply(c, http.StatusOK, gin.H{"maxSeats": l.MaxSeats, "inUse": len(seats), "seats": mapSlice(seats, func(s client.Seat) seatView {
		return seatView{ID: s.ID, UserID: s.UserID, Username: s.Username, IP: s.IP, HWID: s.HWID, Since: stamp(s.Since)}
	})}, err)
}

// freeSeat frees a seat by ending the session holding it.
func (h *appHandlers) freeSeat(c *gin.Context) {
	ctx := c.Request.Context()
	l, err := h.svc.GetLicense(ctx, ownerOf(c), c.Param("appId"), c.Param("licenseId"))
	if err != nil {
		fail(c, err)
		return
	}
	err = h.seats.FreeSeat(ctx, l.AppID, l.ID, c.Param("seatId"))
	reply(c, http.StatusOK, gin.H{"message": "seat freed"}, err)
}
