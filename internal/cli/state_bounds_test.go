package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStateURLCredentialsRefused: --state with user:password@ (or the state
// setting with it) is refused before anything connects, and the password is
// in no output (it was printed in state show's State: line, and unused).
func TestStateURLCredentialsRefused(t *testing.T) {
	repo := quickstartRepo(t)
	wd := filepath.Join(t.TempDir(), "wd")
	for _, args := range [][]string{
		{"--repo", repo, "--workdir", wd, "--state", "etcd://alice:hunter2@127.0.0.1:9/fuelsync", "state", "show"},
		{"--repo", repo, "--workdir", wd, "--state", "etcd://alice:hunter2@127.0.0.1:9/fuelsync", "plan"},
	} {
		code, out, stderr := fuelsyncRun(t, args...)
		if code != 1 || !strings.Contains(stderr, "put them in --etcd-auth-file") || strings.Contains(out+stderr, "hunter2") {
			t.Errorf("%q: exit %d\n%s%s", args[len(args)-1], code, out, stderr)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "fuelsync.yaml"), []byte("state: etcd://alice:hunter2@127.0.0.1:9/fuelsync\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The message does not repeat the value (the source snippet below it
	// shows the file's line, as for every diagnostic).
	code, out, stderr := fuelsyncRun(t, "--repo", repo, "validate")
	line, _, _ := strings.Cut(stderr, "\n  1 | ")
	if code == 0 || !strings.Contains(line, "fuelsync.yaml:1:8: error: fuelsync.yaml: state has an @ in it: credentials") || strings.Contains(out+line, "hunter2") {
		t.Errorf("validate with credentials in state: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = fuelsyncRun(t, "--repo", repo, "--workdir", wd, "plan")
	if code != 1 || !strings.Contains(stderr, "state has an @ in it") {
		t.Errorf("plan with credentials in the state setting: exit %d\n%s%s", code, out, stderr)
	}
}

// TestStatePushBoundsCLI: state push refuses serials that leave no room for
// applies (above 2^52: 2^63-2 was taken, and two applies wrapped it to -2^63)
// and a state with a 30 MB field, saying why, and the work directory is as it was.
func TestStatePushBoundsCLI(t *testing.T) {
	repo := quickstartRepo(t)
	wd := filepath.Join(t.TempDir(), "wd")
	base := []string{"--repo", repo, "--workdir", wd}
	if code, _, stderr := fuelsyncRun(t, append(base, "apply", "--auto-approve", "-q")...); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, stderr)
	}
	code, pulled, stderr := fuelsyncRun(t, append(base, "state", "pull")...)
	if code != 0 {
		t.Fatalf("state pull: exit %d\n%s", code, stderr)
	}
	before := snapshot(t, wd)
	for _, tc := range []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"serial 2^63-1", func(m map[string]any) { m["serial"] = json.Number("9223372036854775807") }, "leaves no room"},
		{"serial 2^63-2", func(m map[string]any) { m["serial"] = json.Number("9223372036854775806") }, "leaves no room"},
		{"serial 2^52+1", func(m map[string]any) { m["serial"] = json.Number("4503599627370497") }, "state push takes serials up to 4503599627370496 (2^52)"},
		{"a 30 MB revision", func(m map[string]any) { m["revision"] = strings.Repeat("r", 30<<20) }, "its revision is 31457280 bytes long, over 256"},
	} {
		dec := json.NewDecoder(strings.NewReader(pulled))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		tc.edit(m)
		data, _ := json.Marshal(m)
		file := filepath.Join(t.TempDir(), "state.json")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, stderr := fuelsyncRun(t, append(base, "state", "push", file)...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d\n%s%s\nwant %q", tc.name, code, out, stderr, tc.want)
		}
	}
	unchangedFiles(t, "the work directory", before, snapshot(t, wd))
}

// TestStatePushSerialRoom: a state pushed at serial 2^52, the largest push
// takes, is applied over: the next apply is serial 2^52+1.
func TestStatePushSerialRoom(t *testing.T) {
	repo := quickstartRepo(t)
	wd := filepath.Join(t.TempDir(), "wd")
	base := []string{"--repo", repo, "--workdir", wd}
	if code, _, stderr := fuelsyncRun(t, append(base, "apply", "--auto-approve", "-q")...); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, stderr)
	}
	_, pulled, _ := fuelsyncRun(t, append(base, "state", "pull")...)
	const top = "4503599627370496"
	pushed := strings.Replace(pulled, `"serial": 1,`, `"serial": `+top+`,`, 1)
	file := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(file, []byte(pushed), 0o644); err != nil {
		t.Fatal(err)
	}
	// A push into a work directory needs the set of its serial there.
	if err := os.CopyFS(filepath.Join(wd, "artifacts", top), os.DirFS(filepath.Join(wd, "artifacts", "1"))); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := fuelsyncRun(t, append(base, "state", "push", file)...); code != 0 {
		t.Fatalf("state push of serial 2^52: exit %d\n%s%s", code, out, stderr)
	}
	cluster := filepath.Join(repo, "clusters", "demo.yaml")
	data, err := os.ReadFile(cluster)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cluster, []byte(strings.Replace(string(data), "node-4: {id: 4, roles: [compute]}", "node-4: {id: 4, roles: [compute, storage]}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := fuelsyncRun(t, append(base, "apply", "--auto-approve")...); code != 0 || !strings.Contains(out, "serial 4503599627370497") {
		t.Errorf("apply after serial 2^52: exit %d\n%s%s", code, out, stderr)
	}
}
