package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// TestEmbeddedLoginsSurviveSIGKILL signs clients in on an embedded node and SIGKILLs it
// right after the last login was answered: on the restarted node every acknowledged
// session still works (its durable copy was written before the answer), and the owner
// sees every login.
func TestEmbeddedLoginsSurviveSIGKILL(t *testing.T) {
	dir := t.TempDir()
	env := []string{"KEYWARD_DATA_DIR=" + dir, "KEYWARD_TRUSTED_PROXIES=127.0.0.1/32"}
	n := startNode(t, env)
	cmd := exec.Command(binary, "admin", "create", "--username", "owner", "--email", "owner@example.com",
		"--password", "Owner-Pass-12", "--role", "admin", "--data-dir", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("admin create: %v\n%s", err, out)
	}
	owner := call(t, "POST", n.url+"/api/auth/login", "", map[string]string{"username": "owner", "password": "Owner-Pass-12"}).data(200)["token"].(string)
	app := call(t, "POST", n.url+"/api/apps", owner, map[string]string{"name": "Crash"}).data(201)
	appID, secret := app["id"].(string), app["secret"].(string)
	const users = 12
	ids := make([]string, users)
	for i := range ids {
		ids[i] = call(t, "POST", n.url+"/api/apps/"+appID+"/users", owner,
			map[string]string{"username": fmt.Sprintf("user%d", i), "password": "User-Pass-12"}).data(201)["id"].(string)
	}

	// Concurrent logins (they share group-commit rounds), then SIGKILL at once.
	sessions := make([]string, users)
	errs := make([]error, users)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sessions[i], errs[i] = sdkLogin(n.url, secret, fmt.Sprintf("192.0.2.%d", i+1), fmt.Sprintf("user%d", i), "User-Pass-12")
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if err := n.cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	n.done <- <-n.done // for the cleanup, which waits for it too

	n = startNode(t, env)
	for i, s := range sessions {
		r := call(t, "POST", n.url+"/api/client/nonce", "", map[string]string{"sessionToken": s})
		if r.status != 200 {
			t.Errorf("session %d acknowledged before SIGKILL, after restart: %d %v", i, r.status, r.body)
		}
		if ip := call(t, "GET", n.url+"/api/apps/"+appID+"/users/"+ids[i]+"/ip", owner, nil).data(200)["lastLoginIp"]; ip == "" {
			t.Errorf("user %d: last login lost by SIGKILL", i)
		}
	}
	n.stop(t)
}

// sdkLogin runs init, nonce and login as an SDK on the address ip (the node trusts the
// loopback proxy's X-Forwarded-For) and answers the session token.
func sdkLogin(base, secret, ip, username, password string) (string, error) {
	post := func(path, nonce string, body map[string]string) (map[string]any, error) {
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", base+"/api/client/"+path, bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", ip)
		if nonce != "" {
			req.Header.Set("X-Nonce", nonce)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if resp.StatusCode != 200 {
			return nil, fmt.Errorf("%s: %d %v", path, resp.StatusCode, out)
		}
		return out["data"].(map[string]any), nil
	}
	d, err := post("init", "", map[string]string{"secret": secret, "version": "1.0.0", "hwid": "h-" + ip})
	if err != nil {
		return "", err
	}
	session := d["sessionToken"].(string)
	if d, err = post("nonce", "", map[string]string{"sessionToken": session}); err != nil {
		return "", err
	}
	_, err = post("login", d["nonce"].(string), map[string]string{"sessionToken": session, "username": username, "password": password})
	return session, err
}
