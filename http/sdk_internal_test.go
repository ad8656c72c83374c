package httpapi

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The versions the SDK check installs: openapi-typescript generates the types of the
// description, openapi-fetch is the typed client over them, tsc --strict compiles it.
const (
	sdkGenerator = "openapi-typescript@7.13.0"
	sdkClient    = "openapi-fetch@0.17.0"
	sdkCompiler  = "typescript@5.9.3"
)

// sdkProgram is a small client of the generated SDK: it reads records of several kinds,
// so the compile fails if the description's paths, parameters or schemas do not make a
// usable client.
const sdkProgram = `import createClient from "openapi-fetch";
import type { paths, components } from "./keyward.js";

type License = components["schemas"]["License"];

const api = createClient<paths>({ baseUrl: "http://127.0.0.1:8080", headers: { "X-API-Key": "kws_example" } });

export async function licenseKeys(appId: string): Promise<string[]> {
  const { data, error } = await api.GET("/api/apps/{appId}/licenses", { params: { path: { appId }, query: { limit: 10, search: "ab" } } });
  if (error) {
    throw new Error(error.error.code + ": " + error.error.message);
  }
  const list: License[] = data.data.licenses;
  return list.map((l) => l.key);
}

export async function createUser(appId: string, username: string): Promise<string> {
  const { data, error } = await api.POST("/api/apps/{appId}/users", {
    params: { path: { appId } },
    body: { username, password: "Correct-Horse-9", level: 1 },
  });
  if (error) {
    throw new Error(error.error.code);
  }
  return data.data.id;
}

export async function audit(): Promise<number> {
  const { data } = await api.GET("/api/audit");
  return data ? data.data.total : 0;
}

export async function clientInit(secret: string): Promise<string> {
  const { data } = await api.POST("/api/client/init", { body: { secret, version: "1.0.0" } });
  return data ? data.data.sessionToken : "";
}
`

// TestGeneratedSDKCompiles generates a TypeScript client from the served description with
// openapi-typescript and compiles a program using it with tsc --strict. It needs npm and
// its registry, so it runs only with KEYWARD_TEST_SDK=1 (make sdk-check).
func TestGeneratedSDKCompiles(t *testing.T) {
	if os.Getenv("KEYWARD_TEST_SDK") != "1" {
		t.Skip("set KEYWARD_TEST_SDK=1 (make sdk-check) to generate and compile the TypeScript client")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed")
	}
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("openapi.json", string(servedSpec(t)))
	write("package.json", `{"name":"keyward-sdk-check","private":true,"type":"module"}`)
	write("client.ts", sdkProgram)
	run := func(name string, args ...string) {
		t.Helper()
		start := time.Now()
		cmd := exec.CommandContext(t.Context(), name, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		t.Logf("%s %v: %s", name, args, time.Since(start).Round(time.Millisecond))
	}
	run("npm", "install", "--no-audit", "--no-fund", "--loglevel=error", sdkGenerator, sdkClient, sdkCompiler)
	run("npx", "--no-install", "openapi-typescript", "openapi.json", "-o", "keyward.ts")
	run("npx", "--no-install", "tsc", "--strict", "--noEmit", "--target", "es2022", "--module", "nodenext",
		"--moduleResolution", "nodenext", "--skipLibCheck", "false", "keyward.ts", "client.ts")
}
