package deploy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/keyward/keyward/internal/testserver"
	"github.com/keyward/keyward/server"
)

// --- compose.yaml -------------------------------------------------------------------

// composeSchema compiles the vendored compose-spec schema (schema/README.md) with the
// duration format compose-go registers for it.
func composeSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("schema/compose-spec.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("compose-spec.json: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.RegisterFormat(&jsonschema.Format{Name: "duration", Validate: func(v any) error {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		_, err := time.ParseDuration(s)
		return err
	}})
	if err := c.AddResource("compose-spec.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("compose-spec.json")
	if err != nil {
		t.Fatalf("compile compose-spec.json: %v", err)
	}
	return s
}

// yamlDoc reads a YAML document as JSON values (anchors and merge keys resolved), the form
// JSON schemas and the checks below work on.
func yamlDoc(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatalf("YAML: %v", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("YAML document is a %T, not a mapping", v)
	}
	return m
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestComposeFileFollowsTheComposeSpec(t *testing.T) {
	schema := composeSchema(t)
	doc := yamlDoc(t, readFile(t, "compose.yaml"))
	if err := schema.Validate(doc); err != nil {
		t.Fatalf("compose.yaml does not follow the compose spec:\n%v", err)
	}

	// The check has teeth: a misspelt key and a wrong type are refused.
	services := doc["services"].(map[string]any)
	node := services["keyward1"].(map[string]any)
	node["restrat"] = "always"
	if err := schema.Validate(doc); err == nil {
		t.Fatal("a misspelt service key passed the schema")
	}
	delete(node, "restrat")
	node["healthcheck"].(map[string]any)["intervall"] = "10s"
	if err := schema.Validate(doc); err == nil {
		t.Fatal("a misspelt healthcheck key passed the schema")
	}
}

// keywardServices answers the compose services that run `keyward` (built from the
// Dockerfile), by name.
func keywardServices(t *testing.T, doc map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for name, s := range doc["services"].(map[string]any) {
		svc := s.(map[string]any)
		if b, ok := svc["build"].(map[string]any); ok && b["dockerfile"] == "deploy/Dockerfile" {
			out[name] = svc
		}
	}
	if len(out) < 3 {
		t.Fatalf("compose.yaml runs %d keyward nodes, want 3 or more", len(out))
	}
	return out
}

// --- k8s/ ---------------------------------------------------------------------------

// manifest is one object of deploy/k8s, decoded into its Kubernetes API type.
type manifest struct {
	file string
	kind string
	name string
	obj  any
}

// newObject answers an empty object of the API type of apiVersion and kind; these are
// the kinds deploy/k8s may use.
func newObject(apiVersion, kind string) (any, bool) {
	switch apiVersion + " " + kind {
	case "v1 Secret":
		return &corev1.Secret{}, true
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}, true
	case "v1 Service":
		return &corev1.Service{}, true
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}, true
	case "apps/v1 StatefulSet":
		return &appsv1.StatefulSet{}, true
	case "batch/v1 Job":
		return &batchv1.Job{}, true
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, true
	}
	return nil, false
}

// decodeManifests decodes every document of raw strictly: an unknown or misspelt field,
// a wrong type or an unknown kind is an error.
func decodeManifests(file string, raw []byte) ([]manifest, error) {
	var out []manifest
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(raw), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return nil, fmt.Errorf("%s document %d: %w", file, i+1, err)
		}
		obj, ok := newObject(tm.APIVersion, tm.Kind)
		if !ok {
			return nil, fmt.Errorf("%s document %d: unknown kind %s %s", file, i+1, tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			return nil, fmt.Errorf("%s document %d (%s): %w", file, i+1, tm.Kind, err)
		}
		name := obj.(metav1.Object).GetName()
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return nil, fmt.Errorf("%s: %s name %q: %s", file, tm.Kind, name, strings.Join(errs, "; "))
		}
		out = append(out, manifest{file: file, kind: tm.Kind, name: name, obj: obj})
	}
	return out, nil
}

// k8sManifests decodes the files kustomization.yaml lists, and checks that it lists every
// manifest in the folder.
func k8sManifests(t *testing.T) []manifest {
	t.Helper()
	var kust struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	if err := yaml.UnmarshalStrict(readFile(t, "k8s/kustomization.yaml"), &kust); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if kust.APIVersion != "kustomize.config.k8s.io/v1beta1" || kust.Kind != "Kustomization" {
		t.Fatalf("kustomization.yaml is %s %s", kust.APIVersion, kust.Kind)
	}
	files, _ := filepath.Glob("k8s/*.yaml")
	var want []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" {
			want = append(want, b)
		}
	}
	got := slices.Clone(kust.Resources)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Fatalf("kustomization.yaml lists %v, the folder has %v", got, want)
	}
	var all []manifest
	for _, f := range kust.Resources {
		ms, err := decodeManifests(f, readFile(t, filepath.Join("k8s", f)))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ms...)
	}
	return all
}

