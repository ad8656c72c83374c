package softauthn

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/fxamacker/cbor/v2"
)

// Authenticator flags (WebAuthn §6.1).
const (
	flagUP = 0x01 // user present
	flagUV = 0x04 // user verified
	flagAT = 0x40 // attested credential data included
)

// Credential is one key pair the authenticator made.
type Credential struct {
	ID         []byte
	RPID       string
	UserHandle []byte
	Key        *ecdsa.PrivateKey
	Counter    uint32
}

// Authenticator holds credentials and answers ceremonies as a browser at Origin would.
type Authenticator struct {
	// Origin is the origin the browser reports in clientDataJSON (a test changes it to
	// play another site).
	Origin string
	mu     sync.Mutex
	creds  []*Credential
}

// New makes an empty authenticator for pages at origin.
func New(origin string) *Authenticator { return &Authenticator{Origin: origin} }

var b64 = base64.RawURLEncoding

// bytesJSON decodes a base64url member (with or without padding).
type bytesJSON []byte

func (b *bytesJSON) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	raw, err := base64.RawURLEncoding.DecodeString(trimPad(s))
	if err != nil {
		return fmt.Errorf("softauthn: base64url: %w", err)
	}
	*b = raw
	return nil
}

func trimPad(s string) string { return string(bytes.TrimRight([]byte(s), "=")) }

// creationOptions is what Register reads of PublicKeyCredentialCreationOptions.
type creationOptions struct {
	PublicKey struct {
		Challenge string `json:"challenge"`
		RP        struct {
			ID string `json:"id"`
		} `json:"rp"`
		User struct {
			ID bytesJSON `json:"id"`
		} `json:"user"`
		ExcludeCredentials []struct {
			ID bytesJSON `json:"id"`
		} `json:"excludeCredentials"`
	} `json:"publicKey"`
}

// requestOptions is what Assert reads of PublicKeyCredentialRequestOptions.
type requestOptions struct {
	PublicKey struct {
		Challenge        string `json:"challenge"`
		RPID             string `json:"rpId"`
		AllowCredentials []struct {
			ID bytesJSON `json:"id"`
		} `json:"allowCredentials"`
	} `json:"publicKey"`
}

