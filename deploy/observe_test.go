package deploy_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"sigs.k8s.io/yaml"

	"github.com/keyward/keyward/internal/testserver"
)

// --- Grafana dashboard and Prometheus alert rules --------------------------------------

const (
	rulesFile     = "prometheus/keyward-alerts.yml"
	dashboardFile = "grafana/keyward.json"
)

// metricName finds the node's metric names in a PromQL expression (every metric the node
// exports starts with keyward_; the rest, such as up, are Prometheus's own).
var metricName = regexp.MustCompile(`\bkeyward_[a-z0-9_]+\b`)

// prometheusOwn are the series Prometheus makes itself for every target.
var prometheusOwn = []string{"up"}

// alertRules are the rules file's expressions by alert name.
func alertRules(t *testing.T) map[string]string {
	t.Helper()
	var doc struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				For         string            `json:"for"`
				Expr        string            `json:"expr"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(readFile(t, rulesFile), &doc); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	out := map[string]string{}
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" {
				t.Errorf("%s: group %s has a rule without alert or expr", rulesFile, g.Name)
				continue
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("%s: alert %s needs a severity label and a summary annotation", rulesFile, r.Alert)
			}
			out[r.Alert] = r.Expr
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no alert", rulesFile)
	}
	return out
}

// grafanaDashboard is the part of Grafana's dashboard model the checks read.
type grafanaDashboard struct {
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaPanel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	GridPos    map[string]int `json:"gridPos"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // a collapsed row's
}

// dashboardQueries checks the dashboard's shape (what Grafana needs to import it) and
// returns its PromQL queries, panel title → expressions.
func dashboardQueries(t *testing.T) map[string][]string {
	t.Helper()
	var d grafanaDashboard
	dec := json.NewDecoder(strings.NewReader(string(readFile(t, dashboardFile))))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("%s: uid %q, title %q, schemaVersion %d: want a uid, a title and schemaVersion >= 36", dashboardFile, d.UID, d.Title, d.SchemaVersion)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" {
		t.Errorf("%s: no datasource variable (templating.list name datasource, type datasource)", dashboardFile)
	}
	out := map[string][]string{}
	ids := map[int]bool{}
	var walk func(ps []grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if ids[p.ID] || p.ID == 0 {
				t.Errorf("%s: panel %q has id %d, missing or taken", dashboardFile, p.Title, p.ID)
			}
			ids[p.ID] = true
			if p.GridPos["w"] == 0 || p.GridPos["h"] == 0 {
				t.Errorf("%s: panel %q has no gridPos size", dashboardFile, p.Title)
			}
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
				t.Errorf("%s: panel %q does not query the ${datasource} variable", dashboardFile, p.Title)
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no target", dashboardFile, p.Title)
			}
			for _, tg := range p.Targets {
				if tg.Expr == "" || tg.RefID == "" {
					t.Errorf("%s: panel %q has a target without expr or refId", dashboardFile, p.Title)
				}
				out[p.Title] = append(out[p.Title], tg.Expr)
			}
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(map[string]any); ok && v.Type == "query" {
			out["variable "+v.Name] = append(out["variable "+v.Name], fmt.Sprint(q["query"]))
		}
	}
	return out
}

// grafanaToPromQL replaces Grafana's variables with values Prometheus parses.
var grafanaToPromQL = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h", "${instance}", ".*", "$instance", ".*")

// promtool is the path of promtool, or "" (the test skips, unless servers are required).
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("KEYWARD_TEST_PROMTOOL"); p != "" {
		return p
	}
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	if os.Getenv("KEYWARD_TEST_REQUIRE_SERVERS") == "1" {
		t.Fatal("promtool is missing (KEYWARD_TEST_PROMTOOL unset, none on PATH): run under deploy/testenv.sh, which installs Debian's prometheus package")
	}
	t.Skip("promtool is missing; run under deploy/testenv.sh")
	return ""
}

