package accounts

import (
	"bufio"
	"context"
	"crypto/sha1" //nolint:gosec // the range protocol is defined over SHA-1; nothing here relies on its strength
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/keyward/keyward/core"
)

// DefaultBreachTimeout bounds one range request.
const DefaultBreachTimeout = 2 * time.Second

// BreachConfig configures the breached-password check.
type BreachConfig struct {
	// RangeURL is the k-anonymity range endpoint; the first five hex digits of the
	// password's SHA-1 are appended (https://api.pwnedpasswords.com/range/ answers this
	// protocol). Empty turns the check off.
	RangeURL string
	// Timeout bounds a request; default DefaultBreachTimeout.
	Timeout time.Duration
	// FailClosed refuses a password when the range service cannot answer; by default the
	// password is accepted then (and the failure logged), so an outage of a third party
	// never stops owners from changing their password.
	FailClosed bool
	// Client makes the requests; default a client with no other settings.
	Client *http.Client
}

// BreachChecker asks a range service whether a password is in a breach list. Only the
// first five characters of the password's SHA-1 leave the server; the match of the rest
// is made here against the suffixes answered.
type BreachChecker struct {
	cfg BreachConfig
	log *slog.Logger
}

// NewBreachChecker answers nil (no check) when cfg.RangeURL is empty.
func NewBreachChecker(cfg BreachConfig, log *slog.Logger) *BreachChecker {
	if cfg.RangeURL == "" {
		return nil
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultBreachTimeout
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if !strings.HasSuffix(cfg.RangeURL, "/") {
		cfg.RangeURL += "/"
	}
	return &BreachChecker{cfg: cfg, log: log}
}

var errBreached = core.E(CodePasswordBreached, "this password appears in a list of breached passwords; choose another")

// Check answers PASSWORD_BREACHED for a password found in the list. A service that cannot
// answer is an error only with FailClosed (UNAVAILABLE).
func (b *BreachChecker) Check(ctx context.Context, field, password string) error {
	if b == nil {
		return nil
	}
	found, err := b.lookup(ctx, password)
	switch {
	case err != nil && b.cfg.FailClosed:
		b.log.Warn("breached-password check failed; refusing the password (fail closed)", "err", err)
		return core.E(core.CodeUnavailable, "the breached-password check is unavailable; try again later")
	case err != nil:
		b.log.Warn("breached-password check failed; accepting the password (fail open)", "err", err)
		return nil
	case found:
		e := *errBreached
		e.Field = field
		return &e
	}
	return nil
}

func (b *BreachChecker) lookup(ctx context.Context, password string) (bool, error) {
	sum := sha1.Sum([]byte(password)) //nolint:gosec // the protocol's hash
	digest := strings.ToUpper(hex.EncodeToString(sum[:]))
	prefix, suffix := digest[:5], digest[5:]
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.cfg.RangeURL+prefix, nil)
	if err != nil {
		return false, fmt.Errorf("breach range: %w", err)
	}
	// Padding makes every answer about the same size, so an observer of the traffic
	// cannot tell prefixes apart by length.
	req.Header.Set("Add-Padding", "true")
	res, err := b.cfg.Client.Do(req)
	if err != nil {
		return false, fmt.Errorf("breach range: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return false, fmt.Errorf("breach range: status %d", res.StatusCode)
	}
	sc := bufio.NewScanner(io.LimitReader(res.Body, 4<<20))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		hash, count, _ := strings.Cut(line, ":")
		// Padding lines have a count of 0.
		if strings.EqualFold(hash, suffix) && strings.TrimSpace(count) != "0" {
			return true, nil
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("breach range: %w", err)
	}
	return false, nil
}
