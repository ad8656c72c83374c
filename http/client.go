package httpapi

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/storage"
)

// The client limits of SPEC 8. Session checks are not license checks (ROUTES.md).
var (
	limitClientIP      = limitRule{"client.ip", 60, time.Minute}
	limitClientAuth    = limitRule{"client.auth", 20, time.Minute}
	limitClientInit    = limitRule{"client.init", 5, 5 * time.Minute}
	limitClientLicense = limitRule{"client.check_license", 10, time.Minute} // per IP and app
)

// clientHandlers serve the client API (SPEC 4.10) in the shape every official SDK reads
// (CLIENT-SDKS.md §3: success first, data always an object or a bare array, no nulls).
type clientHandlers struct {
	svc           *client.Service
	tokens        client.TokenUser
	limiter       cluster.RateLimiter
	countryHeader string
}

// limitIP is the overall per-address limit of every client call.
func (h *clientHandlers) limitIP(c *gin.Context) {
	if err := rateLimit(c, h.limiter, limitClientIP, c.ClientIP()); err != nil {
		fail(c, err)
		c.Abort()
		return
	}
	c.Next()
}

// clientBody is a client request body. SDKs send every member as a string (C++ cannot send
// anything else) and treat missing, null and "" alike; numbers and booleans are read as
// their text, so a typed client is not refused for sending 1 instead of "1".
type clientBody map[string]any

