package apps

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/storage"
)

// crockford is Crockford's base32 alphabet: no I, L, O or U, so keys read back unambiguously.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// keyGroups of keyGroupLen characters, 5 bits each: 4×5×5 = 100 bits of entropy.
const (
	keyGroups   = 4
	keyGroupLen = 5
)

var prefixPattern = regexp.MustCompile(`^[A-Za-z0-9]{1,16}$`)

// newLicenseKey returns prefix-XXXXX-XXXXX-XXXXX-XXXXX from crypto/rand (prefix optional).
func newLicenseKey(prefix string) string {
	raw := make([]byte, keyGroups*keyGroupLen)
	_, _ = rand.Read(raw)
	var b strings.Builder
	if prefix != "" {
		b.WriteString(strings.ToUpper(prefix))
		b.WriteByte('-')
	}
	for i, r := range raw {
		if i > 0 && i%keyGroupLen == 0 {
			b.WriteByte('-')
		}
		b.WriteByte(crockford[r&31]) // 256 is a multiple of 32: no modulo bias
	}
	return b.String()
}

// NewLicenseKey makes a key as CreateLicenses does (store sales issue theirs with it).
func NewLicenseKey(prefix string) string { return newLicenseKey(prefix) }

// CreateLicensesInput is the body of a license creation (SPEC 4.4).
type CreateLicensesInput struct {
	Count     *int
	Level     *int
	MaxUses   *int
	Duration  *int64
	ExpiresAt *string
	Prefix    string
	Note      string
	// MaxSeats bounds the license's concurrent sessions (0 = unlimited).
	MaxSeats *int
}