// podTemplate answers the pod template of a workload.
func podTemplate(m manifest) (*corev1.PodTemplateSpec, *metav1.LabelSelector, bool) {
	switch o := m.obj.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template, o.Spec.Selector, true
	case *appsv1.StatefulSet:
		return &o.Spec.Template, o.Spec.Selector, true
	case *batchv1.Job:
		return &o.Spec.Template, o.Spec.Selector, true
	}
	return nil, nil, false
}

func find[T any](ms []manifest, name string) (T, bool) {
	for _, m := range ms {
		if o, ok := m.obj.(T); ok && m.name == name {
			return o, true
		}
	}
	var zero T
	return zero, false
}

func TestKubernetesManifestsDecodeStrictlyAndHoldTogether(t *testing.T) {
	ms := k8sManifests(t)
	for _, m := range ms {
		tpl, sel, ok := podTemplate(m)
		if !ok {
			continue
		}
		where := m.file + ": " + m.kind + " " + m.name
		if sel != nil {
			s, err := metav1.LabelSelectorAsSelector(sel)
			if err != nil || s.Empty() || !s.Matches(labels.Set(tpl.Labels)) {
				t.Errorf("%s: selector %v does not pick its own pods (labels %v)", where, sel, tpl.Labels)
			}
		} else if m.kind != "Job" {
			t.Errorf("%s has no selector", where)
		}
		if ss, ok := m.obj.(*appsv1.StatefulSet); ok {
			if _, ok := find[*corev1.Service](ms, ss.Spec.ServiceName); !ok {
				t.Errorf("%s: serviceName %q is no Service here", where, ss.Spec.ServiceName)
			}
		}
		volumes := map[string]bool{}
		for _, v := range tpl.Spec.Volumes {
			volumes[v.Name] = true
			if v.ConfigMap != nil {
				if _, ok := find[*corev1.ConfigMap](ms, v.ConfigMap.Name); !ok {
					t.Errorf("%s: volume %s: no ConfigMap %q", where, v.Name, v.ConfigMap.Name)
				}
			}
		}
		if ss, ok := m.obj.(*appsv1.StatefulSet); ok {
			for _, c := range ss.Spec.VolumeClaimTemplates {
				volumes[c.Name] = true
			}
		}
		for _, c := range tpl.Spec.Containers {
			if c.Image == "" {
				t.Errorf("%s: container %s has no image", where, c.Name)
			}
			ports := map[string]bool{}
			for _, p := range c.Ports {
				ports[p.Name] = true
			}
			for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
				if p != nil && p.HTTPGet != nil && p.HTTPGet.Port.StrVal != "" && !ports[p.HTTPGet.Port.StrVal] {
					t.Errorf("%s: probe port %q is not a port of container %s", where, p.HTTPGet.Port.StrVal, c.Name)
				}
			}
			for _, vm := range c.VolumeMounts {
				if !volumes[vm.Name] {
					t.Errorf("%s: container %s mounts unknown volume %q", where, c.Name, vm.Name)
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
					continue
				}
				ref := e.ValueFrom.SecretKeyRef
				sec, ok := find[*corev1.Secret](ms, ref.Name)
				if !ok {
					t.Errorf("%s: %s reads Secret %q, which is not here", where, e.Name, ref.Name)
				} else if sec.StringData[ref.Key] == "" {
					t.Errorf("%s: %s reads key %q of Secret %s, which it does not have", where, e.Name, ref.Key, ref.Name)
				}
			}
		}
	}
	for _, m := range ms {
		svc, ok := m.obj.(*corev1.Service)
		if !ok {
			continue
		}
		matched := false
		for _, w := range ms {
			tpl, _, ok := podTemplate(w)
			if !ok || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(tpl.Labels)) {
				continue
			}
			matched = true
			for _, p := range svc.Spec.Ports {
				if name := p.TargetPort.StrVal; name != "" && !slices.ContainsFunc(tpl.Spec.Containers, func(c corev1.Container) bool {
					return slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == name })
				}) {
					t.Errorf("Service %s: targetPort %q is no port of %s %s", svc.Name, name, w.kind, w.name)
				}
			}
		}
		if !matched || len(svc.Spec.Selector) == 0 {
			t.Errorf("Service %s selects no pods", svc.Name)
		}
	}
}

