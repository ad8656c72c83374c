package keyauthimport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/licensing"
	"github.com/keyward/keyward/core/rules"
	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/core/variables"
	"github.com/keyward/keyward/core/webhooks"
	"github.com/keyward/keyward/storage"
)

// Store is what an import writes to: storage.Store has all of it.
type Store interface {
	ListApps(ctx context.Context, accountID string) ([]storage.App, error)
	CreateApp(ctx context.Context, a storage.App) error
	DeleteApp(ctx context.Context, accountID, id string) error
	CreateUsers(ctx context.Context, us []storage.AppUser) error
	CreateLicenses(ctx context.Context, ls []storage.License) error
	CreateVariables(ctx context.Context, vs []storage.Variable) error
	CreateRules(ctx context.Context, rs []storage.Rule) error
	CreateIntegration(ctx context.Context, i storage.Integration) error
}

// Options of an import.
type Options struct {
	// AccountID is the Keyward account the apps are created in.
	AccountID string
	// Owner keeps only the apps of this KeyAuth account (the apps table's owner column);
	// "" imports every app, and is refused when the dump holds apps of several owners.
	Owner string
	// MaxApps and MaxUsersPerApp are the account's plan limits (0: no limit). An import
	// that would pass them is refused before anything is written.
	MaxApps, MaxUsersPerApp int
	// BatchSize is how many records one write holds (default 1000).
	BatchSize int
	// Now is the time subscriptions are judged at (default time.Now).
	Now func() time.Time
}

// Report says what an import did: what mapped, what did not, and why.
type Report struct {
	Apps []AppReport
	// Mapped counts the records written, by kind (apps, users, licenses, variables,
	// user variables, rules, integrations), and the live subscriptions that became their
	// users' level and expiry.
	Mapped map[string]int
	// Dropped are records or values of mapped tables that were left out or changed, by
	// reason, with a few examples each.
	Dropped []Dropped
	// Tables are KeyAuth's tables that do not map, with their row counts and why.
	Tables []TableNote
}

// AppReport is one imported app: its Keyward id, and its new secret (shown once: client
// software needs it for init).
type AppReport struct {
	Name, ID, Secret string
	Users, Licenses  int
	Notes            []string
}

// Dropped is one reason records were left out or changed, with how many.
type Dropped struct {
	Kind, Reason string
	Count        int
	Examples     []string
}

// TableNote is a KeyAuth table that is not imported.
type TableNote struct {
	Table string
	Rows  int
	Why   string
}

// Records answers how many records the import wrote (subscriptions are not records of
// their own: they became their users' level and expiry).
func (r *Report) Records() int {
	n := 0
	for k, v := range r.Mapped {
		if k != "subscriptions" {
			n += v
		}
	}
	return n
}

