package notify

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// testEnv reads files from a map and variables from another; LookPath
// finds the programs of progs.
func testEnv(files map[string]string, vars map[string]string, progs ...string) Env {
	return Env{
		ReadFile: func(name string) ([]byte, error) {
			if s, ok := files[name]; ok {
				return []byte(s), nil
			}
			return nil, fmt.Errorf("open %s: %w", name, fs.ErrNotExist)
		},
		Getenv: func(name string) (string, bool) { v, ok := vars[name]; return v, ok },
		LookPath: func(name string) (string, error) {
			for _, p := range progs {
				if p == name {
					return "/bin/" + name, nil
				}
			}
			return "", errors.New("exec: " + name + ": not found")
		},
	}
}

// diagLines are diags as "line:col: summary".
func diagLines(diags hcl.Diagnostics) []string {
	var out []string
	for _, d := range diags {
		s := d.Summary
		if d.Subject != nil {
			s = fmt.Sprintf("%d:%d: %s", d.Subject.Start.Line, d.Subject.Start.Column, s)
		}
		out = append(out, s)
	}
	return out
}

func TestParseConfig(t *testing.T) {
	files := map[string]string{"hook.secret": "s3cret\n", "slack.url": "https://hooks.example/T0/B0/XXXX\n", "empty": " \n"}
	vars := map[string]string{"SLACK_URL": "https://hooks.example/T1/B1/YYYY", "EMPTY": ""}
	const good = `
base_url: https://fuelsync.example/
queue: 5
retries: 2
retry_backoff: 100ms
providers:
  - name: hook
    type: webhook
    url: http://127.0.0.1:9/in
    secret_file: hook.secret
    clusters: [prod-*, staging]
    events: [run.failed, node.failed]
  - name: chat
    type: slack
    url_env: SLACK_URL
    channel: '#ops'
    severity: error
  - name: page
    type: command
    command: [pager, --team, ops]
    timeout: 3s
`
	cfg, diags := ParseConfig("n.yaml", []byte(good), testEnv(files, vars, "pager"))
	if diags.HasErrors() {
		t.Fatalf("diagnostics: %v", diagLines(diags))
	}
	if cfg.BaseURL != "https://fuelsync.example" || cfg.Queue != 5 || cfg.Retries != 2 || cfg.Backoff != 100*time.Millisecond {
		t.Errorf("config: %+v", cfg)
	}
	hook, chat, page := cfg.Providers[0], cfg.Providers[1], cfg.Providers[2]
	if string(hook.Secret) != "s3cret" || hook.URL != "http://127.0.0.1:9/in" || hook.Timeout != DefaultTimeout {
		t.Errorf("webhook: %+v", hook)
	}
	if chat.URL != vars["SLACK_URL"] || chat.Channel != "#ops" || chat.Severity != Error {
		t.Errorf("slack: %+v", chat)
	}
	if strings.Join(page.Argv, " ") != "/bin/pager --team ops" || page.Timeout != 3*time.Second {
		t.Errorf("command: %+v", page)
	}

	tests := []struct {
		name, src string
		want      []string
	}{
		{"not a mapping", "- a\n", []string{"1:1: the notification config is a list, not a mapping"}},
		{"no providers", "queue: 3\n", []string{"1:1: the notification config has no providers"}},
		{"unknown keys", "queu: 3\nproviders:\n  - {name: a, type: command, command: [pager], clusterz: [x]}\n",
			[]string{`1:1: unknown key queu (did you mean "queue"?)`, `3:48: unknown key providers[0].clusterz (did you mean "clusters"?)`}},
		{"bounds", "queue: 0\nretries: 99\nretry_backoff: 2h\nproviders: [{name: a, type: command, command: [pager], timeout: -1s}]\n",
			[]string{"1:8: queue is an integer from 1 to 10000", "2:10: retries is an integer from 0 to 20",
				"3:16: retry_backoff is a duration above 0 and at most 1m0s", "4:65: providers[0].timeout is a duration above 0 and at most 5m0s"}},
		{"type", "providers: [{name: a, type: webhok, url: 'http://x'}]\n",
			[]string{`1:29: providers[0].type "webhok" is not webhook, slack or command (did you mean "webhook"?)`}},
		{"names", "providers:\n  - {name: a, type: command, command: [pager]}\n  - {name: a, type: command, command: [pager]}\n  - {name: B!, type: command, command: [pager]}\n  - {type: command, command: [pager]}\n",
			[]string{`3:12: provider name "a" is used twice`, `4:12: providers[2].name "B!" is not a name (lowercase letters, digits, '.', '_', '-')`, "5:5: providers[3] has no name"}},
		{"url missing, twice, bad; the credential not quoted", "providers:\n  - {name: a, type: slack}\n  - {name: b, type: webhook, url: 'http://x', url_env: SLACK_URL}\n  - {name: c, type: slack, url: 'ftp://secret-token@x'}\n  - {name: d, type: slack, url_file: slack.url, secret_file: hook.secret}\n",
			[]string{"2:5: providers[0] has no url", "3:47: providers[1] has url and url_env: give one", "4:33: providers[2].url is not an http:// or https:// URL",
				"5:49: providers[3]: a slack provider takes no secret_file"}},
		{"secrets unreadable or empty", "providers:\n  - {name: a, type: webhook, url: 'http://x', secret_file: nope}\n  - {name: b, type: webhook, url: 'http://x', secret_file: empty}\n  - {name: c, type: webhook, url_env: UNSET, secret_env: EMPTY}\n",
			[]string{"2:60: providers[0].secret_file: open nope: file does not exist", "3:60: providers[1].secret_file: the secret is empty",
				"4:39: providers[2].url_env: the environment variable UNSET is not set", "4:58: providers[2].secret_env: the secret is empty"}},
		{"command", "providers:\n  - {name: a, type: command}\n  - {name: b, type: command, command: []}\n  - {name: c, type: command, command: [nope], url: 'http://x'}\n",
			[]string{"2:5: providers[0] (a command provider) has no command", "3:39: providers[1].command is a list of strings (the program, then its arguments)",
				"4:40: providers[2].command: exec: nope: not found", "4:47: providers[2]: a command provider takes no url"}},
		{"filters", "providers:\n  - {name: a, type: command, command: [pager], clusters: ['[x'], events: [run.fail], severity: high}\n",
			[]string{`2:59: providers[0].clusters: "[x" is not a pattern`, `2:75: providers[0].events: "run.fail" is not an event type (did you mean "run.failed"?)`,
				`2:96: providers[0].severity "high" is not info or error`}},
		{"yaml syntax", "providers: [\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, diags := ParseConfig("n.yaml", []byte(tt.src), testEnv(files, vars, "pager"))
			if !diags.HasErrors() || cfg != nil {
				t.Fatalf("accepted: %+v", cfg)
			}
			for _, d := range diags {
				if d.Subject == nil && tt.want != nil {
					t.Errorf("no position: %s", d.Summary)
				}
				for _, secret := range []string{"s3cret", "XXXX", "YYYY", "secret-token"} {
					if strings.Contains(d.Summary+d.Detail, secret) {
						t.Errorf("a diagnostic quotes a credential: %s", d.Summary)
					}
				}
			}
			if tt.want == nil {
				return
			}
			if got := strings.Join(diagLines(diags), "\n"); got != strings.Join(tt.want, "\n") {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", got, strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestParseConfigHCL: the same configuration in HCL, its errors at their
// line and column.
func TestParseConfigHCL(t *testing.T) {
	src := `retries = 1
providers = [
  {
    name = "hook"
    type = "webhook"
    url  = "http://127.0.0.1:9/in"
    events = ["run.failed"]
  },
]
`
	cfg, diags := ParseConfig("n.hcl", []byte(src), testEnv(nil, nil))
	if diags.HasErrors() {
		t.Fatalf("diagnostics: %v", diagLines(diags))
	}
	if cfg.Retries != 1 || len(cfg.Providers) != 1 || cfg.Providers[0].Events[0] != RunFailed {
		t.Errorf("config: %+v %+v", cfg, cfg.Providers[0])
	}
	bad := strings.Replace(src, `"webhook"`, `"webhok"`, 1)
	_, diags = ParseConfig("n.hcl", []byte(bad), testEnv(nil, nil))
	if got := strings.Join(diagLines(diags), "\n"); !strings.HasPrefix(got, `5:12: providers[0].type "webhok" is not webhook`) {
		t.Errorf("diagnostics: %s", got)
	}
}

// TestLoadConfig: the files a configuration names are relative to its
// directory; a file over MaxConfigFile is refused.
func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "secret"), []byte("k\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "hook.sh"), []byte("#!/bin/sh\n"), 0o755)
	name := filepath.Join(dir, "n.yaml")
	os.WriteFile(name, []byte("providers:\n  - {name: a, type: webhook, url: 'http://x/TOKEN', secret_file: secret}\n  - {name: b, type: command, command: [./hook.sh]}\n"), 0o600)
	cfg, files, diags := LoadConfig(name)
	if diags.HasErrors() {
		t.Fatalf("diagnostics: %v", diagLines(diags))
	}
	if string(cfg.Providers[0].Secret) != "k" || cfg.Providers[1].Argv[0] != filepath.Join(dir, "hook.sh") || files[name] == nil {
		t.Errorf("config: %+v %+v", cfg.Providers[0], cfg.Providers[1])
	}
	// The source the diagnostics quote has the URL masked, its lines and
	// columns kept.
	if src := string(files[name].Bytes); strings.Contains(src, "TOKEN") || !strings.Contains(src, "url: ****************, secret_file") {
		t.Errorf("the source quoted is not masked:\n%s", src)
	}
	os.WriteFile(name, make([]byte, MaxConfigFile+1), 0o600)
	if _, _, diags := LoadConfig(name); !diags.HasErrors() || !strings.Contains(diags[0].Summary, "over") {
		t.Errorf("a file over the bound: %v", diagLines(diags))
	}
}

func TestWants(t *testing.T) {
	p := &Provider{Clusters: []string{"prod-*"}, Events: []string{RunFailed, ClusterHeld}, Severity: Error}
	tests := []struct {
		cluster, typ string
		want         bool
	}{
		{"prod-1", RunFailed, true},
		{"prod-1", ClusterHeld, true},
		{"staging", RunFailed, false}, // cluster
		{"prod-1", RunStarted, false}, // event
	}
	for _, tt := range tests {
		if got := p.Wants(&Event{Cluster: tt.cluster, Type: tt.typ, Severity: SeverityOf(tt.typ)}); got != tt.want {
			t.Errorf("Wants(%s, %s) = %v", tt.cluster, tt.typ, got)
		}
	}
	sev := &Provider{Severity: Error}
	if sev.Wants(&Event{Type: ClusterSynced, Severity: Info}) || !sev.Wants(&Event{Type: NodeFailed, Severity: Error}) {
		t.Error("severity: error takes the errors only")
	}
	if !(&Provider{}).Wants(&Event{Type: RunStarted, Cluster: "x"}) {
		t.Error("a provider without filters takes every event")
	}
}