func (b clientBody) str(name string) string {
	switch v := b[name].(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

// bindClient decodes the body; a body that is not one JSON object is VALIDATION_ERROR.
func bindClient(c *gin.Context) (clientBody, bool) {
	if b, seen := c.Get(ctxClientBody); seen {
		return b.(clientBody), true
	}
	var raw map[string]json.RawMessage
	if err := bindJSON(c, &raw); err != nil {
		fail(c, err)
		return nil, false
	}
	b := clientBody{}
	for k, v := range raw {
		if len(v) > 0 && v[0] == '"' {
			// A string, what SDKs send: decoded without a Decoder of its own (and its
			// read buffer), which was most of a client call's allocations.
			var s string
			if err := json.Unmarshal(v, &s); err == nil {
				b[k] = s
			}
			continue
		}
		// Numbers stay the text sent (json.Number): a float64 would turn 9223372036854775807
		// into 9223372036854776000 where a string was meant.
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		var x any
		if err := dec.Decode(&x); err == nil {
			b[k] = x
		}
	}
	c.Set(ctxClientBody, b) // read once; the signing middleware reads the session token
	return b, true
}

func (h *clientHandlers) caller(c *gin.Context) client.Caller {
	cl := client.Caller{IP: c.ClientIP(), UserAgent: c.GetHeader("User-Agent")}
	if h.countryHeader != "" {
		cl.Country = c.GetHeader(h.countryHeader)
	}
	return cl
}

// begin opens a session call; false means the error has been answered.
func (h *clientHandlers) begin(c *gin.Context, needNonce bool) (client.Call, clientBody, bool) {
	b, ok := bindClient(c)
	if !ok {
		return client.Call{}, nil, false
	}
	call, err := h.svc.Begin(c.Request.Context(), h.caller(c), b.str("sessionToken"), c.GetHeader("X-Nonce"), needNonce)
	if err != nil {
		fail(c, err)
		return client.Call{}, nil, false
	}
	c.Set(ctxSigningSnap, call.Snap)
	return call, b, true
}

// stampOrOmit formats a time for the client; the zero time is left out (never null).
func stampOrOmit(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return core.Writable(t).UTC().Format(time.RFC3339)
}

type initView struct {
	SessionToken string      `json:"sessionToken"`
	AppName      string      `json:"appName"`
	AppVersion   string      `json:"appVersion"`
	AntiDebug    bool        `json:"antiDebug"`
	AntiVM       bool        `json:"antiVM"`
	LockHwid     bool        `json:"lockHwid"`
	LockIP       bool        `json:"lockIp"`
	LockPcName   bool        `json:"lockPcName"`
	ExpiresAt    string      `json:"expiresAt"`
	Resumed      bool        `json:"resumed"`
	App          initAppView `json:"app"`
}

type initAppView struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

func (h *clientHandlers) init(c *gin.Context) {
	if err := rateLimit(c, h.limiter, limitClientInit, c.ClientIP()); err != nil {
		fail(c, err)
		return
	}
	b, ok := bindClient(c)
	if !ok {
		return
	}
	r, err := h.svc.Init(c.Request.Context(), h.caller(c), client.InitInput{Secret: b.str("secret"), Version: b.str("version"), HWID: b.str("hwid")})
	if r.App.ID != "" {
		c.Set(ctxSigningSnap, r.Snap)
	}
	if err != nil {
		fail(c, err)
		return
	}
	a := r.App
	ok200(c, initView{SessionToken: r.Token, AppName: a.Name, AppVersion: a.Version, AntiDebug: a.AntiDebug, AntiVM: a.AntiVM,
		LockHwid: a.LockHwid, LockIP: a.LockIP, LockPcName: a.LockPcName, ExpiresAt: stampOrOmit(r.ExpiresAt),
		App: initAppView{Name: a.Name, Version: a.Version}})
}

func ok200(c *gin.Context, data any) { ok(c, http.StatusOK, data) }

func (h *clientHandlers) nonce(c *gin.Context) {
	call, _, ok := h.begin(c, false)
	if !ok {
		return
	}
	n, err := h.svc.NonceOn(c.Request.Context(), call)
	if err != nil {
		fail(c, err)
		return
	}
	ok200(c, gin.H{"nonce": n})
}

// clientUserView is the user as login, register, license and /user answer it. Flat members come
// first and nothing is null (C++ and Lua SDKs, CLIENT-SDKS.md §3).
type clientUserView struct {
	Key              string          `json:"key"`
	Username         string          `json:"username"`
	Email            string          `json:"email"`
	DisplayName      string          `json:"displayName,omitempty"`
	Level            int             `json:"level"`
	ExpiresAt        string          `json:"expiresAt,omitempty"`
	AvatarURL        string          `json:"avatarUrl"`
	DiscordID        string          `json:"discordId"`
	LicenseActivated bool            `json:"licenseActivated"`
	Returning        *bool           `json:"returning,omitempty"`
	Warnings         []string        `json:"warnings"`
	CreatedAt        string          `json:"createdAt,omitempty"`
	LastLoginAt      string          `json:"lastLoginAt,omitempty"`
	Metadata         json.RawMessage `json:"metadata"`
}

func clientUserOf(u storage.AppUser, key string) clientUserView {
	meta := json.RawMessage(u.Metadata)
	if len(meta) == 0 || !json.Valid(meta) {
		meta = json.RawMessage("{}")
	}
	if key == "" {
		key = u.Username
	}
	return clientUserView{Key: key, Username: u.Username, Email: u.Email, DisplayName: u.DisplayName, Level: u.Level,
		ExpiresAt: stampOrOmit(u.ExpiresAt), AvatarURL: avatarURL(u), DiscordID: u.DiscordID, Warnings: []string{},
		CreatedAt: stampOrOmit(u.CreatedAt), LastLoginAt: stampOrOmit(u.LastLoginAt), Metadata: meta}
}

// avatarURL derives an avatar without any profile store: Discord's default avatar for a
// Discord id (the index its CDN uses for new-style ids), else a Gravatar of the email,
// else a Gravatar identicon seeded by the user id, so every user has a stable picture.
func avatarURL(u storage.AppUser) string {
	if id, err := strconv.ParseUint(u.DiscordID, 10, 64); err == nil {
		return fmt.Sprintf("https://cdn.discordapp.com/embed/avatars/%d.png", (id>>22)%6)
	}
	seed := u.ID
	if u.Email != "" {
		seed = u.Email
	}
	sum := md5.Sum([]byte(seed)) // Gravatar's addressing scheme, not a security use
	return "https://www.gravatar.com/avatar/" + hex.EncodeToString(sum[:]) + "?d=identicon"
}

func authView(r client.AuthResult, withReturning bool) clientUserView {
	v := clientUserOf(r.User, r.Key)
	v.LicenseActivated = r.LicenseActivated
	if r.Warnings != nil {
		v.Warnings = r.Warnings
	}
	if withReturning {
		v.Returning = &r.Returning
	}
	return v
}

// authLimited applies the login/register/license limit of SPEC 8.
func (h *clientHandlers) authLimited(c *gin.Context) bool {
	if err := rateLimit(c, h.limiter, limitClientAuth, c.ClientIP()); err != nil {
		fail(c, err)
		return false
	}
	return true
}

func (h *clientHandlers) login(c *gin.Context) {
	if !h.authLimited(c) {
		return
	}
	call, b, ok := h.begin(c, true)
	if !ok {
		return
	}
	r, err := h.svc.Login(c.Request.Context(), call, client.LoginInput{Username: b.str("username"), Password: b.str("password"),
		LicenseKey: b.str("licenseKey"), HWID: b.str("hwid"), PCName: b.str("pcName")})
	reply(c, http.StatusOK, authView(r, false), err)
}

func (h *clientHandlers) register(c *gin.Context) {
	if !h.authLimited(c) {
		return
	}
	call, b, ok := h.begin(c, true)
	if !ok {
		return
	}
	r, err := h.svc.Register(c.Request.Context(), call, client.RegisterInput{Username: b.str("username"), Password: b.str("password"),
		Email: b.str("email"), DisplayName: b.str("displayName"), LicenseKey: b.str("licenseKey"), HWID: b.str("hwid"), PCName: b.str("pcName")})
	reply(c, http.StatusOK, authView(r, false), err)
}

func (h *clientHandlers) license(c *gin.Context) {
	if !h.authLimited(c) {
		return
	}
	call, b, ok := h.begin(c, true)
	if !ok {
		return
	}
	r, err := h.svc.License(c.Request.Context(), call, client.LicenseInput{LicenseKey: b.str("licenseKey"), HWID: b.str("hwid"), PCName: b.str("pcName")})
	reply(c, http.StatusOK, authView(r, true), err)
}

func (h *clientHandlers) activate(c *gin.Context) {
	call, b, ok := h.begin(c, true)
	if !ok {
		return
	}
	u, err := h.svc.Activate(c.Request.Context(), call, b.str("licenseKey"))
	if err != nil {
		fail(c, err)
		return
	}
	data := gin.H{"level": u.Level, "username": u.Username, "licenseActivated": true}
	if s := stampOrOmit(u.ExpiresAt); s != "" {
		data["expiresAt"] = s
	}
	ok200(c, data)
}

func (h *clientHandlers) heartbeat(c *gin.Context) {
	call, _, ok := h.begin(c, true)
	if !ok {
		return
	}
	exp, err := h.svc.HeartbeatOn(c.Request.Context(), call)
	if err != nil {
		fail(c, err)
		return
	}
	ok200(c, gin.H{"expiresAt": exp.UTC().Format(time.RFC3339)})
}

func (h *clientHandlers) check(c *gin.Context) {
	isLicense, ok := peekLicenseKey(c)
	if !ok {
		return
	}
	if isLicense {
		h.checkLicense(c) // ROUTES.md: /check with a licenseKey is the license check
		return
	}
	call, _, ok := h.begin(c, false)
	if !ok {
		return
	}
	data := gin.H{"valid": true, "loggedIn": call.Session.LoggedIn(), "expiresAt": h.svc.ExpiresAt(call).UTC().Format(time.RFC3339)}
	if call.Session.LoggedIn() {
		data["username"] = call.Session.Username
	}
	ok200(c, data)
}

func (h *clientHandlers) end(c *gin.Context) {
	b, ok := bindClient(c)
	if !ok {
		return
	}
	err := h.svc.End(c.Request.Context(), h.caller(c), b.str("sessionToken"))
	reply(c, http.StatusOK, gin.H{"message": "session ended"}, err)
}

// peekLicenseKey decodes the body once (kept for the handler) to route /check; ok is
// false when the error has been answered.
func peekLicenseKey(c *gin.Context) (isLicense, ok bool) {
	b, ok := bindClient(c)
	if !ok {
		return false, false
	}
	c.Set(ctxClientBody, b)
	return b.str("licenseKey") != "", true
}

const ctxClientBody = "keyward.clientBody"

// clientVariableView is a variable as SDKs read it: key, value (always a string) and type.
type clientVariableView struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	Type  string `json:"type"`
}

func variableOfClient(v storage.Variable) clientVariableView {
	t := v.Type
	if t == "" {
		t = "STRING"
	}
	return clientVariableView{Key: v.Key, Value: v.Value, Type: t}
}

// listOrError answers a bare array (CLIENT-SDKS.md: list calls are never wrapped).
func listOrError(c *gin.Context, list []storage.Variable, err error) {
	reply(c, http.StatusOK, mapSlice(list, variableOfClient), err)
}

// key reads the variable key; SDKs send key, the spec also shows name.
func (b clientBody) key() string {
	if k := b.str("key"); k != "" {
		return k
	}
	return b.str("name")
}

func (h *clientHandlers) variables(c *gin.Context) {
	call, _, ok := h.begin(c, false)
	if !ok {
		return
	}
	list, err := h.svc.Variables(c.Request.Context(), call)
	listOrError(c, list, err)
}

func (h *clientHandlers) variable(c *gin.Context) {
	call, b, ok := h.begin(c, false)
	if !ok {
		return
	}
	v, err := h.svc.Variable(c.Request.Context(), call, b.key())
	reply(c, http.StatusOK, variableOfClient(v), err)
}

func (h *clientHandlers) licenseVariables(c *gin.Context) {
	call, _, ok := h.begin(c, false)
	if !ok {
		return
	}
	list, err := h.svc.LicenseVariables(c.Request.Context(), call)
	listOrError(c, list, err)
}

func (h *clientHandlers) licenseVariable(c *gin.Context) {
	call, b, ok := h.begin(c, false)
	if !ok {
		return
	}
	v, err := h.svc.LicenseVariable(c.Request.Context(), call, b.key())
	reply(c, http.StatusOK, variableOfClient(v), err)
}

func (h *clientHandlers) userVariables(c *gin.Context) {
	call, _, ok := h.begin(c, false)
	if !ok {
		return
	}
	list, err := h.svc.UserVariables(c.Request.Context(), call)
	listOrError(c, list, err)
}

func (h *clientHandlers) userVariable(c *gin.Context) {
	call, b, ok := h.begin(c, false)
	if !ok {
		return
	}
	v, err := h.svc.UserVariable(c.Request.Context(), call, b.key())
	reply(c, http.StatusOK, variableOfClient(v), err)
}

func (h *clientHandlers) setUserVariable(c *gin.Context) {
	call, b, ok := h.begin(c, false)
	if !ok {
		return
	}
	v, err := h.svc.SetUserVariable(c.Request.Context(), call, b.key(), b.str("value"))
	reply(c, http.StatusOK, variableOfClient(v), err)
}

func (h *clientHandlers) deleteUserVariable(c *gin.Context) {
	call, b, ok := h.begin(c, false)
	if !ok {
		return
	}
	err := h.svc.DeleteUserVariable(c.Request.Context(), call, b.key())
	reply(c, http.StatusOK, gin.H{"message": "variable deleted"}, err)
}

func (h *clientHandlers) user(c *gin.Context) {
	call, _, ok := h.begin(c, false)
	if !ok {
		return
	}
	u, err := h.svc.CurrentUser(c.Request.Context(), call)
	reply(c, http.StatusOK, clientUserOf(u, ""), err)
}

func (h *clientHandlers) log(c *gin.Context) {
	call, b, ok := h.begin(c, false)
	if !ok {
		return
	}
	var data json.RawMessage
	if d, isObj := b["data"].(map[string]any); isObj {
		data, _ = json.Marshal(d)
	}
	err := h.svc.WriteLog(c.Request.Context(), call, b.str("event"), b.str("message"), b.str("level"), data)
	reply(c, http.StatusOK, gin.H{"message": "logged"}, err)
}

func (h *clientHandlers) token(c *gin.Context) {
	call, b, ok := h.begin(c, false)
	if !ok {
		return
	}
	t, valid, err := h.svc.ValidateToken(c.Request.Context(), call, h.tokens, b.str("token"))
	data := gin.H{"valid": valid, "level": 0}
	if valid {
		data["level"], data["usedCount"], data["maxUses"] = t.Level, t.UsedCount, t.MaxUses
	}
	reply(c, http.StatusOK, data, err)
}

type licenseCheckView struct {
	Valid   bool              `json:"valid"`
	Exists  bool              `json:"exists"`
	Banned  bool              `json:"banned"`
	Enabled bool              `json:"enabled"`
	Issues  []string          `json:"issues"`
	Reason  string            `json:"reason"`
	License *licenseBriefView `json:"license,omitempty"`
}

type licenseBriefView struct {
	Level     int    `json:"level"`
	Duration  *int64 `json:"duration,omitempty"`
	ExpiresAt string `json:"expiresAt,omitempty"`
	UsedCount int    `json:"usedCount"`
	MaxUses   int    `json:"maxUses"`
	UsedBy    string `json:"usedBy"`
}

func (h *clientHandlers) checkLicense(c *gin.Context) {
	call, b, ok := h.begin(c, false)
	if !ok {
		return
	}
	if err := rateLimit(c, h.limiter, limitClientLicense, c.ClientIP(), call.Snap.App.ID); err != nil {
		fail(c, err)
		return
	}
	r, err := h.svc.CheckLicense(c.Request.Context(), call, b.str("licenseKey"))
	v := licenseCheckView{Valid: r.Valid, Exists: r.Exists, Banned: r.Banned, Enabled: r.Enabled, Issues: r.Issues, Reason: r.Reason}
	if l := r.License; l != nil {
		v.License = &licenseBriefView{Level: l.Level, ExpiresAt: stampOrOmit(l.ExpiresAt), UsedCount: l.UsedCount, MaxUses: l.MaxUses, UsedBy: l.UsedBy}
		if l.Duration > 0 {
			v.License.Duration = &l.Duration
		}
	}
	reply(c, http.StatusOK, v, err)
}

func (h *clientHandlers) changePassword(c *gin.Context) {
	call, b, ok := h.begin(c, false)
	if !ok {
		return
	}
	err := h.svc.ChangePassword(c.Request.Context(), call, b.str("currentPassword"), b.str("newPassword"))
	reply(c, http.StatusOK, gin.H{"message": "password changed"}, err)
}

type updateFileView struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Size    int64  `json:"size"`
	Hash    string `json:"hash"`
}