func TestManifestDecodingRefusesMistakes(t *testing.T) {
	for name, doc := range map[string]string{
		"misspelt field": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replica: 3\n",
		"wrong type":     "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  ports: [{port: eighty}]\n",
		"unknown kind":   "apiVersion: apps/v1\nkind: Deploymnet\nmetadata: {name: x}\n",
		"bad name":       "apiVersion: v1\nkind: Secret\nmetadata: {name: Keyward_Secret}\n",
	} {
		if _, err := decodeManifests(name, []byte(doc)); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

// --- Dockerfile ---------------------------------------------------------------------

// TestDockerfilePassesBuildKitsLinter runs deploy/dockerlint (its own module: see its
// doc). Its first run compiles BuildKit's Dockerfile frontend, about a minute on two cores;
// later runs come from the build cache.
func TestDockerfilePassesBuildKitsLinter(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles BuildKit's Dockerfile frontend on the first run")
	}
	bad := filepath.Join(t.TempDir(), "Dockerfile")
	if err := os.WriteFile(bad, []byte("from alpine AS x\nENV A 1\nCMD echo hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", ".", "../Dockerfile", bad)
	cmd.Dir = "dockerlint"
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.CombinedOutput()
	text := string(out)
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("dockerlint did not run: %v\n%s", err, text)
	}
	// The known-bad file proves the linter ran its rules; the real one must have no finding.
	for _, rule := range []string{"LegacyKeyValueFormat", "JSONArgsRecommended", "FromAsCasing"} {
		if !strings.Contains(text, bad+":") || !strings.Contains(text, rule) {
			t.Errorf("the bad Dockerfile got no %s finding:\n%s", rule, text)
		}
	}
	if strings.Contains(text, "../Dockerfile") {
		t.Errorf("deploy/Dockerfile has lint findings:\n%s", text)
	}
}

// --- the deploy files against the binary ------------------------------------------

// servedSettings answers the environment variables `keyward serve --help` lists.
func servedSettings(t *testing.T) map[string]bool {
	t.Helper()
	var help bytes.Buffer
	_, err := server.LoadConfig("keyward serve", []string{"--help"}, func(string) string { return "" }, &help)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`\[\$(KEYWARD_[A-Z0-9_]+)\]`).FindAllStringSubmatch(help.String(), -1) {
		names[m[1]] = true
	}
	if len(names) < 20 || !names["KEYWARD_REDIS_URL"] {
		t.Fatalf("the help lists %d settings:\n%s", len(names), help.String())
	}
	return names
}

// dockerfileEnv answers the settings and the health check URL of the Dockerfile.
func dockerfileEnv(t *testing.T) (env map[string]string, health string) {
	t.Helper()
	raw := string(readFile(t, "Dockerfile"))
	raw = strings.ReplaceAll(raw, "\\\n", " ")
	env = map[string]string{}
	for _, line := range strings.Split(raw, "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && f[0] == "ENV" {
			for _, kv := range f[1:] {
				if k, v, ok := strings.Cut(kv, "="); ok {
					env[k] = v
				}
			}
		}
		if len(f) > 1 && f[0] == "HEALTHCHECK" {
			health = regexp.MustCompile(`http://\S+`).FindString(line)
		}
	}
	if health == "" {
		t.Fatal("the Dockerfile has no HEALTHCHECK URL")
	}
	return env, health
}

