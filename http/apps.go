package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/licensing"
	"github.com/keyward/keyward/storage"
)

// appHandlers serves SPEC 4.2 to 4.5.
type appHandlers struct {
	svc      *apps.Service
	sessions clientSessions
	files    *licensing.Files
	seats    seatKeeper
}

// clientSessions are the client sessions as the dashboard sees them (client.Service).
type clientSessions interface {
	ActiveSessions(ctx context.Context, appID string) (int, error)
	KillUserSessions(ctx context.Context, appID, userID, username string) (int, error)
}

// activeSessions counts the app's live client sessions; the figure is informative, so an
// engine error shows as 0 (logged) rather than failing the whole answer.
func activeSessions(c *gin.Context, s clientSessions, appID string) int {
	n, err := s.ActiveSessions(c.Request.Context(), appID)
	if err != nil {
		slog.Warn("counting client sessions", "app", appID, "err", err)
	}
	return n
}

func ownerOf(c *gin.Context) apps.Owner {
	p := principal(c)
	return apps.Owner{AccountID: p.Account.ID, Plan: p.Account.Plan}
}

// bind decodes the body into dst, answering the error itself; false means stop.
func bind(c *gin.Context, dst any) bool {
	if err := bindJSON(c, dst); err != nil {
		fail(c, err)
		return false
	}
	return true
}

// reply answers data, or the error.
func reply(c *gin.Context, status int, data any, err error) {
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, status, data)
}

func (h *appHandlers) list(c *gin.Context) {
	list, err := h.svc.ListApps(c.Request.Context(), ownerOf(c))
	reply(c, http.StatusOK, mapSlice(list, func(a apps.AppWithCounts) appView {
		v := appOf(a.App, "")
		n := a.Counts
		v.Counts = &appCountsView{Users: n.Users, Licenses: n.Licenses, Sessions: activeSessions(c, h.sessions, a.App.ID), Variables: n.Variables,
			Files: n.Files, Tokens: n.Tokens, Rules: n.Rules}
		return v
	}), err)
}

func (h *appHandlers) create(c *gin.Context) {
	var in struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Version     string `json:"version"`
	}
	if !bind(c, &in) {
		return
	}
	a, secret, err := h.svc.CreateApp(c.Request.Context(), ownerOf(c), apps.CreateAppInput{Name: in.Name, Description: in.Description, Version: in.Version})
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusCreated, appOf(a, secret))
}

func (h *appHandlers) get(c *gin.Context) {
	a, err := h.svc.GetApp(c.Request.Context(), ownerOf(c), c.Param("appId"))
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusOK, appOf(a, ""))
}

func (h *appHandlers) update(c *gin.Context) {
	var in struct {
		Name           *string `json:"name"`
		Description    *string `json:"description"`
		Version        *string `json:"version"`
		Enabled        *bool   `json:"enabled"`
		Paused         *bool   `json:"paused"`
		AntiDebug      *bool   `json:"antiDebug"`
		AntiVM         *bool   `json:"antiVM"`
		LockHwid       *bool   `json:"lockHwid"`
		LockIP         *bool   `json:"lockIp"`
		LockPcName     *bool   `json:"lockPcName"`
		SessionTimeout *int    `json:"sessionTimeout"`
		FileEncryption *bool   `json:"fileEncryption"`
		licensingSettings
	}
	if !bind(c, &in) {
		return
	}
	a, err := h.svc.UpdateApp(c.Request.Context(), ownerOf(c), c.Param("appId"), apps.UpdateAppInput{Name: in.Name,
		Description: in.Description, Version: in.Version, Enabled: in.Enabled, Paused: in.Paused, AntiDebug: in.AntiDebug,
		AntiVM: in.AntiVM, LockHwid: in.LockHwid, LockIP: in.LockIP, LockPc: in.LockPcName,
		SessionTimeout: in.SessionTimeout, FileEncryption: in.FileEncryption,
		SignResponses: in.SignResponses, GraceSeconds: in.GraceSeconds, LicenseFileDays: in.LicenseFileDays})
	if err != nil {
		fail(c, err)
		return
	}
	ok(c, http.StatusOK, appOf(a, ""))
}

func (h *appHandlers) delete(c *gin.Context) {
	var in struct {
		Confirm bool `json:"confirm"`
	}
	if !bind(c, &in) {
		return
	}
	err := h.svc.DeleteApp(c.Request.Context(), ownerOf(c), c.Param("appId"), in.Confirm)
	reply(c, http.StatusOK, gin.H{"message": "application deleted"}, err)
}

