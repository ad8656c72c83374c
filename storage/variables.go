package storage

import (
	"context"
	"time"
)

// Variable scopes: an app variable belongs to the app, a user variable to one app user,
// a license variable to one license (SPEC 2).
const (
	ScopeApp     = "app"
	ScopeUser    = "user"
	ScopeLicense = "license"
)

// Variable is an app, user or license variable. Keys are unique within their scope and
// owner (case-sensitive, as clients look them up exactly).
type Variable struct {
	ID    string
	AppID string
	Scope string
	// OwnerID is "" for app variables, the user id or the license id otherwise.
	OwnerID   string
	Key       string
	Value     string
	Type      string    // STRING, INT, FLOAT, BOOL or JSON; validated by the caller
	CreatedAt time.Time `audit:"-"`
	UpdatedAt time.Time `audit:"-"`
}

// VariableStore persists variables.
type VariableStore interface {
	// CreateVariables inserts all, or none: ErrConflict when a key exists in its scope and
	// owner (or twice in the batch).
	CreateVariables(ctx context.Context, vs []Variable) error
	GetVariable(ctx context.Context, appID, id string) (Variable, error)
	GetVariableByKey(ctx context.Context, appID, scope, ownerID, key string) (Variable, error)
	// ListVariables answers the variables of one scope and owner, sorted by key.
	ListVariables(ctx context.Context, appID, scope, ownerID string) ([]Variable, error)
	// UpdateVariable applies fn atomically (see UpdateAccount); ErrConflict on a taken key.
	UpdateVariable(ctx context.Context, appID, id string, fn func(*Variable) error) (Variable, error)
	DeleteVariable(ctx context.Context, appID, id string) error
}

// File is the record of an uploaded file; its bytes live in a blobs.Store under BlobKey.
type File struct {
	ID      string
	AppID   string
	Name    string // display name; several files may share one (versions)
	Version string
	Size    int64
	SHA256  string // hex
	BlobKey string `audit:"-"`
	// ContentType is what the upload declared, for the dashboard download.
	ContentType string
	CreatedAt   time.Time `audit:"-"`
	UpdatedAt   time.Time `audit:"-"`
}

// FileStore persists file records.
type FileStore interface {
	CreateFile(ctx context.Context, f File) error
	GetFile(ctx context.Context, appID, id string) (File, error)
	// LatestFile answers the newest file (by CreatedAt, then id) with the name, or of the
	// whole app when name is "".
	LatestFile(ctx context.Context, appID, name string) (File, error)
	// ListFiles answers every file of the app, newest first.
	ListFiles(ctx context.Context, appID string) ([]File, error)
	UpdateFile(ctx context.Context, appID, id string, fn func(*File) error) (File, error)
	DeleteFile(ctx context.Context, appID, id string) error
}

// Rule is an allow/deny rule of an application (SPEC 2, Rule). (AppID, Type, Action,
// Value) is unique.
type Rule struct {
	ID        string
	AppID     string
	Type      string // ip, hwid, country
	Action    string // blacklist, whitelist
	Value     string // normalised by the caller
	Note      string
	Enabled   bool
	CreatedAt time.Time `audit:"-"`
	UpdatedAt time.Time `audit:"-"`
}

// RuleQuery filters rules; empty members match everything.
type RuleQuery struct {
	Type, Action string
}

// RuleStore persists rules.
type RuleStore interface {
	// CreateRules inserts all, or none (ErrConflict on a duplicate).
	CreateRules(ctx context.Context, rs []Rule) error
	GetRule(ctx context.Context, appID, id string) (Rule, error)
	// ListRules answers the app's rules, oldest first.
	ListRules(ctx context.Context, appID string, q RuleQuery) ([]Rule, error)
	UpdateRule(ctx context.Context, appID, id string, fn func(*Rule) error) (Rule, error)
	DeleteRule(ctx context.Context, appID, id string) error
}