// Print writes the report for a person.
func (r *Report) Print(w io.Writer) {
	for _, a := range r.Apps {
		fmt.Fprintf(w, "app %q: id %s, %d users, %d licenses\n  new secret (shown once; client software needs it for init): %s\n",
			a.Name, a.ID, a.Users, a.Licenses, a.Secret)
		for _, n := range a.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
	}
	kinds := make([]string, 0, len(r.Mapped))
	for k := range r.Mapped {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	fmt.Fprintln(w, "imported:")
	for _, k := range kinds {
		fmt.Fprintf(w, "  %-15s %d\n", k, r.Mapped[k])
	}
	if len(r.Dropped) > 0 {
		fmt.Fprintln(w, "left out or changed:")
		for _, d := range r.Dropped {
			fmt.Fprintf(w, "  %s: %d: %s", d.Kind, d.Count, d.Reason)
			if len(d.Examples) > 0 {
				fmt.Fprintf(w, " (e.g. %s)", strings.Join(d.Examples, ", "))
			}
			fmt.Fprintln(w)
		}
	}
	if len(r.Tables) > 0 {
		fmt.Fprintln(w, "not imported:")
		for _, t := range r.Tables {
			fmt.Fprintf(w, "  %s (%d rows): %s\n", t.Table, t.Rows, t.Why)
		}
	}
}

// unmapped says why each KeyAuth table that has no Keyward counterpart is left out.
var unmapped = map[string]string{
	"accounts":     "KeyAuth's own owner accounts: the apps go into the Keyward account named on the command line",
	"acclogs":      "sign-ins of KeyAuth owners to KeyAuth's dashboard",
	"afLogs":       "KeyAuth's affiliate program",
	"auditLog":     "KeyAuth's dashboard audit log: Keyward keeps its own, hash-chained, from now on",
	"buttons":      "seller-panel buttons: Keyward has no seller panel",
	"chatmsgs":     "KeyAuth's chat channels: Keyward has no chat channels (its WebSocket chat is live only)",
	"chatmutes":    "KeyAuth's chat channels: Keyward has no chat channels",
	"chats":        "KeyAuth's chat channels: Keyward has no chat channels",
	"emailverify":  "pending email changes of KeyAuth owners",
	"files":        "KeyAuth files are links to bytes hosted elsewhere, not in the dump: upload each file to its app again",
	"logs":         "client log lines of the past: Keyward's log starts with the import",
	"orders":       "KeyAuth's own subscription orders",
	"resets":       "pending password resets of KeyAuth owners",
	"resetUsers":   "pending password resets of users: they expire anyway",
	"securityKeys": "passkeys of KeyAuth owners: they are bound to KeyAuth's site and cannot move",
	"sellerLogs":   "seller API request log",
	"sessions":     "live client sessions: clients sign in again against Keyward",
	"support":      "KeyAuth support tickets",
	"webhooks":     "KeyAuth webhooks are requests KeyAuth's server makes for the client (webid to URL); Keyward has no server-side request proxy",
	"whitelist":    "addresses KeyAuth lets through its VPN block, which Keyward does not have",
	"tokens":       "KeyAuth tokens are not Keyward access tokens (different use)",
}

// The tables that map, and the columns read of each.
const (
	tApps, tUsers, tKeys, tSubs, tSubscriptions = "apps", "users", "keys", "subs", "subscriptions"
	tVars, tUserVars, tBans                     = "vars", "uservars", "bans"
)

type kaApp struct {
	owner, name, secret, version, webhook, auditWebhook, format string
	enabled, paused, hwidLock                                   bool
	banned, vpnBlock, hashCheck                                 bool
	download                                                    string
}

type kaSub struct {
	user, name, key string
	expiry          int64
	paused          bool
	line            int
}

// dump is what the reader found, by app secret (KeyAuth keys its rows by the app's secret).
type dump struct {
	apps     map[string]*kaApp
	appOrder []string
	users    map[string][]Row
	keys     map[string][]Row
	subs     map[string]map[string][]kaSub // app → lower username → subs
	levels   map[string]map[string]string  // app → subscription name → level
	vars     map[string][]Row
	userVars map[string][]Row
	bans     map[string][]Row
	unmapped map[string]int
	unknown  map[string]int
}

func readDump(r io.Reader) (*dump, error) {
	d := &dump{apps: map[string]*kaApp{}, users: map[string][]Row{}, keys: map[string][]Row{},
		subs: map[string]map[string][]kaSub{}, levels: map[string]map[string]string{}, vars: map[string][]Row{},
		userVars: map[string][]Row{}, bans: map[string][]Row{}, unmapped: map[string]int{}, unknown: map[string]int{}}
	rd := NewReader(r)
	for {
		row, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return d, nil
		}
		if err != nil {
			return nil, err
		}
		row = compact(row)
		app := row.Text("app")
		switch row.Table {
		case tApps:
			secret := row.Text("secret")
			if _, seen := d.apps[secret]; !seen {
				d.appOrder = append(d.appOrder, secret)
			}
			d.apps[secret] = &kaApp{owner: row.Text("owner"), name: row.Text("name"), secret: secret,
				version: row.Text("ver"), webhook: row.Text("webhook"), auditWebhook: row.Text("auditLogWebhook"),
				format: row.Text("format"), enabled: flag(row, "enabled", true), paused: flag(row, "paused", false),
				hwidLock: flag(row, "hwidcheck", false), banned: flag(row, "banned", false),
				vpnBlock: flag(row, "vpnblock", false), hashCheck: flag(row, "hashcheck", false), download: row.Text("download")}
		case tUsers:
			d.users[app] = append(d.users[app], row)
		case tKeys:
			d.keys[app] = append(d.keys[app], row)
		case tSubs:
			m := d.subs[app]
			if m == nil {
				m = map[string][]kaSub{}
				d.subs[app] = m
			}
			exp, _ := strconv.ParseInt(strings.TrimSpace(row.Text("expiry")), 10, 64)
			u := strings.ToLower(row.Text("user"))
			m[u] = append(m[u], kaSub{user: row.Text("user"), name: row.Text("subscription"), key: row.Text("key"),
				expiry: exp, paused: flag(row, "paused", false), line: row.Line})
		case tSubscriptions:
			m := d.levels[app]
			if m == nil {
				m = map[string]string{}
				d.levels[app] = m
			}
			m[row.Text("name")] = row.Text("level")
		case tVars:
			d.vars[app] = append(d.vars[app], row)
		case tUserVars:
			d.userVars[app] = append(d.userVars[app], row)
		case tBans:
			d.bans[app] = append(d.bans[app], row)
		default:
			if _, known := unmapped[row.Table]; known {
				d.unmapped[row.Table]++
			} else {
				d.unknown[row.Table]++
			}
		}
	}
}

