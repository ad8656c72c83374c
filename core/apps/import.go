package apps

import (
	"context"
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

// MaxLicenseImport bounds the keys one import request brings.
const MaxLicenseImport = 1000

// importedKeyPattern is what an imported key may be: the keys other systems hand out
// (letters, digits, '-', '_', '.'), 4 to 64 characters.
var importedKeyPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{4,64}$`)

// ImportLicenseInput is one key brought from elsewhere with its terms.
type ImportLicenseInput struct {
	Key      string
	Level    *int
	MaxUses  *int
	Duration *int64
	Note     string
}

// ImportResult is one imported key's outcome: the license made, or why not.
type ImportResult struct {
	Key     string
	License storage.License
	Err     error
}

// ImportLicenses adds keys made elsewhere (another licensing system, a store) to the app,
// each with its own terms. A key that is malformed, repeated in the request or already the
// app's is that row's error; the others are written in one bulk write.
func (s *Service) ImportLicenses(ctx context.Context, o Owner, appID string, in []ImportLicenseInput) ([]ImportResult, error) {
	if len(in) == 0 || len(in) > MaxLicenseImport {
		return nil, core.Invalid("licenses", "import 1 to %d keys per request (%d given)", MaxLicenseImport, len(in))
	}
	if _, err := s.app(ctx, o, appID); err != nil {
		return nil, err
	}
	now := s.clock()
	out := make([]ImportResult, len(in))
	seen := make(map[string]bool, len(in))
	var batch []storage.License
	var slots []int
	for i, r := range in {
		key := strings.TrimSpace(r.Key)
		out[i].Key = key
		if !importedKeyPattern.MatchString(key) {
			out[i].Err = core.Invalid("key", "a key is 4 to 64 letters, digits, '-', '_' or '.'")
			continue
		}
		if err := core.FirstError(intIn("level", r.Level, 0, maxLevel), intIn("maxUses", r.MaxUses, 0, maxUses),
			int64In("duration", r.Duration, 0, maxDuration), maxLen("note", &r.Note, maxNote)); err != nil {
			out[i].Err = err
			continue
		}
		if seen[key] {
			out[i].Err = core.E(core.CodeConflict, "the key %s is twice in the request", key)
			continue
		}
		seen[key] = true
		if _, err := s.store.GetLicenseByKey(ctx, appID, key); err == nil {
			out[i].Err = core.E(core.CodeConflict, "the key %s exists already", key)
			continue
		} else if !errors.Is(err, storage.ErrNotFound) {
			return nil, fmt.Errorf("apps: import licenses: %w", err)
		}
		l := storage.License{ID: uuid.NewString(), AppID: appID, Key: key, Level: 1, DeviceLimit: 1, Note: r.Note, Enabled: true,
			CreatedAt: now, UpdatedAt: now}
		core.Set(&l.Level, r.Level)
		core.Set(&l.MaxUses, r.MaxUses)
		core.Set(&l.Duration, r.Duration)
		batch = append(batch, l)
		slots = append(slots, i)
	}
	if len(batch) == 0 {
		return out, nil
	}
	// The import's event is stored with its licenses (SQLite: in the insert's
	// transaction; MongoDB: Commit appends it before the answer).
	octx, ch := s.begin(ctx)
	ch.Add(event(appID, events.LicenseCreate, "", fmt.Sprintf("%d license(s) imported", len(batch)), map[string]any{"count": len(batch)}))
	for _, l := range batch { // the import's one audit entry, stored with the write
		audit.Changed(ctx, audit.Made{ID: l.ID}, audit.Made{ID: l.ID, Name: l.Key})
	}
	if err := s.store.CreateLicenses(octx, batch); err != nil {
		if errors.Is(err, storage.ErrConflict) {
			return nil, core.E(core.CodeConflict, "a key was added meanwhile; import again")
		}
		return nil, fmt.Errorf("apps: import licenses: %w", err)
	}
	for j, i := range slots {
		out[i].License = batch[j]
	}
	if err := ch.Commit(ctx); err != nil {
		return nil, err
	}
	return out, nil
}