func (h *appHandlers) regenerateSecret(c *gin.Context) {
	secret, err := h.svc.RegenerateSecret(c.Request.Context(), ownerOf(c), c.Param("appId"))
	reply(c, http.StatusOK, gin.H{"secret": secret}, err)
}

func (h *appHandlers) stats(c *gin.Context) {
	s, err := h.svc.AppStats(c.Request.Context(), ownerOf(c), c.Param("appId"))
	if err == nil {
		s.ActiveSessions = activeSessions(c, h.sessions, c.Param("appId"))
	}
	reply(c, http.StatusOK, gin.H{
		"users":    gin.H{"total": s.Users, "active": s.ActiveUsers, "banned": s.BannedUsers},
		"licenses": gin.H{"total": s.Licenses, "used": s.UsedLicenses, "unused": s.Licenses - s.UsedLicenses},
		"sessions": gin.H{"active": s.ActiveSessions},
		"logins":   gin.H{"today": s.LoginsSinceDay, "thisWeek": s.LoginsSinceWeek},
	}, err)
}

// listReply answers a page of items under name with the total and the window.
func listReply[T any](c *gin.Context, name string, items []T, total int, p storage.Page, err error) {
	reply(c, http.StatusOK, gin.H{name: items, "total": total, "limit": p.Limit, "offset": p.Offset}, err)
}

func (h *appHandlers) listUsers(c *gin.Context) {
	p, err := pageOf(c)
	if err != nil {
		fail(c, err)
		return
	}
	list, total, p, err := h.svc.ListUsers(c.Request.Context(), ownerOf(c), c.Param("appId"), apps.UserQueryInput{
		Search: c.Query("search"), SortBy: c.Query("sortBy"), SortOrder: c.Query("sortOrder"), Banned: c.Query("banned"),
		Expired: c.Query("expired"), InGrace: c.Query("inGrace"), Page: p})
	listReply(c, "users", mapSlice(list, userOf), total, p, err)
}

func (h *appHandlers) createUser(c *gin.Context) {
	var in struct {
		Username    string          `json:"username"`
		Password    string          `json:"password"`
		Email       string          `json:"email"`
		Level       *int            `json:"level"`
		ExpiresAt   *string         `json:"expiresAt"`
		DeviceLimit *int            `json:"deviceLimit"`
		Metadata    json.RawMessage `json:"metadata"`
	}
	if !bind(c, &in) {
		return
	}
	u, err := h.svc.CreateUser(c.Request.Context(), ownerOf(c), c.Param("appId"), apps.CreateUserInput{Username: in.Username,
		Password: in.Password, Email: in.Email, Level: in.Level, ExpiresAt: in.ExpiresAt, DeviceLimit: in.DeviceLimit, Metadata: in.Metadata})
	reply(c, http.StatusCreated, userOf(u), err)
}

func (h *appHandlers) getUser(c *gin.Context) {
	d, err := h.svc.GetUser(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("userId"))
	if err != nil {
		fail(c, err)
		return
	}
	v := userOf(d.User)
	devices, subscriptions := mapSlice(d.Devices, deviceOf), mapSlice(d.Subscriptions, licenseOf)
	v.Devices, v.Subscriptions = &devices, &subscriptions
	ok(c, http.StatusOK, v)
}

func (h *appHandlers) updateUser(c *gin.Context) {
	var in struct {
		Password          *string         `json:"password"`
		Email             *string         `json:"email"`
		Level             *int            `json:"level"`
		ExpiresAt         *string         `json:"expiresAt"`
		DeviceLimit       *int            `json:"deviceLimit"`
		Enabled           *bool           `json:"enabled"`
		Banned            *bool           `json:"banned"`
		BanReason         *string         `json:"banReason"`
		HWID              *string         `json:"hwid"`
		DisplayName       *string         `json:"displayName"`
		PCName            *string         `json:"pcName"`
		LockedIP          *string         `json:"lockedIp"`
		HwidResetMax      *int            `json:"hwidResetMax"`
		HwidResetCooldown *int            `json:"hwidResetCooldown"`
		IPResetMax        *int            `json:"ipResetMax"`
		IPResetCooldown   *int            `json:"ipResetCooldown"`
		Metadata          json.RawMessage `json:"metadata"`
	}
	if !bind(c, &in) {
		return
	}
	u, err := h.svc.UpdateUser(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("userId"), apps.UpdateUserInput{
		Password: in.Password, Email: in.Email, ExpiresAt: in.ExpiresAt, BanReason: in.BanReason, HWID: in.HWID,
		DisplayName: in.DisplayName, PCName: in.PCName, LockedIP: in.LockedIP, Level: in.Level, DeviceLimit: in.DeviceLimit,
		HwidResetMax: in.HwidResetMax, HwidResetCooldown: in.HwidResetCooldown, IPResetMax: in.IPResetMax,
		IPResetCooldown: in.IPResetCooldown, Enabled: in.Enabled, Banned: in.Banned, Metadata: in.Metadata})
	reply(c, http.StatusOK, userOf(u), err)
}

