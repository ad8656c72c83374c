package httpapi

import (
	"encoding/json"

	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/storage"
)

type appCountsView struct {
	Users     int `json:"users"`
	Licenses  int `json:"licenses"`
	Sessions  int `json:"sessions"`
	Variables int `json:"variables"`
	Files     int `json:"files"`
	Tokens    int `json:"tokens"`
	Rules     int `json:"rules"`
}

type appView struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Secret      string `json:"secret"`
	Enabled     bool   `json:"enabled"`
	Paused      bool   `json:"paused"`
	Version     string `json:"version"`
	Description string `json:"description"`
	AntiDebug   bool   `json:"antiDebug"`
	AntiVM      bool   `json:"antiVM"`
	LockHwid    bool   `json:"lockHwid"`
	LockIP      bool   `json:"lockIp"`
	LockPcName  bool   `json:"lockPcName"`
	// SessionTimeout is the client session idle timeout in seconds; 0 is the server's.
	SessionTimeout int  `json:"sessionTimeout"`
	FileEncryption bool `json:"fileEncryption"`
	// The licensing members (docs/LICENSING.md); PublicKey is left out until the app
	// has a key (the get response makes one).
	SignResponses   bool           `json:"signResponses"`
	GraceSeconds    int            `json:"graceSeconds"`
	LicenseFileDays int            `json:"licenseFileDays"`
	PublicKey       *publicKeyView `json:"publicKey,omitempty"`
	// Portal is the buyer portal's settings (changed with PATCH /api/apps/:appId/portal).
	Portal    portalSettingsView `json:"portal"`
	CreatedAt *string            `json:"createdAt,omitempty"`
	UpdatedAt *string            `json:"updatedAt,omitempty"`
	Counts    *appCountsView     `json:"counts,omitempty"`
}

// appOf shows an app with its secret masked, unless the full secret is given (create).
func appOf(a storage.App, fullSecret string) appView {
	secret := apps.MaskSecret(a)
	if fullSecret != "" {
		secret = fullSecret
	}
	return appView{ID: a.ID, Name: a.Name, Secret: secret, Enabled: a.Enabled, Paused: a.Paused, Version: a.Version,
		Description: a.Description, AntiDebug: a.AntiDebug, AntiVM: a.AntiVM, LockHwid: a.LockHwid, LockIP: a.LockIP,
		LockPcName: a.LockPcName, SessionTimeout: a.SessionTimeout, FileEncryption: !a.PlainFiles,
		SignResponses: a.SignResponses, GraceSeconds: a.GraceSeconds, LicenseFileDays: licenseFileDays(a),
		PublicKey: publicKeyOf(a), Portal: portalSettingsOf(a), CreatedAt: stamp(a.CreatedAt), UpdatedAt: stamp(a.UpdatedAt)}
}

type userView struct {
	ID                string          `json:"id"`
	Username          string          `json:"username"`
	Email             string          `json:"email"`
	Level             int             `json:"level"`
	ExpiresAt         *string         `json:"expiresAt,omitempty"`
	DeviceLimit       int             `json:"deviceLimit"`
	Metadata          json.RawMessage `json:"metadata"`
	Enabled           bool            `json:"enabled"`
	Banned            bool            `json:"banned"`
	BanReason         string          `json:"banReason"`
	HWID              string          `json:"hwid"`
	DisplayName       string          `json:"displayName"`
	PCName            string          `json:"pcName"`
	LockedIP          string          `json:"lockedIp"`
	HwidResetMax      int             `json:"hwidResetMax"`
	HwidResetCooldown int             `json:"hwidResetCooldown"`
	IPResetMax        int             `json:"ipResetMax"`
	IPResetCooldown   int             `json:"ipResetCooldown"`
	HwidResets        int             `json:"hwidResets"`
	DiscordID         string          `json:"discordId,omitempty"`
	LastLoginAt       *string         `json:"lastLoginAt,omitempty"`
	CreatedAt         *string         `json:"createdAt,omitempty"`
	UpdatedAt         *string         `json:"updatedAt,omitempty"`
	// Devices and Subscriptions are shown by the single-user read only.
	Devices       *[]deviceView  `json:"devices,omitempty"`
	Subscriptions *[]licenseView `json:"subscriptions,omitempty"`
}

