package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/storage"
)

// portalSettingsView is the owner's view of the app's buyer portal: whether it is served,
// where, and each buyer action's switch.
type portalSettingsView struct {
	Enabled     bool   `json:"enabled"`
	Path        string `json:"path"`
	HWIDReset   bool   `json:"hwidReset"`
	SeatRelease bool   `json:"seatRelease"`
	Downloads   bool   `json:"downloads"`
	Resend      bool   `json:"resend"`
}

func portalSettingsOf(a storage.App) portalSettingsView {
	p := a.Portal
	return portalSettingsView{Enabled: p.Enabled, Path: portalPrefix + a.ID, HWIDReset: p.HWIDReset, SeatRelease: p.SeatRelease,
		Downloads: p.Downloads, Resend: p.Resend}
}

// portalSettings answers the app's buyer portal settings.
func (h *appHandlers) portalSettings(c *gin.Context) {
	a, err := h.svc.GetApp(c.Request.Context(), ownerOf(c), c.Param("appId"))
	reply(c, http.StatusOK, portalSettingsOf(a), err)
}

// updatePortalSettings changes the given members of the app's buyer portal settings: an
// update of the app (apps.Service.UpdateApp), so it is audited as one and writes the
// app.update event with the change.
func (h *appHandlers) updatePortalSettings(c *gin.Context) {
	var in struct {
		Enabled     *bool `json:"enabled"`
		HWIDReset   *bool `json:"hwidReset"`
		SeatRelease *bool `json:"seatRelease"`
		Downloads   *bool `json:"downloads"`
		Resend      *bool `json:"resend"`
	}
	if !bind(c, &in) {
		return
	}
	a, err := h.svc.UpdateApp(c.Request.Context(), ownerOf(c), c.Param("appId"), apps.UpdateAppInput{Portal: &apps.PortalInput{
		Enabled: in.Enabled, HWIDReset: in.HWIDReset, SeatRelease: in.SeatRelease, Downloads: in.Downloads, Resend: in.Resend}})
	reply(c, http.StatusOK, portalSettingsOf(a), err)
}
