// Package passwords hashes and checks passwords with argon2id (golang.org/x/crypto/argon2),
// encoded in the PHC string format so that parameters can change without breaking stored
// hashes. Hashing is deliberately slow, so the number of hashes running at once is bounded
// (by default to the number of CPUs): a burst of logins queues instead of starving the node.
//
// Verify also checks bcrypt hashes ($2a$, $2b$, $2y$: what PHP's password_hash writes), so
// that users imported from another server (keyward import keyauth) keep their passwords;
// NeedsRehash tells the login that verified one to store an argon2id hash in its place.
// Nothing here writes bcrypt.
package passwords

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// Params are argon2id's cost parameters.
type Params struct {
	MemoryKiB   uint32
	Iterations  uint32
	Parallelism uint8
}

// OWASP is the minimum argon2id configuration OWASP recommends (19 MiB, t=2, p=1): about
// 24 ms per hash on the reference machine. It is the production default.
var OWASP = Params{MemoryKiB: 19 * 1024, Iterations: 2, Parallelism: 1}

// Bounds checked on stored hashes, so a tampered record cannot make verification use
// unbounded memory or time.
const (
	maxMemoryKiB  = 1 << 20 // 1 GiB
	maxIterations = 20
	saltLen       = 16
	keyLen        = 32
	// bcrypt costs accepted on stored hashes: PHP writes 10 by default; 15 is about two
	// seconds a login here, past what any owner would have chosen.
	minBcryptCost = 4
	maxBcryptCost = 15
)

// ErrMismatch is answered by Verify when the password does not match.
var ErrMismatch = errors.New("passwords: mismatch")

// Hasher hashes and verifies passwords with bounded concurrency.
type Hasher struct {
	params Params
	slots  chan struct{}
	// dummy is a real hash verified when no account matches, so that "no such user" takes
	// as long as "wrong password".
	dummy string
}

// NewHasher returns a hasher with the parameters; concurrency <= 0 means runtime.NumCPU().
func NewHasher(p Params, concurrency int) *Hasher {
	if concurrency <= 0 {
		concurrency = runtime.NumCPU()
	}
	h := &Hasher{params: p, slots: make(chan struct{}, concurrency)}
	h.dummy = h.hashNow("keyward-dummy-password")
	return h
}

func (h *Hasher) acquire(ctx context.Context) error {
	select {
	case h.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("passwords: waiting for a hashing slot: %w", ctx.Err())
	}
}

func (h *Hasher) release() { <-h.slots }

// Hash returns the PHC string of password.
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	if err := h.acquire(ctx); err != nil {
		return "", err
	}
	defer h.release()
	return h.hashNow(password), nil
}

func (h *Hasher) hashNow(password string) string {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		panic(fmt.Sprintf("passwords: reading random salt: %v", err)) // crypto/rand never fails on Linux
	}
	p := h.params
	key := argon2.IDKey([]byte(password), salt, p.Iterations, p.MemoryKiB, p.Parallelism, keyLen)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Iterations,
		p.Parallelism, enc.EncodeToString(salt), enc.EncodeToString(key))
}

// Verify checks password against a PHC hash: nil on a match, ErrMismatch otherwise. An
// empty hash (no such account) still costs one verification and answers ErrMismatch.
func (h *Hasher) Verify(ctx context.Context, hash, password string) error {
	if err := h.acquire(ctx); err != nil {
		return err
	}
	defer h.release()
	if hash == "" {
		_ = verify(h.dummy, password)
		return ErrMismatch
	}
	return verify(hash, password)
}

// NeedsRehash reports whether a stored hash that verified should be replaced by an argon2id
// hash of the same password: it is of another scheme (bcrypt, kept from an import).
func NeedsRehash(hash string) bool {
	return hash != "" && !strings.HasPrefix(hash, "$argon2id$")
}

// isBcrypt reports whether hash is in the modular crypt form of bcrypt.
func isBcrypt(hash string) bool {
	return len(hash) > 4 && hash[0] == '$' && hash[1] == '2' && strings.ContainsRune("aby", rune(hash[2])) && hash[3] == '$'
}

func verify(hash, password string) error {
	if isBcrypt(hash) {
		return verifyBcrypt(hash, password)
	}
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return fmt.Errorf("passwords: unsupported hash format")
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return fmt.Errorf("passwords: unsupported argon2 version")
	}
	var p Params
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Iterations, &p.Parallelism); err != nil {
		return fmt.Errorf("passwords: bad parameters: %w", err)
	}
	if p.MemoryKiB == 0 || p.MemoryKiB > maxMemoryKiB || p.Iterations == 0 || p.Iterations > maxIterations || p.Parallelism == 0 {
		return fmt.Errorf("passwords: parameters out of bounds")
	}
	enc := base64.RawStdEncoding
	salt, err := enc.DecodeString(parts[4])
	if err != nil {
		return fmt.Errorf("passwords: bad salt: %w", err)
	}
	want, err := enc.DecodeString(parts[5])
	if err != nil || len(want) == 0 || len(want) > 128 {
		return fmt.Errorf("passwords: bad key")
	}
	got := argon2.IDKey([]byte(password), salt, p.Iterations, p.MemoryKiB, p.Parallelism, uint32(len(want)))
	if subtle.ConstantTimeCompare(got, want) != 1 {
		return ErrMismatch
	}
	return nil
}

// verifyBcrypt checks password against a bcrypt hash as PHP's password_verify does ($2y$
// is the same algorithm as $2b$; only the first 72 bytes of a password count).
func verifyBcrypt(hash, password string) error {
	cost, err := bcrypt.Cost([]byte(hash))
	if err != nil {
		return fmt.Errorf("passwords: bad bcrypt hash: %w", err)
	}
	if cost < minBcryptCost || cost > maxBcryptCost {
		return fmt.Errorf("passwords: bcrypt cost %d out of bounds", cost)
	}
	switch err := bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)); {
	case err == nil:
		return nil
	case errors.Is(err, bcrypt.ErrMismatchedHashAndPassword):
		return ErrMismatch
	default:
		return fmt.Errorf("passwords: bad bcrypt hash: %w", err)
	}
}