// TestAlertRulesPassPromtool runs promtool check rules on the alert rules, and on the
// dashboard's queries written as recording rules (so they parse as PromQL too).
func TestAlertRulesPassPromtool(t *testing.T) {
	bin := promtool(t)
	check := func(path string) {
		t.Helper()
		out, err := exec.Command(bin, "check", "rules", path).CombinedOutput()
		if err != nil {
			t.Errorf("promtool check rules %s: %v\n%s", path, err, out)
		}
	}
	check(rulesFile)

	var rules []map[string]string
	titles := dashboardQueries(t)
	keys := make([]string, 0, len(titles))
	for k := range titles {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, title := range keys {
		for j, expr := range titles[title] {
			if strings.HasPrefix(title, "variable ") {
				continue // label_values(...) is Grafana's, not PromQL
			}
			rules = append(rules, map[string]string{"record": fmt.Sprintf("dashboard:panel%d_%d", i, j), "expr": grafanaToPromQL.Replace(expr)})
		}
	}
	raw, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	check(path)
}

// TestDashboardAndRulesUseMetricsANodeExports starts a real node on FerretDB and Redis,
// makes the traffic that brings out the metrics with labels (requests, a socket refused
// and closed, app and session actors), scrapes /metrics and checks that every metric name
// the rules and the dashboard use is there.
func TestDashboardAndRulesUseMetricsANodeExports(t *testing.T) {
	used := map[string][]string{} // metric → where
	for alert, expr := range alertRules(t) {
		for _, m := range metricName.FindAllString(expr, -1) {
			used[m] = append(used[m], rulesFile+" "+alert)
		}
		if !metricName.MatchString(expr) && !slices.ContainsFunc(prometheusOwn, func(s string) bool { return strings.Contains(expr, s) }) {
			t.Errorf("%s: alert %s uses no node metric", rulesFile, alert)
		}
	}
	for title, exprs := range dashboardQueries(t) {
		for _, expr := range exprs {
			ms := metricName.FindAllString(expr, -1)
			if len(ms) == 0 {
				t.Errorf("%s: %q queries no node metric: %s", dashboardFile, title, expr)
			}
			for _, m := range ms {
				used[m] = append(used[m], dashboardFile+" "+title)
			}
		}
	}

	node := testserver.Start(t, testserver.Pairs[1])
	makeTraffic(t, node)
	// A socket's close is counted when the server's side of it ends, which may be just
	// after the client has read the close frame: scrape until every name is there, a while.
	exported := scrapeNames(t, node.URL+"/metrics")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		missing := false
		for m := range used {
			missing = missing || !exported[m]
		}
		if !missing {
			break
		}
		time.Sleep(50 * time.Millisecond)
		exported = scrapeNames(t, node.URL+"/metrics")
	}
	for m, where := range used {
		if !exported[m] {
			t.Errorf("%s is not exported by a node (used in %s)", m, strings.Join(slices.Compact(slices.Sorted(slices.Values(where))), ", "))
		}
	}
}

// makeTraffic makes the requests whose metrics appear only once labelled: HTTP requests
// (and a 4xx), a client socket refused (bad token) and so closed.
func makeTraffic(t *testing.T, node *testserver.Server) {
	t.Helper()
	for _, p := range []string{"/healthz", "/readyz", "/api/auth/me"} {
		node.Do(t, testserver.Req{Method: "GET", Path: p})
	}
	wsURL := "ws" + strings.TrimPrefix(node.URL, "http") + "/api/client/ws?token=not-a-session"
	conn, _, err := websocket.DefaultDialer.Dial(wsURL, nil)
	if err != nil {
		t.Fatalf("client socket: %v", err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for i := 0; i < 10; i++ { // the refusal message, then the close frame
		if _, _, err := conn.ReadMessage(); err != nil {
			break
		}
	}
}

// scrapeNames reads the metric names of a Prometheus text exposition; a histogram or
// summary also answers to its _bucket, _sum and _count series.
func scrapeNames(t *testing.T, url string) map[string]bool {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && (f[1] == "histogram" || f[1] == "summary") {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					names[f[0]+s] = true
				}
			}
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		name := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		names[name] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("KEYWARD_TEST_DUMP_METRICS") != "" {
		t.Logf("exported: %v", slices.Sorted(func(yield func(string) bool) {
			for n := range names {
				if strings.HasPrefix(n, "keyward_") && !yield(n) {
					return
				}
			}
		}))
	}
	return names
}
