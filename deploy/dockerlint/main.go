// Command dockerlint checks Dockerfiles with BuildKit's own linter, the rules of
// `docker build --check` (casing, JSON form of CMD/ENTRYPOINT, legacy ENV syntax, undefined
// variables, stage names, relative WORKDIR, EXPOSE format, secrets in ARG/ENV, ...),
// experimental rules included. Every finding is an error. No image is pulled: rules that
// need a base image's metadata (InvalidBaseImagePlatform) do not run.
//
//	go run . ../Dockerfile [more Dockerfiles]
//
// It is its own module, like deploy/ferretdb: BuildKit's module requires newer
// OpenTelemetry releases than the server's actor library is built with, and the server's
// module must not move to them for a test tool. No hadolint is available from the package
// registries this project can use (Debian has none; the npm and PyPI wrappers download a
// binary from GitHub at install time), so this is the linter.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/moby/buildkit/client/llb/sourceresolver"
	digest "github.com/opencontainers/go-digest"

	"github.com/moby/buildkit/frontend/dockerfile/dockerfile2llb"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: dockerlint DOCKERFILE...")
		os.Exit(2)
	}
	failed := false
	for _, path := range os.Args[1:] {
		findings, err := lint(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			failed = true
			continue
		}
		for _, f := range findings {
			fmt.Fprintf(os.Stderr, "%s:%s\n", path, f)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// lint answers the findings in one Dockerfile, each as "LINE: RULE: message (URL)".
func lint(path string) ([]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var findings []string
	opt := dockerfile2llb.ConvertOpt{AllStages: true, MetaResolver: offline{}}
	opt.LinterConfig = &linter.Config{ExperimentalAll: true}
	opt.Warn = func(rule, _, url, msg string, loc []parser.Range) {
		line := 0
		if len(loc) > 0 {
			line = loc[0].Start.Line
		}
		findings = append(findings, fmt.Sprintf("%d: %s: %s (%s)", line, rule, msg, url))
	}
	// The outline request reads every stage and runs the same checks as DockerfileLint,
	// without needing a build's source map.
	if _, err := dockerfile2llb.Dockerfile2Outline(context.Background(), raw, opt); err != nil {
		return nil, err
	}
	return findings, nil
}

// offline answers every base image with an empty linux/amd64 configuration, so the linter
// never reaches a registry (tests use loopback only).
type offline struct{}

func (offline) ResolveImageConfig(_ context.Context, ref string, _ sourceresolver.Opt) (string, digest.Digest, []byte, error) {
	return ref, "", []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers"},"config":{}}`), nil
}
