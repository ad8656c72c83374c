package httpapi_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	ts "github.com/keyward/keyward/internal/testserver"
)

// seatLogin signs a fresh session of the license's user in with the key.
func seatLogin(t *testing.T, s *ts.Server, secret, key string) (*sdk, ts.Response) {
	c := newSDK(t, s, secret)
	c.mustInit()
	return c, c.withNonce("license", map[string]any{"licenseKey": key, "hwid": "seat-machine"})
}

// TestFloatingSeats: a license with maxSeats admits that many live sessions; the next is
// SEATS_FULL saying how many are in use; ending a session frees its seat at once; the owner
// sees who holds the seats and frees one (its session ends); maxSeats 0 limits nothing.
func TestFloatingSeats(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Seats")
		licID, key := createLicenseRecord(a, appID, map[string]any{"maxSeats": 2})
		base := "/api/apps/" + appID + "/licenses/" + licID
		if r := a.do("GET", base, nil); r.Data()["maxSeats"] != float64(2) {
			t.Fatalf("license: %s", r.Raw)
		}
		one, r := seatLogin(t, s, secret, key)
		expectOK(t, r, http.StatusOK)
		two, r := seatLogin(t, s, secret, key)
		expectOK(t, r, http.StatusOK)
		_, r = seatLogin(t, s, secret, key)
		expect(t, r, http.StatusForbidden, "SEATS_FULL")
		if msg := r.Body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "2 of 2") {
			t.Fatalf("SEATS_FULL message: %q", msg)
		}
		expectOK(t, one.withNonce("heartbeat", nil), http.StatusOK) // a holder renews in a full set

		// The owner sees the seats.
		r = a.do("GET", base+"/seats", nil)
		expectOK(t, r, http.StatusOK)
		seats := r.Data()["seats"].([]any)
		if len(seats) != 2 || r.Data()["inUse"] != float64(2) || r.Data()["maxSeats"] != float64(2) {
			t.Fatalf("seats: %s", r.Raw)
		}
		for _, x := range seats {
			seat := x.(map[string]any)
			if seat["username"] != key || seat["hwid"] != "host-user" || seat["ip"] == "" || seat["since"] == nil || seat["token"] != nil {
				t.Fatalf("seat: %v", seat)
			}
		}

		// Ending a session frees its seat at once.
		expectOK(t, one.post("end", nil, ""), http.StatusOK)
		three, r := seatLogin(t, s, secret, key)
		expectOK(t, r, http.StatusOK)
		_, r = seatLogin(t, s, secret, key)
		expect(t, r, http.StatusForbidden, "SEATS_FULL")

		// The owner frees the seat of session two: that session ends, a new one gets in.
		r = a.do("GET", base+"/seats", nil)
		var twoSeat string
		for _, x := range r.Data()["seats"].([]any) {
			seat := x.(map[string]any)
			if seat["ip"] == two.ip {
				twoSeat = seat["id"].(string)
			}
		}
		if twoSeat == "" {
			t.Fatalf("no seat of session two in %s", r.Raw)
		}
		expectOK(t, a.do("DELETE", base+"/seats/"+twoSeat, nil), http.StatusOK)
		expect(t, a.do("DELETE", base+"/seats/"+twoSeat, nil), http.StatusNotFound, "NOT_FOUND")
		expect(t, two.post("check", nil, ""), http.StatusUnauthorized, "UNAUTHORIZED")
		_, r = seatLogin(t, s, secret, key)
		expectOK(t, r, http.StatusOK)
		expectOK(t, three.withNonce("heartbeat", nil), http.StatusOK)
		stranger := api{t, s, newOwner(t, s).Token}
		expect(t, stranger.do("GET", base+"/seats", nil), http.StatusNotFound, "NOT_FOUND")

		// Unlimited by default.
		_, free := createLicenseRecord(a, appID, nil)
		for range 3 {
			_, r := seatLogin(t, s, secret, free)
			expectOK(t, r, http.StatusOK)
		}
		expect(t, a.do("PATCH", base, map[string]any{"maxSeats": -1}), http.StatusBadRequest, "VALIDATION_ERROR")
	})
}

// TestFloatingSeatsRaceAcrossNodes: N+10 logins racing on two nodes over Redis admit
// exactly N.
func TestFloatingSeatsRaceAcrossNodes(t *testing.T) {
	env := ts.Env(t, ts.Engines{Name: "mongo+redis", Mongo: true, Redis: true})
	nodes := []*ts.Server{ts.StartEnv(t, env), ts.StartEnv(t, env)}
	a := api{t, nodes[0], newOwner(t, nodes[0]).Token}
	appID, secret := a.createApp("SeatRace")
	const seats = 4
	_, key := createLicenseRecord(a, appID, map[string]any{"maxSeats": seats})
	// The first use creates the license's user; then the seat is given back.
	first, r := seatLogin(t, nodes[0], secret, key)
	expectOK(t, r, http.StatusOK)
	expectOK(t, first.post("end", nil, ""), http.StatusOK)

	type ready struct {
		c     *sdk
		nonce string
	}
	var racers []ready
	for i := range seats + 10 {
		c := newSDK(t, nodes[i%2], secret)
		c.mustInit()
		racers = append(racers, ready{c, c.nonce()})
	}
	codes := make([]string, len(racers))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, rc := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := rc.c.s.Do(t, ts.Req{Method: "POST", Path: "/api/client/license", IP: rc.c.ip,
				Header: map[string]string{"X-Nonce": rc.nonce},
				Body:   map[string]any{"sessionToken": rc.c.token, "licenseKey": key, "hwid": "seat-machine"}})
			codes[i] = r.Code()
			if r.Status == http.StatusOK {
				codes[i] = "OK"
			}
		}()
	}
	close(start)
	wg.Wait()
	admitted := 0
	for _, c := range codes {
		switch c {
		case "OK":
			admitted++
		case "SEATS_FULL":
		default:
			t.Errorf("unexpected answer %q", c)
		}
	}
	if admitted != seats {
		t.Fatalf("%d of %d racing logins on two nodes admitted, want exactly %d: %v", admitted, len(racers), seats, codes)
	}
}
