// Package e2e drives the owners' dashboard in a real headless Chromium (Debian's chromium
// package, found through KEYWARD_TEST_CHROMIUM or the PATH) against a real `keyward serve`
// process on the embedded default. The tests skip without Chromium, and fail instead when
// KEYWARD_TEST_REQUIRE_SERVERS=1 (deploy/testenv.sh sets it and installs Chromium).
//
// TestOwnerDailyWork walks issue 22's owner's day at 1280×800 and 390×844 (overview, bulk
// actions, imports, audit log, API keys, signing, the server away and back);
// TestReadmeFirstHour runs the README's first-hour block as printed; TestAccessibility runs
// axe-core on every page at 0 violations (KEYWARD_TEST_AXE, installed by deploy/testenv.sh).
// Figures run only when asked: KEYWARD_TEST_FIGURES=1 (first-load weight and time) and
// KEYWARD_TEST_SCALE=1 (find, select and ban 100 of 10,000 users).
//
// Screenshots of the main pages at 1280×800 and 390×844 are written to
// KEYWARD_TEST_ARTIFACTS (default: test-artifacts/web at the repository root, ignored by git).
package e2e
