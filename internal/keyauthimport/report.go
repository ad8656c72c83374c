package keyauthimport

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Report says what an import did: what mapped, what did not, and why.
type Report struct {
	Apps []AppReport
	// Mapped counts the records written, by kind (apps, users, licenses, variables,
	// user variables, rules, integrations), and the live subscriptions that became their
	// users' level and expiry.
	Mapped map[string]int
	// Dropped are records or values of mapped tables that were left out or changed, by
	// reason, with a few examples each.
	Dropped []Dropped
	// Tables are KeyAuth's tables that do not map, with their row counts and why.
	Tables []TableNote
}

// AppReport is one imported app: its Keyward id, and its new secret (shown once: client
// software needs it for init).
type AppReport struct {
	Name, ID, Secret string
	Users, Licenses  int
	Notes            []string
}

// Dropped is one reason records were left out or changed, with how many.
type Dropped struct {
	Kind, Reason string
	Count        int
	Examples     []string
}

// TableNote is a KeyAuth table that is not imported.
type TableNote struct {
	Table string
	Rows  int
	Why   string
}

// Records answers how many records the import wrote (subscriptions are not records of
// their own: they became their users' level and expiry).
func (r *Report) Records() int {
	n := 0
	for k, v := range r.Mapped {
		if k != "subscriptions" {
			n += v
		}
	}
	return n
}

// Print writes the report for a person.
func (r *Report) Print(w io.Writer) {
	for _, a := range r.Apps {
		fmt.Fprintf(w, "app %q: id %s, %d users, %d licenses\n  new secret (shown once; client software needs it for init): %s\n",
			a.Name, a.ID, a.Users, a.Licenses, a.Secret)
		for _, n := range a.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
	}
	kinds := make([]string, 0, len(r.Mapped))
	for k := range r.Mapped {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	fmt.Fprintln(w, "imported:")
	for _, k := range kinds {
		fmt.Fprintf(w, "  %-15s %d\n", k, r.Mapped[k])
	}
	if len(r.Dropped) > 0 {
		fmt.Fprintln(w, "left out or changed:")
		for _, d := range r.Dropped {
			fmt.Fprintf(w, "  %s: %d: %s", d.Kind, d.Count, d.Reason)
			if len(d.Examples) > 0 {
				fmt.Fprintf(w, " (e.g. %s)", strings.Join(d.Examples, ", "))
			}
			fmt.Fprintln(w)
		}
	}
	if len(r.Tables) > 0 {
		fmt.Fprintln(w, "not imported:")
		for _, t := range r.Tables {
			fmt.Fprintf(w, "  %s (%d rows): %s\n", t.Table, t.Rows, t.Why)
		}
	}
}

// unmapped says why each KeyAuth table that has no Keyward counterpart is left out.
var unmapped = map[string]string{
	"accounts":     "KeyAuth's own owner accounts: the apps go into the Keyward account named on the command line",
	"acclogs":      "sign-ins of KeyAuth owners to KeyAuth's dashboard",
	"afLogs":       "KeyAuth's affiliate program",
	"auditLog":     "KeyAuth's dashboard audit log: Keyward keeps its own, hash-chained, from now on",
	"buttons":      "seller-panel buttons: Keyward has no seller panel",
	"chatmsgs":     "KeyAuth's chat channels: Keyward has no chat channels (its WebSocket chat is live only)",
	"chatmutes":    "KeyAuth's chat channels: Keyward has no chat channels",
	"chats":        "KeyAuth's chat channels: Keyward has no chat channels",
	"emailverify":  "pending email changes of KeyAuth owners",
	"files":        "KeyAuth files are links to bytes hosted elsewhere, not in the dump: upload each file to its app again",
	"logs":         "client log lines of the past: Keyward's log starts with the import",
	"orders":       "KeyAuth's own subscription orders",
	"resets":       "pending password resets of KeyAuth owners",
	"resetUsers":   "pending password resets of users: they expire anyway",
	"securityKeys": "passkeys of KeyAuth owners: they are bound to KeyAuth's site and cannot move",
	"sellerLogs":   "seller API request log",
	"sessions":     "live client sessions: clients sign in again against Keyward",
	"support":      "KeyAuth support tickets",
	"webhooks":     "KeyAuth webhooks are requests KeyAuth's server makes for the client (webid to URL); Keyward has no server-side request proxy",
	"whitelist":    "addresses KeyAuth lets through its VPN block, which Keyward does not have",
	"tokens":       "KeyAuth tokens are not Keyward access tokens (different use)",
}
