package keyauthimport

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/rules"
	"github.com/keyward/keyward/core/variables"
	"github.com/keyward/keyward/core/webhooks"
	"github.com/keyward/keyward/storage"
)

// Keyward's bounds that imported values must meet.
const (
	maxKeyLen    = 128
	maxHWIDLen   = 256
	maxNoteLen   = 500
	maxLevel     = 1_000_000
	maxDuration  = 100 * 365 * 24 * 3600
	maxReasonLen = 500
)

// licenses maps the keys table: a KeyAuth key is single-use; `expires` is the time it
// grants, in seconds from its activation; `status` is "Not Used", "Used" or "Banned".
func (im *importer) licenses(d *dump, ka *kaApp, app storage.App) ([]storage.License, map[string]string) {
	const kind = "licenses"
	var out []storage.License
	byKey := map[string]string{}
	for _, r := range d.keys[ka.secret] {
		key := strings.TrimSpace(r.Text("key"))
		switch {
		case key == "":
			im.drop(kind, "empty key", "")
			continue
		case len(key) > maxKeyLen:
			im.drop(kind, fmt.Sprintf("key longer than %d characters", maxKeyLen), key[:20]+"…")
			continue
		case byKey[key] != "":
			im.drop(kind, "the same key twice in one app: the first is kept", key)
			continue
		}
		l := storage.License{ID: uuid.NewString(), AppID: app.ID, Key: key, Level: 1, MaxUses: 1, DeviceLimit: 1,
			Enabled: true, Note: r.Text("note"), UsedBy: r.Text("usedby"), CreatedAt: im.now, UpdatedAt: im.now}
		if lv, ok := im.level(kind, r.Text("level"), key); ok {
			l.Level = lv
		}
		if exp := strings.TrimSpace(r.Text("expires")); exp != "" {
			n, err := strconv.ParseInt(exp, 10, 64)
			switch {
			case err != nil || n < 0:
				im.drop(kind, "expires is not a number of seconds: the key grants unlimited time", key)
			case n > maxDuration:
				im.drop(kind, "expires is more than 100 years: kept as 100 years", key)
				l.Duration = maxDuration
			default:
				l.Duration = n
			}
		}
		if t, ok := unixTime(r.Text("gendate")); ok {
			l.CreatedAt = storage.Truncate(t)
		}
		status := strings.ToLower(strings.TrimSpace(r.Text("status")))
		if status == "used" || l.UsedBy != "" {
			l.UsedCount = 1
			if t, ok := unixTime(r.Text("usedon")); ok {
				l.ActivatedAt = storage.Truncate(t)
			} else {
				l.ActivatedAt = l.CreatedAt
			}
		}
		if reason := r.Text("banned"); status == "banned" || !r.Null("banned") && reason != "" {
			l.Banned = true
			if reason != "" {
				l.Note = strings.TrimSpace(l.Note + " (banned: " + reason + ")")
			}
		}
		if len(l.Note) > maxNoteLen {
			l.Note = l.Note[:maxNoteLen]
			im.drop(kind, "note cut to 500 characters", key)
		}
		byKey[key] = l.ID
		out = append(out, l)
	}
	return out, byKey
}

func (im *importer) level(kind, s, example string) (int, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 1, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > maxLevel {
		im.drop(kind, "level is not a whole number from 0 to 1,000,000: level 1", example)
		return 1, false
	}
	return n, true
}

var sha1Hex = regexp.MustCompile(`^[0-9a-fA-F]{40}$`)

