package keyauthimport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core/licensing"
	"github.com/keyward/keyward/core/secrets"
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