func (h *appHandlers) deleteUser(c *gin.Context) {
	err := h.svc.DeleteUser(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("userId"))
	reply(c, http.StatusOK, gin.H{"message": "user deleted"}, err)
}

func (h *appHandlers) resetHWID(c *gin.Context) {
	u, n, err := h.svc.ResetHWID(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("userId"))
	reply(c, http.StatusOK, gin.H{"message": "hardware id reset", "devicesRemoved": n, "hwidResets": u.HwidResets}, err)
}

func (h *appHandlers) extendUser(c *gin.Context) {
	var in struct {
		Duration *int64 `json:"duration"`
	}
	if !bind(c, &in) {
		return
	}
	u, err := h.svc.ExtendUser(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("userId"), in.Duration)
	reply(c, http.StatusOK, userOf(u), err)
}

func (h *appHandlers) userIP(c *gin.Context) {
	u, err := h.svc.UserIPInfo(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("userId"))
	reply(c, http.StatusOK, gin.H{"lastLoginIp": u.LastLoginIP, "lockedIp": u.LockedIP}, err)
}

func (h *appHandlers) listLicenses(c *gin.Context) {
	p, err := pageOf(c)
	if err != nil {
		fail(c, err)
		return
	}
	list, total, p, err := h.svc.ListLicenses(c.Request.Context(), ownerOf(c), c.Param("appId"), apps.LicenseQueryInput{
		Search: c.Query("search"), SortBy: c.Query("sortBy"), SortOrder: c.Query("sortOrder"), Used: c.Query("used"),
		Banned: c.Query("banned"), Expired: c.Query("expired"), Page: p})
	listReply(c, "licenses", mapSlice(list, licenseOf), total, p, err)
}

func (h *appHandlers) createLicenses(c *gin.Context) {
	var in struct {
		Count     *int    `json:"count"`
		Level     *int    `json:"level"`
		MaxUses   *int    `json:"maxUses"`
		Duration  *int64  `json:"duration"`
		ExpiresAt *string `json:"expiresAt"`
		Prefix    string  `json:"prefix"`
		Note      string  `json:"note"`
		MaxSeats  *int    `json:"maxSeats"`
	}
	if !bind(c, &in) {
		return
	}
	list, err := h.svc.CreateLicenses(c.Request.Context(), ownerOf(c), c.Param("appId"), apps.CreateLicensesInput{Count: in.Count,
		Level: in.Level, MaxUses: in.MaxUses, Duration: in.Duration, ExpiresAt: in.ExpiresAt, Prefix: in.Prefix, Note: in.Note,
		MaxSeats: in.MaxSeats})
	reply(c, http.StatusCreated, gin.H{"licenses": mapSlice(list, licenseOf), "count": len(list)}, err)
}

func (h *appHandlers) getLicense(c *gin.Context) {
	l, err := h.svc.GetLicense(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("licenseId"))
	reply(c, http.StatusOK, licenseOf(l), err)
}

func (h *appHandlers) updateLicense(c *gin.Context) {
	var in struct {
		Level       *int    `json:"level"`
		MaxUses     *int    `json:"maxUses"`
		Duration    *int64  `json:"duration"`
		DeviceLimit *int    `json:"deviceLimit"`
		MaxSeats    *int    `json:"maxSeats"`
		DisplayName *string `json:"displayName"`
		Note        *string `json:"note"`
		DiscordID   *string `json:"discordId"`
		Enabled     *bool   `json:"enabled"`
		Banned      *bool   `json:"banned"`
	}
	if !bind(c, &in) {
		return
	}
	l, err := h.svc.UpdateLicense(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("licenseId"), apps.UpdateLicenseInput{
		Level: in.Level, MaxUses: in.MaxUses, DeviceLimit: in.DeviceLimit, Duration: in.Duration, DisplayName: in.DisplayName,
		Note: in.Note, DiscordID: in.DiscordID, Enabled: in.Enabled, Banned: in.Banned, MaxSeats: in.MaxSeats})
	reply(c, http.StatusOK, licenseOf(l), err)
}

