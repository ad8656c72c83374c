package accounts

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/storage"
)

// CreateInput is an administrator's new account: created verified, with no mail sent.
type CreateInput struct {
	Username string
	Email    string
	Password string
	Role     string // user (default) or admin
}

// CreateAccount creates a verified account directly (the `keyward admin create` command).
func (s *Service) CreateAccount(ctx context.Context, in CreateInput) (storage.Account, error) {
	in.Email = normalizeEmail(in.Email)
	if in.Role == "" {
		in.Role = storage.RoleUser
	}
	if err := core.FirstError(core.ValidateUsername("username", in.Username), core.ValidateEmail("email", in.Email),
		core.ValidatePassword("password", in.Password), validateRole(in.Role)); err != nil {
		return storage.Account{}, err
	}
	hash, err := s.hasher.Hash(ctx, in.Password)
	if err != nil {
		return storage.Account{}, err
	}
	a := s.newAccount(in.Username, in.Email, hash, in.Role)
	a.EmailVerified = true
	if err := s.store.CreateAccount(ctx, a); err != nil {
		if errors.Is(err, storage.ErrConflict) {
			return storage.Account{}, core.E(core.CodeConflict, "username or email already in use")
		}
		return storage.Account{}, fmt.Errorf("accounts: create: %w", err)
	}
	return a, nil
}

func validateRole(role string) error {
	if role != storage.RoleUser && role != storage.RoleAdmin {
		return core.Invalid("role", "role must be user or admin")
	}
	return nil
}

// Change is an administrator's change of an account: only the given members change.
type Change struct {
	Plan *string
	Role *string
}

// ChangeAccount applies an administrator's change to the account with the id.
func (s *Service) ChangeAccount(ctx context.Context, id string, c Change) (View, error) {
	if c.Plan == nil && c.Role == nil {
		return View{}, core.Invalid("plan", "give plan, role or both")
	}
	var planName string
	if c.Plan != nil {
		p, ok := s.plans.Get(*c.Plan)
		if !ok {
			return View{}, core.Invalid("plan", "plan must be one of free, pro, business")
		}
		planName = p.Name
	}
	if c.Role != nil {
		if err := validateRole(*c.Role); err != nil {
			return View{}, err
		}
	}
	update := s.store.UpdateAccount
	if c.Plan != nil {
		update = s.updatePlan // the plan change's events are stored with it
	}
	// The change's own write carries its audit entry (audit.Own; a plan change's events too).
	a, err := update(audit.Own(ctx), id, audit.Track(ctx, func(a *storage.Account) error {
		if c.Plan != nil {
			a.Plan = planName
		}
		if c.Role != nil {
			a.Role = *c.Role
		}
		a.UpdatedAt = s.now()
		return nil
	}))
	if errors.Is(err, storage.ErrNotFound) {
		return View{}, core.E(core.CodeNotFound, "account not found")
	} else if err != nil {
		return View{}, fmt.Errorf("accounts: change: %w", err)
	}
	return s.view(ctx, a)
}

// ChangeAccountByUsername is ChangeAccount for the command line, which knows usernames.
func (s *Service) ChangeAccountByUsername(ctx context.Context, username string, c Change) (View, error) {
	a, err := s.store.GetAccountByUsername(ctx, strings.TrimSpace(username))
	if errors.Is(err, storage.ErrNotFound) {
		return View{}, core.E(core.CodeNotFound, "no account named %q", username)
	} else if err != nil {
		return View{}, fmt.Errorf("accounts: change: %w", err)
	}
	return s.ChangeAccount(ctx, a.ID, c)
}

// ListAccounts answers one page of accounts for administrators.
func (s *Service) ListAccounts(ctx context.Context, q storage.AccountQuery) ([]View, int, error) {
	list, total, err := s.store.ListAccounts(ctx, q)
	if err != nil {
		return nil, 0, fmt.Errorf("accounts: list: %w", err)
	}
	out := make([]View, 0, len(list))
	for _, a := range list {
		v, err := s.view(ctx, a)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, v)
	}
	return out, total, nil
}
