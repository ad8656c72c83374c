package storage

import (
	"context"
	"time"
)

// WSHook is a WebSocket hook of an application (SPEC 2, WebSocket hook): when a client
// socket sends a message whose type is Event and every condition holds, the actions run.
// The hooks package validates and compiles hooks; storage keeps them as given.
type WSHook struct {
	ID          string
	AppID       string
	Name        string
	Event       string
	Description string
	// Conditions and Actions are the hook's condition and action objects as JSON arrays
	// (hooks.Condition, hooks.Action), kept as bytes so that the engines do not depend on
	// the hook model. An engine answers them byte for byte as they were written, never
	// re-encoded; no bytes (nil or empty) read back as nil on every engine.
	Conditions []byte
	Actions    []byte
	Enabled    bool
	// Priority orders the hooks of an app: lower runs first (0 to 999).
	Priority  int
	CreatedAt time.Time `audit:"-"`
	UpdatedAt time.Time `audit:"-"`
}

// WSHookStore persists WebSocket hooks. Deleting an app deletes its hooks.
type WSHookStore interface {
	// CreateWSHook inserts a hook; ErrNotFound when its app does not exist, ErrConflict
	// when its id is taken (by a hook of any app).
	CreateWSHook(ctx context.Context, h WSHook) error
	// GetWSHook reads the app's hook by id; ErrNotFound when the app has none of that id
	// (a hook of another app is not found).
	GetWSHook(ctx context.Context, appID, id string) (WSHook, error)
	// ListWSHooks answers every hook of the app ordered by priority, then creation time,
	// then id; none for an unknown app.
	ListWSHooks(ctx context.Context, appID string) ([]WSHook, error)
	// CountWSHooks answers how many hooks the app has.
	CountWSHooks(ctx context.Context, appID string) (int, error)
	// UpdateWSHook applies fn atomically (see UpdateAccount). The id, the app and the
	// creation time are kept whatever fn sets; ErrNotFound as for GetWSHook.
	UpdateWSHook(ctx context.Context, appID, id string, fn func(*WSHook) error) (WSHook, error)
	// DeleteWSHook removes the hook; ErrNotFound when the app has none of that id.
	DeleteWSHook(ctx context.Context, appID, id string) error
}