func (h *appHandlers) deleteLicense(c *gin.Context) {
	err := h.svc.DeleteLicense(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("licenseId"))
	reply(c, http.StatusOK, gin.H{"message": "license deleted"}, err)
}

func (h *appHandlers) bulkDeleteLicenses(c *gin.Context) {
	var in struct {
		IDs    []string `json:"ids"`
		Filter string   `json:"filter"`
	}
	if !bind(c, &in) {
		return
	}
	n, err := h.svc.BulkDeleteLicenses(c.Request.Context(), ownerOf(c), c.Param("appId"), in.IDs, in.Filter)
	reply(c, http.StatusOK, gin.H{"deleted": n}, err)
}

func (h *appHandlers) verifyLicense(c *gin.Context) {
	var in struct {
		Key string `json:"key"`
	}
	if !bind(c, &in) {
		return
	}
	l, err := h.svc.VerifyLicense(c.Request.Context(), ownerOf(c), c.Param("appId"), in.Key)
	reply(c, http.StatusOK, licenseOf(l), err)
}

func (h *appHandlers) licenseUser(c *gin.Context) {
	u, err := h.svc.LicenseUser(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("licenseId"))
	reply(c, http.StatusOK, gin.H{"username": u.Username, "lastLoginIp": u.LastLoginIP, "lockedIp": u.LockedIP,
		"hwid": u.HWID, "pcName": u.PCName}, err)
}

func (h *appHandlers) listDevices(c *gin.Context) {
	p, err := pageOf(c)
	if err != nil {
		fail(c, err)
		return
	}
	list, total, p, err := h.svc.ListDevices(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Query("search"), p)
	listReply(c, "devices", mapSlice(list, deviceOf), total, p, err)
}

func (h *appHandlers) deleteDevice(c *gin.Context) {
	err := h.svc.DeleteDevice(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("deviceId"))
	reply(c, http.StatusOK, gin.H{"message": "device deleted"}, err)
}

func (h *appHandlers) listTokens(c *gin.Context) {
	p, err := pageOf(c)
	if err != nil {
		fail(c, err)
		return
	}
	list, total, p, err := h.svc.ListTokens(c.Request.Context(), ownerOf(c), c.Param("appId"), p)
	listReply(c, "tokens", mapSlice(list, tokenOf), total, p, err)
}

func (h *appHandlers) createTokens(c *gin.Context) {
	var in struct {
		Count     *int    `json:"count"`
		MaxUses   *int    `json:"maxUses"`
		ExpiresAt *string `json:"expiresAt"`
		Note      string  `json:"note"`
		Level     *int    `json:"level"`
	}
	if !bind(c, &in) {
		return
	}
	list, err := h.svc.CreateTokens(c.Request.Context(), ownerOf(c), c.Param("appId"), apps.CreateTokensInput{Count: in.Count,
		MaxUses: in.MaxUses, ExpiresAt: in.ExpiresAt, Note: in.Note, Level: in.Level})
	reply(c, http.StatusCreated, gin.H{"tokens": mapSlice(list, tokenOf), "count": len(list)}, err)
}

func (h *appHandlers) updateToken(c *gin.Context) {
	var in struct {
		MaxUses *int    `json:"maxUses"`
		Note    *string `json:"note"`
		Enabled *bool   `json:"enabled"`
		Level   *int    `json:"level"`
	}
	if !bind(c, &in) {
		return
	}
	t, err := h.svc.UpdateToken(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("tokenId"), apps.UpdateTokenInput{
		MaxUses: in.MaxUses, Level: in.Level, Note: in.Note, Enabled: in.Enabled})
	reply(c, http.StatusOK, tokenOf(t), err)
}

func (h *appHandlers) deleteToken(c *gin.Context) {
	err := h.svc.DeleteToken(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("tokenId"))
	reply(c, http.StatusOK, gin.H{"message": "token deleted"}, err)
}

// killSessions ends every client session of a user (SPEC 4.3); the WebSocket work adds the
// force_logout to connected sockets.
func (h *appHandlers) killSessions(c *gin.Context) {
	u, err := h.svc.GetUser(c.Request.Context(), ownerOf(c), c.Param("appId"), c.Param("userId"))
	if err != nil {
		fail(c, err)
		return
	}
	n, err := h.sessions.KillUserSessions(c.Request.Context(), c.Param("appId"), u.User.ID, u.User.Username)
	reply(c, http.StatusOK, gin.H{"deleted": n}, err)
}