// users maps the users table; each user's level and expiry come from its subscriptions
// (subs: user, subscription name, unix expiry; subscriptions: name → level).
func (im *importer) users(d *dump, ka *kaApp, app storage.App, licByKey map[string]string) ([]storage.AppUser, map[string]string) {
	const kind = "users"
	var out []storage.AppUser
	byName := map[string]string{}
	subs, levels := d.subs[ka.secret], d.levels[ka.secret]
	for _, r := range d.users[ka.secret] {
		name := strings.TrimSpace(r.Text("username"))
		if err := apps.ValidateUsername("username", name); err != nil {
			im.drop(kind, "username is not 3 to 64 letters, digits, '_', '.', '@' or '-' (Keyward's rule)", name)
			continue
		}
		if byName[strings.ToLower(name)] != "" {
			im.drop(kind, "the same username twice in one app (case ignored): the first is kept", name)
			continue
		}
		u := storage.AppUser{ID: uuid.NewString(), AppID: app.ID, Username: name, Level: 1, DeviceLimit: 1, Enabled: true,
			CreatedAt: im.now, UpdatedAt: im.now}
		switch hash := r.Text("password"); {
		case r.Null("password") || hash == "":
			im.drop(kind, "no password (KeyAuth sets it at the first login): the user cannot sign in with a password until one is set", name)
		case strings.HasPrefix(hash, "$2y$") || strings.HasPrefix(hash, "$2a$") || strings.HasPrefix(hash, "$2b$"):
			u.PasswordHash = hash
		default:
			im.drop(kind, "the password hash is not bcrypt: the user cannot sign in with a password until one is set", name)
		}
		if email := strings.TrimSpace(r.Text("email")); email != "" {
			switch {
			case sha1Hex.MatchString(email):
				im.drop(kind, "email kept by KeyAuth as a SHA-1 digest only: left empty", name)
			case core.ValidateEmail("email", email) != nil:
				im.drop(kind, "email is not an address: left empty", name)
			default:
				u.Email = email
			}
		}
		if hwid := strings.TrimSpace(r.Text("hwid")); hwid != "" {
			if len(hwid) > maxHWIDLen {
				im.drop(kind, "HWID longer than 256 bytes (KeyAuth appends several): left unbound, the next login binds one", name)
			} else {
				u.HWID = hwid
			}
		}
		if !r.Null("banned") {
			u.Banned = true
			u.BanReason = r.Text("banned")
			if len(u.BanReason) > maxReasonLen {
				u.BanReason = u.BanReason[:maxReasonLen]
			}
		}
		if ip := strings.TrimSpace(r.Text("ip")); len(ip) <= 64 {
			u.LastLoginIP = ip
		}
		if t, ok := unixTime(r.Text("createdate")); ok {
			u.CreatedAt = storage.Truncate(t)
		}
		if t, ok := unixTime(r.Text("lastlogin")); ok {
			u.LastLoginAt = storage.Truncate(t)
		}
		im.subscription(&u, subs[strings.ToLower(name)], levels, licByKey)
		byName[strings.ToLower(name)] = u.ID
		out = append(out, u)
	}
	return out, byName
}

// subscription sets a user's level and expiry from its KeyAuth subscriptions. KeyAuth lets
// a user in while one subscription's expiry is ahead; Keyward has one level and one
// expiry: the highest level among the live subscriptions and the latest expiry. A user
// with none live is imported expired (KeyAuth refuses it: "no active subscription").
func (im *importer) subscription(u *storage.AppUser, subs []kaSub, levels map[string]string, licByKey map[string]string) {
	const kind = "subscriptions"
	nowUnix := im.now.Unix()
	var live []kaSub
	var last *kaSub
	for i, s := range subs {
		if s.paused {
			im.drop(kind, "paused: Keyward has no paused subscriptions; counted as ended", u.Username)
			continue
		}
		if last == nil || s.expiry > last.expiry {
			last = &subs[i]
		}
		if s.expiry > nowUnix {
			live = append(live, s)
		}
	}
	if len(live) > 1 {
		im.drop(kind, "several live subscriptions: the user has the highest level and the latest expiry", u.Username)
	}
	im.rep.Mapped["subscriptions"] += len(live)
	pick := live
	if len(pick) == 0 {
		if last == nil {
			im.drop(kind, "user without a subscription: imported expired, as KeyAuth refuses it", u.Username)
			u.ExpiresAt = im.now
			return
		}
		pick = []kaSub{*last}
	}
	level, expiry, key := -1, int64(0), ""
	for _, s := range pick {
		lv := 1
		if text, ok := levels[s.name]; ok {
			lv, _ = im.level(kind, text, s.name)
		} else {
			im.drop(kind, "names a subscription the app does not have: level 1", s.name)
		}
		level = max(level, lv)
		if s.expiry > expiry {
			expiry, key = s.expiry, s.key
		}
	}
	u.Level = level
	u.ExpiresAt = time.Unix(expiry, 0).UTC()
	if id := licByKey[key]; id != "" {
		u.LicenseID = id
	}
}

func (im *importer) appVariables(d *dump, ka *kaApp, app storage.App) []storage.Variable {
	const kind = "variables"
	var out []storage.Variable
	seen := map[string]bool{}
	for _, r := range d.vars[ka.secret] {
		key, value := r.Text("varid"), r.Text("msg")
		if variables.CheckKey("key", key) != nil || variables.CheckValue("value", "STRING", value) != nil {
			im.drop(kind, "name or value outside Keyward's bounds (128 characters, 64 KiB)", key)
			continue
		}
		if seen[key] {
			im.drop(kind, "the same name twice in one app: the first is kept", key)
			continue
		}
		seen[key] = true
		if !flag(r, "authed", true) {
			im.drop(kind, "readable before login in KeyAuth (authed 0): Keyward's app variables follow its own rule", key)
		}
		out = append(out, storage.Variable{ID: uuid.NewString(), AppID: app.ID, Scope: storage.ScopeApp, Key: key, Value: value,
			Type: "STRING", CreatedAt: im.now, UpdatedAt: im.now})
	}
	return out
}

