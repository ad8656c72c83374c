package commerce

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/storage"
)

// Discord is the connection kind of an app's Discord bot: its Secret is the application's
// public key (hex), and Discord calls the interactions endpoint with the connection's
// receiver id. It is a connection, not a store: it sells nothing, it lets buyers help
// themselves from Discord.
const Discord Provider = "discord"

// HWIDResetter resets a user's hardware binding within the user's reset limits and
// cooldowns (apps.Service.ResetHWID).
type HWIDResetter interface {
	ResetHWID(ctx context.Context, o apps.Owner, appID, userID string) (storage.AppUser, int, error)
}

// VerifyDiscord checks Discord's Ed25519 signature (X-Signature-Ed25519 over
// X-Signature-Timestamp followed by the body) with the app's public key (hex).
func VerifyDiscord(publicKeyHex string, header http.Header, body []byte) error {
	pub, err := hex.DecodeString(strings.TrimSpace(publicKeyHex))
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return errors.New("commerce: the connection's Discord public key is not 32 bytes of hex")
	}
	sig, err := hex.DecodeString(header.Get("X-Signature-Ed25519"))
	ts := header.Get("X-Signature-Timestamp")
	if err != nil || len(sig) != ed25519.SignatureSize || ts == "" {
		return ErrNoSignature
	}
	if !ed25519.Verify(ed25519.PublicKey(pub), append([]byte(ts), body...), sig) {
		return ErrBadSignature
	}
	return nil
}

// Interaction types and answers of Discord's interactions API.
const (
	interactionPing    = 1
	interactionCommand = 2
	answerPong         = 1
	answerMessage      = 4
	flagEphemeral      = 64
)

type interaction struct {
	Type int `json:"type"`
	Data struct {
		Name    string `json:"name"`
		Options []struct {
			Name  string `json:"name"`
			Value any    `json:"value"`
		} `json:"options"`
	} `json:"data"`
	Member *struct {
		User struct {
			ID string `json:"id"`
		} `json:"user"`
	} `json:"member"`
	User *struct {
		ID string `json:"id"`
	} `json:"user"`
}

func reply(text string) map[string]any {
	return map[string]any{"type": answerMessage, "data": map[string]any{"content": text, "flags": flagEphemeral}}
}

// Interaction answers one Discord interaction for the connection of receiverID: PING, and
// the slash commands /redeem key, /license key and /reset-hwid key. Refusals a buyer can
// act on are answered as (ephemeral) messages; a bad signature is UNAUTHORIZED (Discord
// requires 401).
func (s *Service) Interaction(ctx context.Context, receiverID string, header http.Header, body []byte, resetter HWIDResetter) (map[string]any, error) {
	conn, err := s.d.Store.GetStoreConnectionByReceiver(ctx, receiverID)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && (!conn.Enabled || Provider(conn.Provider) != Discord)) {
		return nil, core.E(core.CodeNotFound, "no Discord connection receives here")
	} else if err != nil {
		return nil, fmt.Errorf("commerce: read connection: %w", err)
	}
	if err := VerifyDiscord(conn.Secret, header, body); err != nil {
		return nil, &core.Error{Code: core.CodeUnauthorized, Message: "invalid request signature", Cause: err}
	}
	var in interaction
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, core.Invalid("body", "not a Discord interaction")
	}
	switch in.Type {
	case interactionPing:
		return map[string]any{"type": answerPong}, nil
	case interactionCommand:
	default:
		return reply("This interaction is not supported."), nil
	}
	user := ""
	if in.Member != nil {
		user = in.Member.User.ID
	} else if in.User != nil {
		user = in.User.ID
	}
	key := ""
	for _, o := range in.Data.Options {
		if o.Name == "key" {
			key, _ = o.Value.(string)
		}
	}
	key = strings.TrimSpace(key)
	if user == "" || key == "" {
		return reply("Give your license key: /" + in.Data.Name + " key:<your key>"), nil
	}
	l, err := s.d.Store.GetLicenseByKey(ctx, conn.AppID, strings.ToUpper(key))
	if errors.Is(err, storage.ErrNotFound) {
		return reply("That key is not known."), nil
	} else if err != nil {
		return nil, fmt.Errorf("commerce: read license: %w", err)
	}
	if l.DiscordID != "" && l.DiscordID != user {
		return reply("That key is redeemed to another Discord account."), nil
	}
	switch in.Data.Name {
	case "redeem":
		if _, err := s.d.Store.UpdateLicense(ctx, conn.AppID, l.ID, func(x *storage.License) error {
			if x.DiscordID != "" && x.DiscordID != user {
				return core.E(core.CodeConflict, "redeemed by another account")
			}
			x.DiscordID, x.UpdatedAt = user, s.now()
			return nil
		}); err != nil {
			if core.CodeOf(err) == core.CodeConflict {
				return reply("That key is redeemed to another Discord account."), nil
			}
			return nil, fmt.Errorf("commerce: redeem: %w", err)
		}
		return reply("The key is yours: /license and /reset-hwid now work with it."), nil
	case "license":
		if l.DiscordID != user {
			return reply("Redeem the key first: /redeem key:<your key>"), nil
		}
		status := "active"
		switch {
		case l.Banned:
			status = "banned"
		case !l.Enabled:
			status = "disabled"
		case !l.ExpiresAt.IsZero() && l.ExpiresAt.Before(s.d.Now()):
			status = "expired"
		}
		expiry := "never"
		if !l.ExpiresAt.IsZero() {
			expiry = l.ExpiresAt.UTC().Format(time.RFC3339)
		}
		return reply(fmt.Sprintf("License %s: %s, level %d, expires %s, used %d time(s), %d device(s) allowed.",
			maskKey(l.Key), status, l.Level, expiry, l.UsedCount, l.DeviceLimit)), nil
	case "reset-hwid":
		if l.DiscordID != user {
			return reply("Redeem the key first: /redeem key:<your key>"), nil
		}
		if resetter == nil {
			return reply("HWID resets are not available here."), nil
		}
		var u storage.AppUser
		found := false
		for _, name := range usersOf(l) {
			if u, err = s.d.Store.GetUserByUsername(ctx, conn.AppID, name); err == nil {
				found = true
				break
			}
		}
		if !found {
			return reply("Nobody has signed in with that key yet: nothing to reset."), nil
		}
		app, err := s.d.Store.GetAppByID(ctx, conn.AppID)
		if err != nil {
			return nil, fmt.Errorf("commerce: read app: %w", err)
		}
		acct, err := s.d.Store.GetAccount(ctx, app.AccountID)
		if err != nil {
			return nil, fmt.Errorf("commerce: read owner: %w", err)
		}
		if _, n, err := resetter.ResetHWID(ctx, apps.Owner{AccountID: acct.ID, Plan: acct.Plan}, conn.AppID, u.ID); err != nil {
			var de *core.Error
			if errors.As(err, &de) && (de.Code == core.CodeForbidden || de.Code == core.CodeRateLimited) {
				return reply("Not now: " + de.Message), nil
			}
			return nil, err
		} else {
			return reply(fmt.Sprintf("Hardware binding reset (%d device(s) forgotten).", n)), nil
		}
	}
	return reply("Unknown command: /" + in.Data.Name), nil
}

// maskKey shows a key's last group only.
func maskKey(k string) string {
	if i := strings.LastIndexByte(k, '-'); i > 0 {
		return "…" + k[i:]
	}
	return "…"
}