// compact keeps a row's strings from pinning the reader's buffers, and drops nothing.
func compact(r Row) Row {
	vs := make([]Value, len(r.Values))
	copy(vs, r.Values)
	r.Values = vs
	return r
}

func flag(r Row, col string, def bool) bool {
	v, ok := r.Get(col)
	if !ok || v.Null {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v.Text))
	return err == nil && n != 0
}

func unixTime(s string) (time.Time, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 || n > 1<<40 {
		return time.Time{}, false
	}
	return time.Unix(n, 0).UTC(), true
}

// importer holds one run's state.
type importer struct {
	st      Store
	opt     Options
	now     time.Time
	rep     *Report
	dropped map[[2]string]*Dropped
	created []string // app ids, deleted again if a write fails
}

func (im *importer) drop(kind, reason, example string) {
	k := [2]string{kind, reason}
	d := im.dropped[k]
	if d == nil {
		d = &Dropped{Kind: kind, Reason: reason}
		im.dropped[k] = d
	}
	d.Count++
	if example != "" && len(d.Examples) < 3 {
		d.Examples = append(d.Examples, strconv.Quote(example))
	}
}

// Import reads a KeyAuth dump from r and writes its apps into the account (see the package
// doc). The report is answered also with an error when one was made before it failed.
func Import(ctx context.Context, st Store, r io.Reader, opt Options) (*Report, error) {
	if opt.AccountID == "" {
		return nil, errors.New("keyauth import: no account")
	}
	if opt.BatchSize <= 0 {
		opt.BatchSize = 1000
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	d, err := readDump(r)
	if err != nil {
		return nil, fmt.Errorf("keyauth import: %w", err)
	}
	im := &importer{st: st, opt: opt, now: storage.Truncate(opt.Now()), dropped: map[[2]string]*Dropped{},
		rep: &Report{Mapped: map[string]int{}}}
	selected, err := im.selectApps(ctx, d)
	if err != nil {
		return nil, err
	}
	if err := im.write(ctx, d, selected); err != nil {
		im.undo(ctx)
		return im.finish(d), err
	}
	return im.finish(d), nil
}

// selectApps picks the apps to import and refuses, before any write, an import that
// cannot be done whole.
func (im *importer) selectApps(ctx context.Context, d *dump) ([]*kaApp, error) {
	owners := map[string]bool{}
	var selected []*kaApp
	for _, secret := range d.appOrder {
		a := d.apps[secret]
		owners[a.owner] = true
		if im.opt.Owner == "" || a.owner == im.opt.Owner {
			selected = append(selected, a)
		}
	}
	if len(d.appOrder) == 0 {
		return nil, errors.New("keyauth import: the dump has no rows in an apps table: is it a KeyAuth database?")
	}
	if im.opt.Owner == "" && len(owners) > 1 {
		list := make([]string, 0, len(owners))
		for o := range owners {
			list = append(list, strconv.Quote(o))
		}
		sort.Strings(list)
		return nil, fmt.Errorf("keyauth import: the dump holds apps of %d KeyAuth owners (%s): name one with --owner", len(owners), strings.Join(list, ", "))
	}
	if len(selected) == 0 {
		return nil, fmt.Errorf("keyauth import: the dump has no app of owner %q", im.opt.Owner)
	}
	existing, err := im.st.ListApps(ctx, im.opt.AccountID)
	if err != nil {
		return nil, fmt.Errorf("keyauth import: list the account's apps: %w", err)
	}
	taken := map[string]bool{}
	for _, a := range existing {
		taken[strings.ToLower(a.Name)] = true
	}
	for _, a := range selected {
		name := appName(a.name)
		if taken[strings.ToLower(name)] {
			return nil, fmt.Errorf("keyauth import: the account already has an app named %q (rename or delete it first; nothing was written)", name)
		}
		taken[strings.ToLower(name)] = true
		if n := len(d.users[a.secret]); im.opt.MaxUsersPerApp > 0 && n > im.opt.MaxUsersPerApp {
			return nil, fmt.Errorf("keyauth import: app %q has %d users and the account's plan allows %d per app (choose a larger plan with `keyward admin set --plan`; nothing was written)",
				name, n, im.opt.MaxUsersPerApp)
		}
	}
	if im.opt.MaxApps > 0 && len(existing)+len(selected) > im.opt.MaxApps {
		return nil, fmt.Errorf("keyauth import: %d apps to import, %d already in the account, and the plan allows %d (choose a larger plan with `keyward admin set --plan`; nothing was written)",
			len(selected), len(existing), im.opt.MaxApps)
	}
	return selected, nil
}

func appName(n string) string {
	n = strings.TrimSpace(n)
	if n == "" {
		n = "KeyAuth app"
	}
	if r := []rune(n); len(r) > 64 {
		n = string(r[:64])
	}
	return n
}

func (im *importer) undo(ctx context.Context) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	for _, id := range im.created {
		_ = im.st.DeleteApp(uctx, im.opt.AccountID, id)
	}
}