// CreateLicenses makes count keys in one bulk write.
func (s *Service) CreateLicenses(ctx context.Context, o Owner, appID string, in CreateLicensesInput) ([]storage.License, error) {
	count := 1
	if in.Count != nil {
		count = *in.Count
	}
	expires, err := parseTime("expiresAt", in.ExpiresAt)
	if err != nil {
		return nil, err
	}
	if err := core.FirstError(intIn("count", &count, 1, MaxLicenseBatch), intIn("level", in.Level, 0, maxLevel),
		intIn("maxUses", in.MaxUses, 0, maxUses), int64In("duration", in.Duration, 0, maxDuration),
		maxLen("note", &in.Note, maxNote), intIn("maxSeats", in.MaxSeats, 0, MaxSeats)); err != nil {
		return nil, err
	}
	if in.Prefix != "" && !prefixPattern.MatchString(in.Prefix) {
		return nil, core.Invalid("prefix", "prefix must be 1 to %d letters or digits", maxPrefix)
	}
	if expires != nil && !expires.IsZero() && !expires.After(s.clock()) {
		return nil, core.Invalid("expiresAt", "expiresAt must be in the future")
	}
	if _, err := s.app(ctx, o, appID); err != nil {
		return nil, err
	}
	now := s.clock()
	out := make([]storage.License, count)
	for i := range out {
		l := storage.License{ID: uuid.NewString(), AppID: appID, Key: newLicenseKey(in.Prefix), Level: 1, MaxUses: 0,
			DeviceLimit: 1, Note: in.Note, Enabled: true, CreatedAt: now, UpdatedAt: now}
		core.Set(&l.Level, in.Level)
		core.Set(&l.MaxUses, in.MaxUses)
		core.Set(&l.Duration, in.Duration)
		core.Set(&l.ExpiresAt, expires)
		core.Set(&l.MaxSeats, in.MaxSeats)
		out[i] = l
	}
	octx, ch := s.begin(ctx)
	ch.Add(event(appID, events.LicenseCreate, "", fmt.Sprintf("%d license(s) created", count), map[string]any{"count": count}))
	for _, l := range out {
		audit.Created(ctx, l)
	}
	if err := s.store.CreateLicenses(octx, out); err != nil {
		return nil, fmt.Errorf("apps: create licenses: %w", err)
	}
	if err := ch.Commit(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// LicenseQueryInput is the list query of SPEC 4.4 as strings from the URL.
type LicenseQueryInput struct {
	Search, SortBy, SortOrder, Used, Banned, Expired string
	Page                                             storage.Page
}

// ListLicenses answers one page of the app's licenses and the total.
func (s *Service) ListLicenses(ctx context.Context, o Owner, appID string, in LicenseQueryInput) ([]storage.License, int, storage.Page, error) {
	q := storage.LicenseQuery{Search: in.Search, Now: s.clock()}
	var err error
	if q.Page, err = page(in.Page); err != nil {
		return nil, 0, q.Page, err
	}
	if err := maxLen("search", &in.Search, maxSearch); err != nil {
		return nil, 0, q.Page, err
	}
	switch in.SortBy {
	case "":
		q.SortBy = storage.LicenseSortCreatedAt
	case storage.LicenseSortKey, storage.LicenseSortCreatedAt, storage.LicenseSortExpiresAt, storage.LicenseSortUsedCount:
		q.SortBy = in.SortBy
	default:
		return nil, 0, q.Page, core.Invalid("sortBy", "sortBy must be one of key, created_at, expires_at, used_count")
	}
	if q.Desc, err = sortOrder(in.SortOrder); err != nil {
		return nil, 0, q.Page, err
	}
	if q.Used, err = optionalBool("used", in.Used); err != nil {
		return nil, 0, q.Page, err
	}
	if q.Banned, err = optionalBool("banned", in.Banned); err != nil {
		return nil, 0, q.Page, err
	}
	switch in.Expired {
	case "", "false":
	case "true":
		q.Expired = true
	default:
		return nil, 0, q.Page, core.Invalid("expired", "expired must be true or false")
	}
	if _, err := s.app(ctx, o, appID); err != nil {
		return nil, 0, q.Page, err
	}
	list, total, err := s.store.ListLicenses(ctx, appID, q)
	if err != nil {
		return nil, 0, q.Page, fmt.Errorf("apps: list licenses: %w", err)
	}
	return list, total, q.Page, nil
}

func (s *Service) license(ctx context.Context, o Owner, appID, id string) (storage.License, error) {
	if _, err := s.app(ctx, o, appID); err != nil {
		return storage.License{}, err
	}
	l, err := s.store.GetLicense(ctx, appID, id)
	return l, notFound(err, "license")
}

// GetLicense answers one license.
func (s *Service) GetLicense(ctx context.Context, o Owner, appID, id string) (storage.License, error) {
	return s.license(ctx, o, appID, id)
}

// UpdateLicenseInput holds the members to change (SPEC 4.4).
type UpdateLicenseInput struct {
	Level, MaxUses, DeviceLimit *int
	MaxSeats                    *int
	Duration                    *int64
	DisplayName, Note           *string
	DiscordID                   *string
	Enabled, Banned             *bool
}

var discordIDPattern = regexp.MustCompile(`^[0-9]{1,25}$`)

// UpdateLicense changes only the given members.
func (s *Service) UpdateLicense(ctx context.Context, o Owner, appID, id string, in UpdateLicenseInput) (storage.License, error) {
	if err := core.FirstError(intIn("level", in.Level, 0, maxLevel), intIn("maxUses", in.MaxUses, 0, maxUses),
		intIn("deviceLimit", in.DeviceLimit, 0, maxDeviceLimit), int64In("duration", in.Duration, 0, maxDuration),
		maxLen("displayName", in.DisplayName, maxDisplayName), maxLen("note", in.Note, maxNote),
		intIn("maxSeats", in.MaxSeats, 0, MaxSeats)); err != nil {
		return storage.License{}, err
	}
	if in.DiscordID != nil && *in.DiscordID != "" && !discordIDPattern.MatchString(*in.DiscordID) {
		return storage.License{}, core.Invalid("discordId", "discordId must be a numeric id")
	}
	if _, err := s.license(ctx, o, appID, id); err != nil {
		return storage.License{}, err
	}
	octx, ch := s.begin(ctx)
	l, err := s.store.UpdateLicense(octx, appID, id, audit.Track(ctx, func(l *storage.License) error {
		core.Set(&l.Level, in.Level)
		core.Set(&l.MaxUses, in.MaxUses)
		core.Set(&l.DeviceLimit, in.DeviceLimit)
		core.Set(&l.MaxSeats, in.MaxSeats)
		core.Set(&l.Duration, in.Duration)
		core.Set(&l.DisplayName, in.DisplayName)
		core.Set(&l.Note, in.Note)
		core.Set(&l.DiscordID, in.DiscordID)
		core.Set(&l.Enabled, in.Enabled)
		core.Set(&l.Banned, in.Banned)
		l.UpdatedAt = s.clock()
		ch.Set(event(appID, events.LicenseUpdate, l.UsedBy, "license "+l.Key+" updated", map[string]any{"licenseId": l.ID}))
		return nil
	}))
	if err != nil {
		return storage.License{}, notFound(err, "license")
	}
	if err := ch.Commit(ctx); err != nil {
		return storage.License{}, err
	}
	return l, nil
}

// DeleteLicense removes one license.
func (s *Service) DeleteLicense(ctx context.Context, o Owner, appID, id string) error {
	l, err := s.license(ctx, o, appID, id)
	if err != nil {
		return err
	}
	octx, ch := s.begin(ctx)
	ch.Add(event(appID, events.LicenseDelete, l.UsedBy, "license "+l.Key+" deleted", map[string]any{"licenseId": l.ID}))
	if err := s.store.DeleteLicense(octx, appID, id); err != nil {
		return notFound(err, "license")
	}
	if err := ch.Commit(ctx); err != nil {
		return err
	}
	return nil
}

// bulkDeletion is what the audit entry of a bulk deletion of licenses holds (its after):
// the filter or the ids asked for, and how many were deleted.
type bulkDeletion struct {
	Filter string
	IDs    []string `audit:"ids"`
	Count  int
}

// BulkDeleteLicenses removes licenses by ids or by a filter (used, expired, banned).
func (s *Service) BulkDeleteLicenses(ctx context.Context, o Owner, appID string, ids []string, filter string) (int, error) {
	switch {
	case len(ids) > 0 && filter != "":
		return 0, core.Invalid("ids", "give ids or filter, not both")
	case len(ids) > maxBulkIDs:
		return 0, core.Invalid("ids", "ids may hold at most %d ids", maxBulkIDs)
	case len(ids) == 0 && filter == "":
		return 0, core.Invalid("ids", "give ids (an array of license ids) or filter (used, expired or banned)")
	}
	if filter != "" && filter != storage.LicenseFilterUsed && filter != storage.LicenseFilterExpired && filter != storage.LicenseFilterBanned {
		return 0, core.Invalid("filter", "filter must be used, expired or banned")
	}
	for _, id := range ids {
		if id == "" || len(id) > 64 {
			return 0, core.Invalid("ids", "ids must be license ids")
		}
	}
	if _, err := s.app(ctx, o, appID); err != nil {
		return 0, err
	}
	// The audit entry (issue 21) names the app and says what was asked and how many went:
	// the store call takes it with the deletions (SQLite: in their transaction, the count
	// told below before it is taken; MongoDB: staged before them, the count set by the
	// engine once they are done).
	asked := &bulkDeletion{Filter: filter, IDs: ids}
	audit.Changed(ctx, nil, asked)
	// The event names how many were deleted: the engine tells the count in the delete's
	// transaction (SQLite: the event is stored with the delete), else Counted below does.
	octx, ch := s.begin(ctx)
	ch.OnCount(func(n int) []events.Event {
		asked.Count = n
		if n == 0 {
			return nil
		}
		return []events.Event{event(appID, events.LicenseDelete, "", fmt.Sprintf("%d license(s) deleted", n), map[string]any{"count": n, "filter": filter})}
	})
	var n int
	var err error
	if filter != "" {
		n, err = s.store.DeleteLicensesWhere(octx, appID, filter, s.clock())
	} else {
		n, err = s.store.DeleteLicenses(octx, appID, ids)
	}
	if err != nil {
		return n, err
	}
	ch.Counted(n)
	if err := ch.Commit(ctx); err != nil {
		return n, err
	}
	return n, nil
}

// VerifyLicense answers the license with the key, or NOT_FOUND, EXPIRED or BANNED.
func (s *Service) VerifyLicense(ctx context.Context, o Owner, appID, key string) (storage.License, error) {
	if err := core.Required("key", key); err != nil {
		return storage.License{}, err
	}
	if len(key) > 128 {
		return storage.License{}, core.Invalid("key", "key must be at most 128 characters")
	}
	if _, err := s.app(ctx, o, appID); err != nil {
		return storage.License{}, err
	}
	l, err := s.store.GetLicenseByKey(ctx, appID, strings.TrimSpace(key))
	if errors.Is(err, storage.ErrNotFound) {
		return storage.License{}, core.E(core.CodeNotFound, "license not found")
	} else if err != nil {
		return storage.License{}, fmt.Errorf("apps: verify license: %w", err)
	}
	switch {
	case l.Banned:
		return storage.License{}, core.E(core.CodeBanned, "license is banned")
	case !l.ExpiresAt.IsZero() && !l.ExpiresAt.After(s.clock()):
		return storage.License{}, core.E(core.CodeExpired, "license expired")
	}
	return l, nil
}

// LicenseUser answers the user who activated the license (admin only; checked at the edge).
func (s *Service) LicenseUser(ctx context.Context, o Owner, appID, id string) (storage.AppUser, error) {
	l, err := s.license(ctx, o, appID, id)
	if err != nil {
		return storage.AppUser{}, err
	}
	if l.UsedBy == "" {
		return storage.AppUser{}, core.E(core.CodeNotFound, "the license has not been activated")
	}
	u, err := s.store.GetUserByUsername(ctx, appID, l.UsedBy)
	return u, notFound(err, "user of the license")
}
