// Package e2e drives the owners' dashboard in a real headless Chromium (Debian's chromium
// package, found through KEYWARD_TEST_CHROMIUM or the PATH) against a real `keyward serve`
// process on the embedded default. The tests skip without Chromium, and fail instead when
// KEYWARD_TEST_REQUIRE_SERVERS=1 (deploy/testenv.sh sets it and installs Chromium).
//
// Screenshots of the main pages at 1280×800 and 390×844 are written to
// KEYWARD_TEST_ARTIFACTS (default: test-artifacts/web at the repository root, ignored by git).
package e2e