// TestDeployFilesUseWhatTheBinaryReads compares every KEYWARD_ setting, secret and probe in
// the Dockerfile, compose.yaml and k8s/ with the settings `keyward serve --help` lists and
// the paths a real node serves; and loads each node's settings with the server's own
// configuration parser.
func TestDeployFilesUseWhatTheBinaryReads(t *testing.T) {
	known := servedSettings(t)
	checkNames := func(where string, env map[string]string) {
		t.Helper()
		for k := range env {
			if strings.HasPrefix(k, "KEYWARD_") && !known[k] {
				t.Errorf("%s sets %s, which `keyward serve --help` does not list", where, k)
			}
		}
		for _, k := range []string{"KEYWARD_MONGO_URI", "KEYWARD_REDIS_URL", "KEYWARD_JWT_SECRET", "KEYWARD_SECRETS_KEY", "KEYWARD_TRUSTED_PROXIES"} {
			if where != "Dockerfile" && env[k] == "" {
				t.Errorf("%s does not set %s, which every node of a cluster needs", where, k)
			}
		}
	}
	// The settings parse: the server's own parser accepts them (a placeholder secret or
	// secrets key is replaced by one long enough, as the operator is told to do).
	loads := func(where string, env map[string]string) {
		t.Helper()
		getenv := func(k string) string {
			if k == "KEYWARD_JWT_SECRET" || k == "KEYWARD_SECRETS_KEY" {
				return strings.Repeat("s", 40)
			}
			return env[k]
		}
		if _, err := server.LoadConfig("keyward serve", nil, getenv, &bytes.Buffer{}); err != nil {
			t.Errorf("%s: the server refuses its settings: %v", where, err)
		}
	}

	dockerEnv, dockerHealth := dockerfileEnv(t)
	checkNames("Dockerfile", dockerEnv)
	_, port, _ := strings.Cut(dockerEnv["KEYWARD_ADDR"], ":")
	if port != "8080" {
		t.Fatalf("the Dockerfile's KEYWARD_ADDR is %q; the files below expect port 8080", dockerEnv["KEYWARD_ADDR"])
	}
	paths := map[string]string{"Dockerfile HEALTHCHECK": dockerHealth}

	compose := yamlDoc(t, readFile(t, "compose.yaml"))
	for name, svc := range keywardServices(t, compose) {
		env := map[string]string{}
		for k, v := range svc["environment"].(map[string]any) {
			env[k] = fmt.Sprint(v)
		}
		checkNames("compose.yaml "+name, env)
		merged := map[string]string{}
		for k, v := range dockerEnv {
			merged[k] = v
		}
		for k, v := range env {
			merged[k] = v
		}
		loads("compose.yaml "+name, merged)
		test := svc["healthcheck"].(map[string]any)["test"].([]any)
		paths["compose.yaml "+name+" healthcheck"] = fmt.Sprint(test[len(test)-1])
	}

	ms := k8sManifests(t)
	dep, ok := find[*appsv1.Deployment](ms, "keyward")
	if !ok {
		t.Fatal("k8s/ has no Deployment keyward")
	}
	for _, c := range dep.Spec.Template.Spec.Containers {
		env := map[string]string{}
		for _, e := range c.Env {
			switch {
			case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
				sec, _ := find[*corev1.Secret](ms, e.ValueFrom.SecretKeyRef.Name)
				if sec != nil {
					env[e.Name] = sec.StringData[e.ValueFrom.SecretKeyRef.Key]
				}
			default:
				env[e.Name] = e.Value
			}
		}
		for _, secretOnly := range []string{"KEYWARD_JWT_SECRET", "KEYWARD_SECRETS_KEY", "KEYWARD_MONGO_URI", "KEYWARD_REDIS_URL"} {
			if slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == secretOnly && e.Value != "" }) {
				t.Errorf("k8s Deployment: %s is a plain value; it belongs in the Secret", secretOnly)
			}
		}
		checkNames("k8s Deployment", env)
		for k, v := range dockerEnv {
			if _, ok := env[k]; !ok {
				env[k] = v
			}
		}
		loads("k8s Deployment", env)
		for _, c2 := range c.Ports {
			if c2.Name == "http" && c2.ContainerPort != 8080 {
				t.Errorf("k8s Deployment: port http is %d, the image listens on 8080", c2.ContainerPort)
			}
		}
		for what, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
			if p == nil || p.HTTPGet == nil {
				t.Errorf("k8s Deployment: no HTTP %s probe", what)
				continue
			}
			paths["k8s "+what+" probe"] = "http://127.0.0.1:8080" + p.HTTPGet.Path
		}
	}
	if p := paths["k8s readiness probe"]; !strings.HasSuffix(p, "/readyz") {
		t.Errorf("the k8s readiness probe asks %s, not /readyz (which checks the storage and cluster engines)", p)
	}

	// Every probe URL names port 8080 and a path a real node answers with 200.
	node := testserver.Start(t, testserver.Pairs[0])
	for where, raw := range paths {
		u, err := url.Parse(raw)
		if err != nil || u.Port() != "8080" || u.Path == "" {
			t.Errorf("%s: %q is not http://HOST:8080/PATH", where, raw)
			continue
		}
		resp, err := http.Get(node.URL + u.Path)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: a node answers %s with %d %v", where, u.Path, resp.StatusCode, body)
		}
	}
}
