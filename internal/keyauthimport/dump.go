package keyauthimport

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"time"
)

// The KeyAuth tables that map (readDump keeps their rows).
const (
	tApps, tUsers, tKeys, tSubs, tSubscriptions = "apps", "users", "keys", "subs", "subscriptions"
	tVars, tUserVars, tBans                     = "vars", "uservars", "bans"
)

// kaApp is a row of KeyAuth's apps table: the columns that map or that the report names.
type kaApp struct {
	owner, name, secret, version, webhook, auditWebhook, format string
	enabled, paused, hwidLock                                   bool
	banned, vpnBlock, hashCheck                                 bool
	download                                                    string
}

// kaSub is a row of KeyAuth's subs table: a user's subscription, by name, to a unix time.
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
