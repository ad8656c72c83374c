package storage

import (
	"context"
	"time"
)

// UserStanding is what decides whether a user may hold a client socket (SPEC 4.11): the
// few fields of AppUser that admission and the 30 s revalidation check, read without the
// rest of the record (a socket's admission read the whole user, 30 columns, for these).
type UserStanding struct {
	ID        string
	Username  string
	Enabled   bool
	Banned    bool
	BanReason string
	// ExpiresAt is when the user's access ends; zero means never.
	ExpiresAt time.Time
}

// Standing is u's standing.
func (u AppUser) Standing() UserStanding {
	return UserStanding{ID: u.ID, Username: u.Username, Enabled: u.Enabled, Banned: u.Banned, BanReason: u.BanReason, ExpiresAt: u.ExpiresAt}
}

// UserStandingStore reads users' standings.
type UserStandingStore interface {
	// GetUserStandings reads the standing of the app's users with the given ids in one
	// query, in no particular order; ids that name no user of the app are left out (as
	// GetUsers).
	GetUserStandings(ctx context.Context, appID string, ids []string) ([]UserStanding, error)
}