// Register answers creation options ({"publicKey": {...}}, as navigator.credentials.create
// takes them) with a new credential's registration response JSON.
func (a *Authenticator) Register(options []byte) ([]byte, *Credential, error) {
	var o creationOptions
	if err := json.Unmarshal(options, &o); err != nil {
		return nil, nil, fmt.Errorf("softauthn: creation options: %w", err)
	}
	pk := o.PublicKey
	if pk.Challenge == "" || pk.RP.ID == "" || len(pk.User.ID) == 0 {
		return nil, nil, errors.New("softauthn: creation options lack the challenge, rp.id or user.id")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ex := range pk.ExcludeCredentials {
		for _, c := range a.creds {
			if bytes.Equal(c.ID, ex.ID) {
				return nil, nil, errors.New("softauthn: InvalidStateError: this authenticator holds an excluded credential")
			}
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	id := make([]byte, 32)
	if _, err := rand.Read(id); err != nil {
		return nil, nil, err
	}
	c := &Credential{ID: id, RPID: pk.RP.ID, UserHandle: append([]byte(nil), pk.User.ID...), Key: key}
	cose, err := coseKey(&key.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	rpHash := sha256.Sum256([]byte(c.RPID))
	var auth bytes.Buffer
	auth.Write(rpHash[:])
	auth.WriteByte(flagUP | flagUV | flagAT)
	_ = binary.Write(&auth, binary.BigEndian, c.Counter)
	auth.Write(make([]byte, 16)) // AAGUID: none
	_ = binary.Write(&auth, binary.BigEndian, uint16(len(id)))
	auth.Write(id)
	auth.Write(cose)
	att, err := cbor.Marshal(struct {
		Fmt      string         `cbor:"fmt"`
		AttStmt  map[string]any `cbor:"attStmt"`
		AuthData []byte         `cbor:"authData"`
	}{Fmt: "none", AttStmt: map[string]any{}, AuthData: auth.Bytes()})
	if err != nil {
		return nil, nil, err
	}
	cdj, err := a.clientData("webauthn.create", pk.Challenge)
	if err != nil {
		return nil, nil, err
	}
	out, err := json.Marshal(map[string]any{
		"id": b64.EncodeToString(id), "rawId": b64.EncodeToString(id), "type": "public-key",
		"authenticatorAttachment": "platform", "clientExtensionResults": map[string]any{},
		"response": map[string]any{"clientDataJSON": b64.EncodeToString(cdj), "attestationObject": b64.EncodeToString(att),
			"transports": []string{"internal"}},
	})
	if err != nil {
		return nil, nil, err
	}
	a.creds = append(a.creds, c)
	return out, c, nil
}

// Assert answers request options ({"publicKey": {...}}) with an assertion of a credential
// for their rpId: one of allowCredentials, or, when the list is empty, the newest
// discoverable credential of that relying party.
func (a *Authenticator) Assert(options []byte) ([]byte, error) {
	var o requestOptions
	if err := json.Unmarshal(options, &o); err != nil {
		return nil, fmt.Errorf("softauthn: request options: %w", err)
	}
	pk := o.PublicKey
	if pk.Challenge == "" || pk.RPID == "" {
		return nil, errors.New("softauthn: request options lack the challenge or rpId")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var c *Credential
	for i := len(a.creds) - 1; i >= 0 && c == nil; i-- {
		cand := a.creds[i]
		if cand.RPID != pk.RPID {
			continue
		}
		if len(pk.AllowCredentials) == 0 {
			c = cand
		}
		for _, allowed := range pk.AllowCredentials {
			if bytes.Equal(allowed.ID, cand.ID) {
				c = cand
			}
		}
	}
	if c == nil {
		return nil, errors.New("softauthn: NotAllowedError: no credential for this relying party")
	}
	c.Counter++
	rpHash := sha256.Sum256([]byte(c.RPID))
	var auth bytes.Buffer
	auth.Write(rpHash[:])
	auth.WriteByte(flagUP | flagUV)
	_ = binary.Write(&auth, binary.BigEndian, c.Counter)
	cdj, err := a.clientData("webauthn.get", pk.Challenge)
	if err != nil {
		return nil, err
	}
	cdh := sha256.Sum256(cdj)
	digest := sha256.Sum256(append(auth.Bytes(), cdh[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, c.Key, digest[:])
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"id": b64.EncodeToString(c.ID), "rawId": b64.EncodeToString(c.ID), "type": "public-key",
		"authenticatorAttachment": "platform", "clientExtensionResults": map[string]any{},
		"response": map[string]any{"clientDataJSON": b64.EncodeToString(cdj), "authenticatorData": b64.EncodeToString(auth.Bytes()),
			"signature": b64.EncodeToString(sig), "userHandle": b64.EncodeToString(c.UserHandle)},
	})
}

// SetCounter sets a credential's signature counter (the next assertion counts on from n).
func (a *Authenticator) SetCounter(id []byte, n uint32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.creds {
		if bytes.Equal(c.ID, id) {
			c.Counter = n
		}
	}
}

// CredentialIDs answers the ids of the credentials made, oldest first.
func (a *Authenticator) CredentialIDs() [][]byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([][]byte, 0, len(a.creds))
	for _, c := range a.creds {
		out = append(out, c.ID)
	}
	return out
}

// Forget drops every credential (a lost device).
func (a *Authenticator) Forget() {
	a.mu.Lock()
	a.creds = nil
	a.mu.Unlock()
}

func (a *Authenticator) clientData(typ, challenge string) ([]byte, error) {
	return json.Marshal(map[string]any{"type": typ, "challenge": trimPad(challenge), "origin": a.Origin, "crossOrigin": false})
}

// coseKey encodes an EC2 P-256 public key for ES256 (RFC 9053): kty 2, alg -7, crv 1, x, y.
func coseKey(pub *ecdsa.PublicKey) ([]byte, error) {
	raw, err := pub.Bytes() // 0x04 || x || y
	if err != nil {
		return nil, err
	}
	enc, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		return nil, err
	}
	return enc.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: raw[1:33], -3: raw[33:65]})
}
