package storage

// Sealer encrypts at rest the secrets a store must read back (core/secrets.Box). The
// engines seal those fields on every write and open them on every read, so callers only
// ever see clear values. context names the record and field (see the helpers below), and
// is bound to the sealed value: a value moved to another record does not open.
type Sealer interface {
	// Seal encrypts plain for context; "" stays "".
	Seal(plain, context string) (string, error)
	// Open decrypts a sealed value; a value stored in clear (older data) is answered as it
	// is. A sealed value that does not open is an error (wrong key, altered data).
	Open(stored, context string) (string, error)
	// Sealed reports whether a stored value is sealed.
	Sealed(stored string) bool
}

// Contexts of the sealed fields. A new sealed field (a private key, say) gets its own.
func accountSecretContext(id string) string  { return "account/" + id + "/twoFactorSecret" }
func accountPendingContext(id string) string { return "account/" + id + "/twoFactorPending" }
func integrationContext(id string) string    { return "integration/" + id + "/secret" }
func appSigningKeyContext(id string) string  { return "app/" + id + "/signingKey" }

// sealEach applies f (Seal or Open) to each field with its context, stopping at the
// first error.
func sealEach(f func(v, context string) (string, error), fields map[*string]string) error {
	for field, context := range fields {
		v, err := f(*field, context)
		if err != nil {
			return err
		}
		*field = v
	}
	return nil
}

// SealAccount replaces a's TOTP secrets with their sealed form, for writing. A nil
// Sealer leaves them in clear.
func SealAccount(s Sealer, a *Account) error {
	if s == nil {
		return nil
	}
	return sealEach(s.Seal, map[*string]string{&a.TwoFactorSecret: accountSecretContext(a.ID),
		&a.TwoFactorPending: accountPendingContext(a.ID)})
}

// OpenAccount replaces a's stored TOTP secrets with their clear form, after reading.
func OpenAccount(s Sealer, a *Account) error {
	if s == nil {
		return nil
	}
	return sealEach(s.Open, map[*string]string{&a.TwoFactorSecret: accountSecretContext(a.ID),
		&a.TwoFactorPending: accountPendingContext(a.ID)})
}

// AccountSealed reports whether a (as stored) has no TOTP secret in clear.
func AccountSealed(s Sealer, a Account) bool {
	return (a.TwoFactorSecret == "" || s.Sealed(a.TwoFactorSecret)) &&
		(a.TwoFactorPending == "" || s.Sealed(a.TwoFactorPending))
}

// SealIntegration replaces i's signing secret with its sealed form, for writing.
func SealIntegration(s Sealer, i *Integration) error {
	if s == nil {
		return nil
	}
	return sealEach(s.Seal, map[*string]string{&i.Secret: integrationContext(i.ID)})
}

// OpenIntegration replaces i's stored signing secret with its clear form, after reading.
func OpenIntegration(s Sealer, i *Integration) error {
	if s == nil {
		return nil
	}
	return sealEach(s.Open, map[*string]string{&i.Secret: integrationContext(i.ID)})
}

// SealApp replaces a's signing key with its sealed form, for writing.
func SealApp(s Sealer, a *App) error {
	if s == nil {
		return nil
	}
	return sealEach(s.Seal, map[*string]string{&a.SigningKey: appSigningKeyContext(a.ID)})
}

// OpenApp replaces a's stored signing key with its clear form, after reading.
func OpenApp(s Sealer, a *App) error {
	if s == nil {
		return nil
	}
	return sealEach(s.Open, map[*string]string{&a.SigningKey: appSigningKeyContext(a.ID)})
}

func storeConnectionContext(id string) string { return "store_connection/" + id + "/secret" }

// SealStoreConnection replaces c's signing secret with its sealed form, for writing.
func SealStoreConnection(s Sealer, c *StoreConnection) error {
	if s == nil {
		return nil
	}
	return sealEach(s.Seal, map[*string]string{&c.Secret: storeConnectionContext(c.ID)})
}

// OpenStoreConnection replaces c's stored signing secret with its clear form, after reading.
func OpenStoreConnection(s Sealer, c *StoreConnection) error {
	if s == nil {
		return nil
	}
	return sealEach(s.Open, map[*string]string{&c.Secret: storeConnectionContext(c.ID)})
}
