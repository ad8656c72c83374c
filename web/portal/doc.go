// Package portal is the buyer portal's page (issue 23): one HTML page, one small script and
// one stylesheet, embedded in the binary and served by every node at /portal/<appId> (the
// routes are http/route_table_portal.go). A buyer signs in with a license key and a code
// mailed to the order's address; the page then shows the license and the actions the app's
// owner turned on. The page calls only the portal's JSON routes under
// /portal/<appId>/api/; the session is an HttpOnly, SameSite=Strict cookie scoped to the
// portal's path, so the script never holds a credential. Every server-supplied string is
// rendered with textContent; the Content-Security-Policy admits this origin's files only.
package portal