func (im *importer) userVariables(d *dump, ka *kaApp, app storage.App, userByName map[string]string) []storage.Variable {
	const kind = "user variables"
	var out []storage.Variable
	seen := map[[2]string]bool{}
	for _, r := range d.userVars[ka.secret] {
		key, value, user := r.Text("name"), r.Text("data"), r.Text("user")
		owner := userByName[strings.ToLower(strings.TrimSpace(user))]
		switch {
		case owner == "":
			im.drop(kind, "of a user not imported", user)
			continue
		case variables.CheckKey("key", key) != nil || variables.CheckValue("value", "STRING", value) != nil:
			im.drop(kind, "name or value outside Keyward's bounds (128 characters, 64 KiB)", key)
			continue
		case seen[[2]string{owner, key}]:
			im.drop(kind, "the same name twice for one user: the first is kept", key)
			continue
		}
		seen[[2]string{owner, key}] = true
		if flag(r, "readOnly", false) {
			im.drop(kind, "read-only in KeyAuth: Keyward's clients may change their user variables", key)
		}
		out = append(out, storage.Variable{ID: uuid.NewString(), AppID: app.ID, Scope: storage.ScopeUser, OwnerID: owner,
			Key: key, Value: value, Type: "STRING", CreatedAt: im.now, UpdatedAt: im.now})
	}
	return out
}

// rules maps the bans table (hwid, ip, type "hwid" or "ip"): each is a blacklist rule.
func (im *importer) rules(d *dump, ka *kaApp, app storage.App) []storage.Rule {
	const kind = "rules"
	var out []storage.Rule
	seen := map[[2]string]bool{}
	add := func(typ, value string) {
		v, err := rules.Validate(typ, rules.ActionBlacklist, value)
		if err != nil {
			im.drop(kind, "a "+typ+" ban Keyward cannot hold as a rule ("+errMessage(err)+")", value)
			return
		}
		if seen[[2]string{typ, v}] {
			return // KeyAuth bans the same value again when a banned user comes back
		}
		seen[[2]string{typ, v}] = true
		out = append(out, storage.Rule{ID: uuid.NewString(), AppID: app.ID, Type: typ, Action: rules.ActionBlacklist, Value: v,
			Note: "KeyAuth blacklist", Enabled: true, CreatedAt: im.now, UpdatedAt: im.now})
	}
	for _, r := range d.bans[ka.secret] {
		hwid, ip := strings.TrimSpace(r.Text("hwid")), strings.TrimSpace(r.Text("ip"))
		switch strings.ToLower(strings.TrimSpace(r.Text("type"))) {
		case "hwid":
			add(rules.TypeHWID, hwid)
		case "ip":
			add(rules.TypeIP, ip)
		default:
			if hwid != "" {
				add(rules.TypeHWID, hwid)
			}
			if ip != "" {
				add(rules.TypeIP, ip)
			}
		}
	}
	return out
}

func errMessage(err error) string {
	var ce *core.Error
	if errors.As(err, &ce) {
		return ce.Message
	}
	return err.Error()
}

// Events of the integrations made from KeyAuth's two Discord webhooks: the app webhook
// got client activity, the audit-log webhook the dashboard's changes.
var (
	clientEvents = []events.Type{events.UserLogin, events.UserLoginFailed, events.UserRegister, events.LicenseActivate}
	auditEvents  = []events.Type{events.UserCreate, events.UserUpdate, events.UserDelete, events.UserBan, events.LicenseCreate,
		events.LicenseUpdate, events.LicenseDelete, events.VariableCreate, events.VariableUpdate, events.VariableDelete,
		events.RuleCreate, events.RuleDelete, events.AppUpdate}
)

// integrations maps the app's webhook and auditLogWebhook, Discord webhook URLs, onto
// DISCORD integrations.
func (im *importer) integrations(ka *kaApp, app storage.App) []storage.Integration {
	const kind = "integrations"
	var out []storage.Integration
	for _, w := range []struct {
		name, url string
		evs       []events.Type
	}{{"KeyAuth webhook", ka.webhook, clientEvents}, {"KeyAuth audit log webhook", ka.auditWebhook, auditEvents}} {
		raw := strings.TrimSpace(w.url)
		if raw == "" {
			continue
		}
		if !isDiscordWebhook(raw) {
			im.drop(kind, "not a Discord webhook URL over HTTPS: add it by hand as the right integration type", app.Name)
			continue
		}
		evs := make([]string, len(w.evs))
		for i, e := range w.evs {
			evs[i] = string(e)
		}
		out = append(out, storage.Integration{ID: uuid.NewString(), AppID: app.ID, Name: w.name, Kind: webhooks.KindDiscord,
			URL: raw, Events: evs, Enabled: true, CreatedAt: im.now, UpdatedAt: im.now})
	}
	return out
}

func isDiscordWebhook(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.User != nil || u.Port() != "" {
		return false
	}
	switch strings.ToLower(u.Hostname()) {
	case "discord.com", "discordapp.com", "ptb.discord.com", "canary.discord.com":
		return strings.HasPrefix(u.Path, "/api/webhooks/")
	}
	return false
}