func userOf(u storage.AppUser) userView {
	meta := json.RawMessage(u.Metadata)
	if len(meta) == 0 {
		meta = json.RawMessage("{}")
	}
	return userView{ID: u.ID, Username: u.Username, Email: u.Email, Level: u.Level, ExpiresAt: stamp(u.ExpiresAt),
		DeviceLimit: u.DeviceLimit, Metadata: meta, Enabled: u.Enabled, Banned: u.Banned, BanReason: u.BanReason,
		HWID: u.HWID, DisplayName: u.DisplayName, PCName: u.PCName, LockedIP: u.LockedIP, HwidResetMax: u.HwidResetMax,
		HwidResetCooldown: u.HwidResetCooldown, IPResetMax: u.IPResetMax, IPResetCooldown: u.IPResetCooldown,
		HwidResets: u.HwidResets, DiscordID: u.DiscordID, LastLoginAt: stamp(u.LastLoginAt), CreatedAt: stamp(u.CreatedAt),
		UpdatedAt: stamp(u.UpdatedAt)}
}

type licenseView struct {
	ID          string  `json:"id"`
	Key         string  `json:"key"`
	Level       int     `json:"level"`
	MaxUses     int     `json:"maxUses"`
	UsedCount   int     `json:"usedCount"`
	Duration    int64   `json:"duration"`
	ExpiresAt   *string `json:"expiresAt,omitempty"`
	Note        string  `json:"note"`
	UsedBy      string  `json:"usedBy"`
	DeviceLimit int     `json:"deviceLimit"`
	MaxSeats    int     `json:"maxSeats"`
	DisplayName string  `json:"displayName"`
	Enabled     bool    `json:"enabled"`
	Banned      bool    `json:"banned"`
	DiscordID   string  `json:"discordId,omitempty"`
	ActivatedAt *string `json:"activatedAt,omitempty"`
	CreatedAt   *string `json:"createdAt,omitempty"`
	UpdatedAt   *string `json:"updatedAt,omitempty"`
}

func licenseOf(l storage.License) licenseView {
	return licenseView{ID: l.ID, Key: l.Key, Level: l.Level, MaxUses: l.MaxUses, UsedCount: l.UsedCount, Duration: l.Duration,
		ExpiresAt: stamp(l.ExpiresAt), Note: l.Note, UsedBy: l.UsedBy, DeviceLimit: l.DeviceLimit, MaxSeats: l.MaxSeats, DisplayName: l.DisplayName,
		Enabled: l.Enabled, Banned: l.Banned, DiscordID: l.DiscordID, ActivatedAt: stamp(l.ActivatedAt),
		CreatedAt: stamp(l.CreatedAt), UpdatedAt: stamp(l.UpdatedAt)}
}

type deviceView struct {
	ID         string  `json:"id"`
	UserID     string  `json:"userId"`
	Username   string  `json:"username"`
	HWID       string  `json:"hwid"`
	PCName     string  `json:"pcName"`
	IP         string  `json:"ip"`
	CreatedAt  *string `json:"createdAt,omitempty"`
	LastSeenAt *string `json:"lastSeenAt,omitempty"`
}

func deviceOf(d storage.Device) deviceView {
	return deviceView{ID: d.ID, UserID: d.UserID, Username: d.Username, HWID: d.HWID, PCName: d.PCName, IP: d.IP,
		CreatedAt: stamp(d.CreatedAt), LastSeenAt: stamp(d.LastSeenAt)}
}

type tokenView struct {
	ID        string  `json:"id"`
	Token     string  `json:"token"`
	Level     int     `json:"level"`
	MaxUses   int     `json:"maxUses"`
	UsedCount int     `json:"usedCount"`
	ExpiresAt *string `json:"expiresAt,omitempty"`
	Note      string  `json:"note"`
	Enabled   bool    `json:"enabled"`
	CreatedAt *string `json:"createdAt,omitempty"`
	UpdatedAt *string `json:"updatedAt,omitempty"`
}

func tokenOf(t storage.Token) tokenView {
	return tokenView{ID: t.ID, Token: t.Value, Level: t.Level, MaxUses: t.MaxUses, UsedCount: t.UsedCount,
		ExpiresAt: stamp(t.ExpiresAt), Note: t.Note, Enabled: t.Enabled, CreatedAt: stamp(t.CreatedAt), UpdatedAt: stamp(t.UpdatedAt)}
}

// mapSlice converts a slice with f; never nil, so empty lists are [] on the wire.
func mapSlice[T, V any](in []T, f func(T) V) []V {
	out := make([]V, 0, len(in))
	for _, v := range in {
		out = append(out, f(v))
	}
	return out
}
