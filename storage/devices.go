package storage

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Device is a hardware id registered by a user of an application (SPEC 2, Device).
type Device struct {
	ID       string
	AppID    string
	UserID   string
	Username string
	// HWID is unique per user.
	HWID       string
	PCName     string
	IP         string
	CreatedAt  time.Time
	LastSeenAt time.Time
}

// DeviceQuery selects devices of one app.
type DeviceQuery struct {
	// Search matches a case-insensitive substring of the hwid or the username.
	Search string
	// UserID, when set, keeps only that user's devices.
	UserID string
	Page   Page
}

// DeviceStore persists devices.
type DeviceStore interface {
	// CreateDevice inserts a device. ErrConflict when the user has a device with the hwid.
	CreateDevice(ctx context.Context, d Device) error
	// CreateDeviceWithin is CreateDevice unless d's user has limit devices already,
	// counting bound (the hwid bound to the user; "" for none) as one when none of the
	// user's devices has it: ErrLimit then, and nothing is written. ErrConflict, before
	// the limit, when the user has a device with d's hwid (RoomForDevice is the rule);
	// ErrNotFound when the app has no such user. The count and the insert are one step
	// for concurrent calls for the user, on every node: logins of one user from new
	// devices cannot pass its device limit together. limit is at least 1 (a user
	// without a limit has its devices made by CreateDevice).
	CreateDeviceWithin(ctx context.Context, d Device, limit int, bound string) error
	// ListDevices answers one page, newest first, and the total.
	ListDevices(ctx context.Context, appID string, q DeviceQuery) ([]Device, int, error)
	// DeleteDevice removes the app's device and answers it as it was (its user and hwid:
	// removing a user's bound device unbinds the user, SPEC 4.5).
	DeleteDevice(ctx context.Context, appID, id string) (Device, error)
	// DeleteUserDevices removes every device of the user and answers how many went.
	DeleteUserDevices(ctx context.Context, appID, userID string) (int, error)
}

// Token is an application access token (SPEC 2, Access token).
type Token struct {
	ID    string
	AppID string
	// Value is the token itself, unique per app. Owners list their tokens, so it is kept
	// readable (like license keys).
	Value     string
	Level     int
	MaxUses   int // 0 = unlimited
	UsedCount int
	ExpiresAt time.Time // zero = never
	Note      string
	Enabled   bool
	CreatedAt time.Time `audit:"-"`
	UpdatedAt time.Time `audit:"-"`
}

// TokenStore persists access tokens.
type TokenStore interface {
	// CreateTokens inserts all in one bulk write, or none (ErrConflict on a taken value).
	CreateTokens(ctx context.Context, ts []Token) error
	GetToken(ctx context.Context, appID, id string) (Token, error)
	GetTokenByValue(ctx context.Context, appID, value string) (Token, error)
	// ListTokens answers one page, newest first, and the total.
	ListTokens(ctx context.Context, appID string, p Page) ([]Token, int, error)
	// UpdateToken applies fn atomically (see UpdateAccount): concurrent validations that
	// each increment UsedCount below MaxUses never exceed it.
	UpdateToken(ctx context.Context, appID, id string, fn func(*Token) error) (Token, error)
	DeleteToken(ctx context.Context, appID, id string) error
}

// RoomForDevice is CreateDeviceWithin's rule, given the hwids of the user's devices: nil
// when a device with hwid may be added; ErrConflict when the user has it already (a
// concurrent login of that device registered it: that, not the limit it counts in);
// ErrLimit when the devices, and bound when none of them has it, number limit or more.
func RoomForDevice(hwids []string, hwid string, limit int, bound string) error {
	if slices.Contains(hwids, hwid) {
		return fmt.Errorf("%w: the user has the device", ErrConflict)
	}
	count := len(hwids)
	if bound != "" && !slices.Contains(hwids, bound) {
		count++
	}
	if count >= limit {
		return fmt.Errorf("%w: %d devices of %d", ErrLimit, count, limit)
	}
	return nil
}