func (h *clientHandlers) checkUpdate(c *gin.Context) {
	call, b, ok := h.begin(c, false)
	if !ok {
		return
	}
	name := b.str("fileName")
	if name == "" {
		name = b.str("name")
	}
	u, err := h.svc.CheckUpdate(c.Request.Context(), call, b.str("currentVersion"), name)
	if err != nil {
		fail(c, err)
		return
	}
	data := gin.H{"updateAvailable": u.Available, "latestVersion": u.Latest, "currentVersion": u.Current}
	if f := u.File; f != nil {
		data["file"] = updateFileView{Name: f.Name, Version: f.Version, Size: f.Size, Hash: f.SHA256}
		if u.Available {
			// A client downloads with POST /api/client/file and the name; the URL says where.
			data["downloadUrl"] = "/api/client/file"
		}
	}
	ok200(c, data)
}

// file sends a file's raw bytes (CLIENT-SDKS.md §5): X-File-Hash and X-File-Version always,
// X-File-Encrypted and X-File-Nonce only on an encrypted body, never on an error.
func (h *clientHandlers) file(c *gin.Context) {
	call, b, ok := h.begin(c, false)
	if !ok {
		return
	}
	name := b.str("name")
	if name == "" {
		name = b.str("fileName")
	}
	d, err := h.svc.DownloadFile(c.Request.Context(), call, name, c.GetHeader("User-Agent"))
	if err != nil {
		fail(c, err)
		return
	}
	hdr := c.Writer.Header()
	hdr.Set("Content-Type", "application/octet-stream")
	hdr.Set("X-File-Hash", d.File.SHA256)
	hdr.Set("X-File-Version", d.File.Version)
	hdr.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": d.File.Name}))
	hdr.Set("Cache-Control", "no-store")
	if d.Reader != nil {
		defer d.Reader.Close()
		hdr.Set("Content-Length", strconv.FormatInt(d.File.Size, 10))
		c.Status(http.StatusOK)
		_, _ = io.Copy(c.Writer, d.Reader) // a client that goes away ends the copy
		return
	}
	hdr.Set("X-File-Encrypted", "1")
	hdr.Set("X-File-Nonce", d.Nonce)
	hdr.Set("Content-Length", strconv.Itoa(len(d.Body)))
	c.Status(http.StatusOK)
	_, _ = c.Writer.Write(d.Body)
}
