package render

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/internal/testenv"
	"github.com/fuelsync/fuelsync/loader"
)

var (
	fuzzCacheMu sync.Mutex
	fuzzCacheV  *loader.Cache
)

// fuzzCache is the cache FuzzCheck's loads share: the base repository's files
// are decoded once, not for every input. A cache never forgets, and each input
// adds its own files: past 4,096 decodes it is replaced by a new one.
func fuzzCache() *loader.Cache {
	fuzzCacheMu.Lock()
	defer fuzzCacheMu.Unlock()
	if fuzzCacheV != nil {
		if _, misses := fuzzCacheV.Stats(); misses < 4096 {
			return fuzzCacheV
		}
	}
	fuzzCacheV = loader.NewCache()
	return fuzzCacheV
}

// FuzzCheck builds the merged model of a fuzzed cluster spec and a fuzzed role file
// against the base repository. Whatever the input: no panic, and every diagnostic
// points inside the file it names.
//
// Two things made it run 72 inputs in 85 s: decoding the base repository's
// fixed files again for every input (two thirds of the time of an input, about
// 3 ms, under the fuzzer's instrumentation), and the fuzzing engine minimizing
// each input that finds new coverage for up to a minute, quadratic in its
// length. The fixed files are now decoded once, through a loader.Cache shared
// by the inputs (renewed every few thousand decodes, so that the fuzzed files
// it also keeps do not add up); and minimizing tries at most 50 candidates for
// each of the two strings of an input unless -fuzzminimizetime says otherwise
// (testenv.ShortMinimize; a time limit did not help: a fresh run finds new
// coverage every few inputs, and even 100 ms of minimizing each left 50 inputs
// a second). Every input is checked as before. Measured, 20 s from an empty
// corpus: 95 inputs before (with the cache), 10,186 after.
func FuzzCheck(f *testing.F) {
	testenv.ShortMinimize(f, "50x")
	f.Add(baseCluster, extRoles)
	for _, tc := range renderCases() {
		for _, e := range tc.edits {
			if e.file == "clusters/prod.yaml" && e.old != "" {
				f.Add(strings.Replace(baseCluster, e.old, e.new, 1), extRoles)
			}
		}
	}
	f.Add(baseCluster, "ext-role:\n  name: x\n  description: y\n  limits: {min: \"settings:ext.mode.value\", max: \"(\"}\n  conflicts: '*'\n")
	f.Add(baseCluster, "ext-role:\n  name: x\n  description: y\n  restrictions: ['cluster:mode == \"x\" and', {\"a:b\": c}, {condition: 1}]\n")
	f.Fuzz(func(t *testing.T, cluster, roles string) {
		files := baseFiles()
		files["clusters/prod.yaml"] = cluster
		files["plugins/ext/node_roles.yaml"] = roles
		done := make(chan struct{})
		var repo *loader.Repo
		var diags, more hcl.Diagnostics
		go func() {
			defer close(done)
			repo, diags = loader.Load(mapFS(files), loader.Options{Cache: fuzzCache()})
			_, more = Check(repo)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("no result after 5s")
		}
		for _, d := range append(diags, more...) {
			if d.Subject == nil {
				continue
			}
			src, ok := files[d.Subject.Filename]
			if !ok {
				continue // a directory or a file the fuzzer cannot change
			}
			if lines := strings.Count(src, "\n") + 1; d.Subject.Start.Line < 1 || d.Subject.Start.Line > lines {
				t.Errorf("%s: line %d outside the file (%d lines): %s", d.Subject.Filename, d.Subject.Start.Line, lines, d.Summary)
			}
		}
	})
}
