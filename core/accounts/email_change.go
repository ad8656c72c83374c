package accounts

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/mail"
	"github.com/keyward/keyward/storage"
)

// Changing the email (issue 25) asks both addresses: the new one gets a link that makes the
// change, the old one a notice with a link that cancels it. Nothing changes until the new
// address confirms, so a stolen session cannot move the account to an address the owner
// never sees; the old address hears of it first and can stop it.
const (
	// EmailChangeTTL is how long the links of an email change work.
	EmailChangeTTL = 24 * time.Hour
	// Token purposes: the new address's confirmation and the old address's cancel.
	tokenEmailChange       = "email_change"
	tokenEmailChangeCancel = "email_change_cancel"
	// randomPart is the length of secrets.Random(32): the confirmation token is that
	// random part followed by the new address (base64url), so the address needs no column
	// of its own and is trusted only once the whole token's hash is found.
	randomPart = 43
)

var errBadEmailToken = core.Invalid("token", "email change token is invalid, used or expired")

// RequestEmailChange starts moving the account to newEmail (the edge asks for a recent
// proof of identity first). The answer is the same whether or not the address is free: a
// taken address is told so by mail, with no link.
func (s *Service) RequestEmailChange(ctx context.Context, p Principal, newEmail string) (string, error) {
	if err := requireJWT(p, "change the email"); err != nil {
		return "", err
	}
	newEmail = normalizeEmail(newEmail)
	if err := core.ValidateEmail("email", newEmail); err != nil {
		return "", err
	}
	if strings.EqualFold(newEmail, p.Account.Email) {
		return "", core.Invalid("email", "this is the account's address already")
	}
	const msg = "a confirmation link is on its way to the new address; the email changes when it is followed (the current address is told, with a link that cancels)"
	for _, purpose := range []string{tokenEmailChange, tokenEmailChangeCancel} {
		if err := s.store.DeleteAccountTokens(ctx, p.Account.ID, purpose); err != nil {
			return "", fmt.Errorf("accounts: email change: %w", err)
		}
	}
	_, err := s.store.GetAccountByEmail(ctx, newEmail)
	switch {
	case err == nil:
		s.mailer.Enqueue(mail.Message{To: newEmail, Subject: "Your Keyward email change", Text: fmt.Sprintf(
			"Hello,\n\nsomeone (maybe you) asked to move a Keyward account to this address, which already belongs to an account. "+
				"Nothing was changed. If this was not you, ignore this email.\n\n%s\n", s.cfg.PublicURL)})
		return msg, nil
	case !errors.Is(err, storage.ErrNotFound):
		return "", fmt.Errorf("accounts: email change: %w", err)
	}
	random := secrets.Random(32)
	confirm := random + base64.RawURLEncoding.EncodeToString([]byte(newEmail))
	now := s.now()
	// The confirmation token is the request's change: its write carries the audit entry.
	if err := s.store.CreateAccountToken(audit.Own(ctx), storage.AccountToken{Hash: secrets.Hash(confirm), AccountID: p.Account.ID,
		Purpose: tokenEmailChange, ExpiresAt: now.Add(EmailChangeTTL), CreatedAt: now}); err != nil {
		return "", fmt.Errorf("accounts: email change: %w", err)
	}
	cancel, err := s.newMailedToken(ctx, p.Account.ID, tokenEmailChangeCancel, EmailChangeTTL)
	if err != nil {
		return "", err
	}
	s.mailer.Enqueue(mail.Message{To: newEmail, Subject: "Confirm your new Keyward email address", Text: fmt.Sprintf(
		"Hello %s,\n\nconfirm this address as the new email of your Keyward account:\n\n%s/confirm-email?token=%s\n\n"+
			"Or send this token to POST /api/auth/change-email/confirm:\n\ntoken: %s\n\nThe link is valid for 24 hours. "+
			"If you did not ask for this, ignore this email: nothing changes.\n",
		p.Account.Username, s.cfg.PublicURL, confirm, confirm)})
	s.mailer.Enqueue(mail.Message{To: p.Account.Email, Subject: "Your Keyward email is about to change", Text: fmt.Sprintf(
		"Hello %s,\n\nsomeone signed in to your Keyward account asked to change its email to %s. It changes when that "+
			"address confirms. If this was not you, cancel it, then change your password and sign the other sessions out:\n\n"+
			"%s/cancel-email-change?token=%s\n\nOr send this token to POST /api/auth/change-email/cancel:\n\ntoken: %s\n",
		p.Account.Username, newEmail, s.cfg.PublicURL, cancel, cancel)})
	s.log.Info("email change asked", "accountId", p.Account.ID)
	return msg, nil
}

// ConfirmEmailChange makes the change the token names (the new address proved it reads its
// mail) and tells the old address.
func (s *Service) ConfirmEmailChange(ctx context.Context, token string) (string, error) {
	if err := core.Required("token", token); err != nil {
		return "", err
	}
	if len(token) <= randomPart || len(token) > randomPart+2*core.MaxEmailLength {
		return "", errBadEmailToken
	}
	t, err := s.store.ConsumeAccountToken(ctx, tokenEmailChange, secrets.Hash(token), s.now())
	if errors.Is(err, storage.ErrNotFound) {
		return "", errBadEmailToken
	} else if err != nil {
		return "", fmt.Errorf("accounts: confirm email change: %w", err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(token[randomPart:])
	if err != nil {
		return "", errBadEmailToken // cannot happen for a token this server made
	}
	newEmail := string(raw)
	var old string
	a, err := s.store.UpdateAccount(ctx, t.AccountID, audit.Track(ctx, func(a *storage.Account) error {
		old = a.Email
		a.Email = newEmail
		a.EmailVerified = true
		a.UpdatedAt = s.now()
		return nil
	}))
	if errors.Is(err, storage.ErrConflict) {
		return "", core.E(core.CodeConflict, "this address belongs to another account now")
	} else if err != nil {
		return "", fmt.Errorf("accounts: confirm email change: %w", err)
	}
	if err := s.store.DeleteAccountTokens(ctx, a.ID, tokenEmailChangeCancel); err != nil {
		s.log.Warn("cannot drop an email change's cancel token", "accountId", a.ID, "err", err)
	}
	s.mailer.Enqueue(mail.Message{To: old, Subject: "Your Keyward email was changed", Text: fmt.Sprintf(
		"Hello %s,\n\nthe email of your Keyward account is now %s. If this was not you, reset your password from the new "+
			"address's owner or contact your administrator.\n", a.Username, newEmail)})
	s.log.Info("email changed", "accountId", a.ID)
	return "email changed", nil
}

// CancelEmailChange drops a pending change with the token mailed to the old address.
func (s *Service) CancelEmailChange(ctx context.Context, token string) (string, error) {
	if err := core.Required("token", token); err != nil {
		return "", err
	}
	if len(token) > 200 {
		return "", errBadEmailToken
	}
	t, err := s.store.ConsumeAccountToken(ctx, tokenEmailChangeCancel, secrets.Hash(token), s.now())
	if errors.Is(err, storage.ErrNotFound) {
		return "", errBadEmailToken
	} else if err != nil {
		return "", fmt.Errorf("accounts: cancel email change: %w", err)
	}
	if err := s.store.DeleteAccountTokens(ctx, t.AccountID, tokenEmailChange); err != nil {
		return "", fmt.Errorf("accounts: cancel email change: %w", err)
	}
	s.log.Warn("email change cancelled from the old address", "accountId", t.AccountID)
	return "email change cancelled", nil
}
