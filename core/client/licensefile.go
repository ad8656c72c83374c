package client

import (
	"context"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/licensing"
)

// LicenseFiles answers the issuer of offline license files over the service's store.
func (s *Service) LicenseFiles() *licensing.Files {
	return licensing.NewFiles(s.d.Store, s.d.Bus, s.d.Now)
}

// LicenseFile issues an offline license file of the signed-in user's active license,
// bound to the user's HWID (docs/LICENSING.md). A banned user, a user without a license,
// and a banned, disabled, expired or deleted license get none.
func (s *Service) LicenseFile(ctx context.Context, call Call) (licensing.Issued, error) {
	u, err := s.CurrentUser(ctx, call)
	if err != nil {
		return licensing.Issued{}, err
	}
	if u.Banned {
		return licensing.Issued{}, core.E(core.CodeBanned, "the user is banned")
	}
	if u.LicenseID == "" {
		return licensing.Issued{}, core.E(core.CodeNotFound, "the user has no active license")
	}
	return s.LicenseFiles().Issue(ctx, call.Snap.App, u.LicenseID,
		licensing.Request{By: "client", IP: call.Caller.IP, User: &u})
}
