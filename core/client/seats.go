package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/storage"
)

// Floating seats (docs/LICENSING.md): a license with maxSeats > 0 is used by at most that
// many live sessions at once across the cluster. A seat is a lease in the cluster engine
// (cluster.Leases) in the license's seats set, held by a session from its sign-in,
// renewed by its heartbeats for the session's idle timeout, released when the session
// ends, and freed by itself when it is not renewed. Beside the lease, a value keeps who
// holds it, for the owner's view.

func seatsKey(appID, licenseID string) string { return "cseats:" + appID + ":" + licenseID }
func seatInfoKey(seatID string) string        { return "cseat:" + seatID }

// seatID names a session's seat without showing its token: a SHA-256 prefix.
func seatID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:12])
}

// Seat is a seat in use, as the owner sees it.
type Seat struct {
	ID       string    `json:"id"`
	Set      string    `json:"set"`
	Token    string    `json:"token"`
	UserID   string    `json:"userId"`
	Username string    `json:"username"`
	IP       string    `json:"ip"`
	HWID     string    `json:"hwid"`
	Since    time.Time `json:"since"`
}

// takeSeat gives the signing-in session a seat of the user's license when the license
// limits seats; SEATS_FULL when none is free. Signing in again on a session that holds the
// seat renews it.
func (s *Service) takeSeat(ctx context.Context, call Call, sess *Session, u storage.AppUser) error {
	if u.LicenseID == "" {
		return nil
	}
	lic, err := s.d.Store.GetLicense(ctx, call.Snap.App.ID, u.LicenseID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read license seats: %w", err)
	}
	if lic.MaxSeats <= 0 {
		return nil
	}
	set := seatsKey(call.Snap.App.ID, lic.ID)
	id := seatID(sess.Token)
	ttl := call.Snap.SessionTTL
	ok, err := s.d.Sessions.AcquireMember(ctx, set, id, ttl, lic.MaxSeats)
	if err != nil {
		return fmt.Errorf("take seat: %w", err)
	}
	if !ok {
		return s.seatsFull(ctx, set, lic.MaxSeats)
	}
	info, _ := json.Marshal(Seat{ID: id, Set: set, Token: sess.Token, UserID: u.ID, Username: u.Username,
		IP: call.Caller.IP, HWID: sess.HWID, Since: s.now().UTC()})
	if err := s.d.Sessions.SetValue(ctx, seatInfoKey(id), info, ttl); err != nil {
		return fmt.Errorf("record seat: %w", err)
	}
	sess.Seat, sess.SeatLimit = set, lic.MaxSeats
	return nil
}

func (s *Service) seatsFull(ctx context.Context, set string, limit int) error {
	n, err := s.d.Sessions.CountMembers(ctx, set)
	if err != nil {
		n = limit
	}
	return core.E(core.CodeSeatsFull, "all seats of this license are in use (%d of %d); end another session or wait for one to expire", n, limit)
}

// renewSeat extends the session's seat with its heartbeat. A seat lost meanwhile (freed
// by the owner, or expired) is taken again if one is free, else SEATS_FULL.
func (s *Service) renewSeat(ctx context.Context, call Call) error {
	sess := call.Session
	if sess.Seat == "" {
		return nil
	}
	id := seatID(sess.Token)
	ttl := call.Snap.SessionTTL
	ok, err := s.d.Sessions.AcquireMember(ctx, sess.Seat, id, ttl, max(sess.SeatLimit, 1))
	if err != nil {
		return fmt.Errorf("renew seat: %w", err)
	}
	if !ok {
		return s.seatsFull(ctx, sess.Seat, sess.SeatLimit)
	}
	if _, err := s.d.Sessions.TouchValue(ctx, seatInfoKey(id), ttl); err != nil {
		return fmt.Errorf("renew seat: %w", err)
	}
	return nil
}

// releaseSeat frees the seat a session holds, if any (every end of a session).
func (m sessions) releaseSeat(ctx context.Context, token string) error {
	id := seatID(token)
	b, _, ok, err := m.e.GetValue(ctx, seatInfoKey(id))
	if err != nil || !ok {
		return err
	}
	var seat Seat
	if err := json.Unmarshal(b, &seat); err != nil {
		return fmt.Errorf("decode seat: %w", err)
	}
	_, err1 := m.e.TakeMember(ctx, seat.Set, id)
	_, err2 := m.e.DeleteValue(ctx, seatInfoKey(id))
	return errors.Join(err1, err2)
}

// Seats answers the seats of a license in use (the owner's view; the caller checked the
// license is the owner's).
func (s *Service) Seats(ctx context.Context, appID, licenseID string) ([]Seat, error) {
	ids, err := s.d.Sessions.Members(ctx, seatsKey(appID, licenseID))
	if err != nil {
		return nil, fmt.Errorf("list seats: %w", err)
	}
	out := make([]Seat, 0, len(ids))
	for _, id := range ids {
		b, _, ok, err := s.d.Sessions.GetValue(ctx, seatInfoKey(id))
		if err != nil {
			return nil, fmt.Errorf("read seat: %w", err)
		}
		var seat Seat
		if !ok || json.Unmarshal(b, &seat) != nil {
			seat = Seat{ID: id} // the lease outlived its note by a moment
		}
		out = append(out, seat)
	}
	return out, nil
}

// FreeSeat frees one seat of the license by ending the session that holds it (so it
// cannot take the seat back with its next heartbeat); NOT_FOUND when no such seat is in
// use.
func (s *Service) FreeSeat(ctx context.Context, appID, licenseID, id string) error {
	set := seatsKey(appID, licenseID)
	b, _, ok, err := s.d.Sessions.GetValue(ctx, seatInfoKey(id))
	if err != nil {
		return fmt.Errorf("read seat: %w", err)
	}
	var seat Seat
	if ok && json.Unmarshal(b, &seat) == nil && seat.Set == set {
		if sess, err := s.sessions.get(ctx, seat.Token); err == nil {
			if _, err := s.sessions.end(ctx, sess); err != nil {
				return err
			}
		}
	}
	taken, err := s.d.Sessions.TakeMember(ctx, set, id)
	if err != nil {
		return fmt.Errorf("free seat: %w", err)
	}
	if !taken && seat.Set != set {
		return core.E(core.CodeNotFound, "no seat %s is in use on this license", id)
	}
	if _, err := s.d.Sessions.DeleteValue(ctx, seatInfoKey(id)); err != nil {
		return fmt.Errorf("free seat: %w", err)
	}
	return nil
}