func (im *importer) finish(d *dump) *Report {
	r := im.rep
	for _, v := range im.dropped {
		r.Dropped = append(r.Dropped, *v)
	}
	sort.Slice(r.Dropped, func(i, j int) bool {
		if r.Dropped[i].Kind != r.Dropped[j].Kind {
			return r.Dropped[i].Kind < r.Dropped[j].Kind
		}
		return r.Dropped[i].Reason < r.Dropped[j].Reason
	})
	for t, n := range d.unmapped {
		r.Tables = append(r.Tables, TableNote{Table: t, Rows: n, Why: unmapped[t]})
	}
	for t, n := range d.unknown {
		r.Tables = append(r.Tables, TableNote{Table: t, Rows: n, Why: "not a table of KeyAuth's schema this importer knows"})
	}
	sort.Slice(r.Tables, func(i, j int) bool { return r.Tables[i].Table < r.Tables[j].Table })
	return r
}

func (im *importer) write(ctx context.Context, d *dump, selected []*kaApp) error {
	for _, a := range selected {
		if err := im.writeApp(ctx, d, a); err != nil {
			return fmt.Errorf("keyauth import: app %q: %w (the apps it created were deleted again)", a.name, err)
		}
	}
	return nil
}

func (im *importer) writeApp(ctx context.Context, d *dump, ka *kaApp) error {
	secret := secrets.Random(32)
	now := im.now
	app := storage.App{ID: uuid.NewString(), AccountID: im.opt.AccountID, Name: appName(ka.name), Version: ka.version,
		Description: "Imported from KeyAuth", Enabled: ka.enabled && !ka.banned, Paused: ka.paused, LockHwid: ka.hwidLock,
		SecretHash: secrets.Hash(secret), SecretLast6: secret[len(secret)-6:], SigningKey: licensing.NewKey(),
		CreatedAt: now, UpdatedAt: now}
	if app.Version == "" || len(app.Version) > 32 {
		app.Version = "1.0.0"
	}
	rep := AppReport{Name: app.Name, ID: app.ID, Secret: secret}
	if ka.banned {
		rep.Notes = append(rep.Notes, "KeyAuth had banned this app: imported disabled")
	}
	if ka.vpnBlock {
		rep.Notes = append(rep.Notes, "VPN blocking is not mapped: Keyward has no VPN check (country rules exist)")
	}
	if ka.hashCheck {
		rep.Notes = append(rep.Notes, "the program hash check is not mapped: Keyward does not check client binaries")
	}
	if ka.format != "" {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the key mask %q is not kept: new keys are made by Keyward (with a prefix of your choice); imported keys keep their text", ka.format))
	}
	if ka.download != "" {
		rep.Notes = append(rep.Notes, "the download link is not mapped: upload the file to the app")
	}
	if err := im.st.CreateApp(ctx, app); err != nil {
		return fmt.Errorf("create app: %w", err)
	}
	im.created = append(im.created, app.ID)
	im.rep.Mapped["apps"]++

	lics, licByKey := im.licenses(d, ka, app)
	if err := batches(ctx, lics, im.opt.BatchSize, im.st.CreateLicenses); err != nil {
		return fmt.Errorf("create licenses: %w", err)
	}
	im.rep.Mapped["licenses"] += len(lics)
	rep.Licenses = len(lics)

	users, userByName := im.users(d, ka, app, licByKey)
	if err := batches(ctx, users, im.opt.BatchSize, im.st.CreateUsers); err != nil {
		return fmt.Errorf("create users: %w", err)
	}
	im.rep.Mapped["users"] += len(users)
	rep.Users = len(users)

	vars := im.appVariables(d, ka, app)
	if err := batches(ctx, vars, im.opt.BatchSize, im.st.CreateVariables); err != nil {
		return fmt.Errorf("create variables: %w", err)
	}
	im.rep.Mapped["variables"] += len(vars)
	uvars := im.userVariables(d, ka, app, userByName)
	if err := batches(ctx, uvars, im.opt.BatchSize, im.st.CreateVariables); err != nil {
		return fmt.Errorf("create user variables: %w", err)
	}
	im.rep.Mapped["user variables"] += len(uvars)

	rs := im.rules(d, ka, app)
	if err := batches(ctx, rs, im.opt.BatchSize, im.st.CreateRules); err != nil {
		return fmt.Errorf("create rules: %w", err)
	}
	im.rep.Mapped["rules"] += len(rs)

	for _, in := range im.integrations(ka, app) {
		if err := im.st.CreateIntegration(ctx, in); err != nil {
			return fmt.Errorf("create integration: %w", err)
		}
		im.rep.Mapped["integrations"]++
	}
	im.rep.Apps = append(im.rep.Apps, rep)
	return nil
}

func batches[T any](ctx context.Context, all []T, size int, write func(context.Context, []T) error) error {
	for start := 0; start < len(all); start += size {
		if err := write(ctx, all[start:min(start+size, len(all))]); err != nil {
			return err
		}
	}
	return nil
}

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
