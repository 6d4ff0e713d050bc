package notify

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
)

// Provider types.
const (
	Webhook = "webhook"
	Slack   = "slack"
	Command = "command"
)

// Config is a --notify-config file, checked, its files read.
type Config struct {
	// BaseURL is where serve's pages are reached (links in the events), ""
	// for none.
	BaseURL string
	// Queue bounds the events waiting for each provider; Retries the
	// attempts after the first; Backoff the first wait between attempts
	// (doubled each time, at most MaxBackoff).
	Queue   int
	Retries int
	Backoff time.Duration
	// Providers, in the order written.
	Providers []*Provider
}

// Provider is where events go.
type Provider struct {
	Name string
	Type string // webhook, slack or command
	// URL is where a webhook or slack provider posts: a credential (a Slack
	// webhook's URL is one), never logged.
	URL string
	// Secret signs a webhook's deliveries (nil: unsigned).
	Secret []byte
	// Channel and Username are a slack provider's (optional).
	Channel, Username string
	// Argv is a command provider's command and arguments.
	Argv []string
	// Timeout bounds one attempt.
	Timeout time.Duration
	// Clusters are path.Match patterns of the clusters whose events go
	// there (all when empty); Events the types (all when empty); Severity
	// error sends errors only.
	Clusters []string
	Events   []string
	Severity string
}

// Defaults and bounds of a Config.
const (
	DefaultQueue   = 100
	MaxQueue       = 10000
	DefaultRetries = 4
	MaxRetries     = 20
	DefaultBackoff = time.Second
	MaxBackoff     = time.Minute
	DefaultTimeout = 10 * time.Second
	MaxTimeout     = 5 * time.Minute
	// MaxConfigFile bounds the configuration file and the files it names.
	MaxConfigFile = 1 << 20
	// MaxProviders bounds the providers of a configuration.
	MaxProviders = 100
)

// Wants says whether p takes event e (its cluster, type and severity).
func (p *Provider) Wants(e *Event) bool {
	if len(p.Events) > 0 && !slices.Contains(p.Events, e.Type) {
		return false
	}
	if p.Severity == Error && e.Severity != Error {
		return false
	}
	if len(p.Clusters) == 0 {
		return true
	}
	return slices.ContainsFunc(p.Clusters, func(pat string) bool {
		ok, _ := path.Match(pat, e.Cluster)
		return ok
	})
}

// Env is where a configuration's secrets come from: ReadFile reads the
// files it names (url_file, secret_file), Getenv the environment variables
// (url_env, secret_env); LookPath, when set, finds a command provider's
// program (its path, or an error: refused at start-up).
type Env struct {
	ReadFile func(name string) ([]byte, error)
	Getenv   func(name string) (string, bool)
	LookPath func(name string) (string, error)
}

// LoadConfig reads and checks the configuration file name (HCL when it ends
// in .hcl, YAML otherwise); the files it names are relative to its
// directory, the variables are serve's environment. The files map holds its
// bytes, for the diagnostics' snippets.
func LoadConfig(name string) (*Config, map[string]*hcl.File, hcl.Diagnostics) {
	data, err := readBounded(name)
	if err != nil {
		return nil, nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: fmt.Sprintf("reading the notification config: %v", err)}}
	}
	dir := filepath.Dir(name)
	cfg, c := parseConfig(name, data, Env{
		ReadFile: func(file string) ([]byte, error) {
			if !filepath.IsAbs(file) {
				file = filepath.Join(dir, file)
			}
			return readBounded(file)
		},
		Getenv: os.LookupEnv,
		LookPath: func(file string) (string, error) {
			if strings.Contains(file, "/") && !filepath.IsAbs(file) {
				abs, err := filepath.Abs(filepath.Join(dir, file))
				if err != nil {
					return "", err
				}
				file = abs // not looked for on PATH, whatever the directory
			}
			return exec.LookPath(file)
		},
	})
	return cfg, map[string]*hcl.File{name: {Bytes: maskSecrets(data, c.secrets)}}, c.diags
}

// maskSecrets is src with the bytes of each range in secrets replaced by
// '*' (line breaks kept): the source the diagnostics quote, a provider's
// url (a Slack webhook's is its credential) masked.
func maskSecrets(src []byte, secrets []hcl.Range) []byte {
	out := bytes.Clone(src)
	for _, r := range secrets {
		for i := max(r.Start.Byte, 0); i < min(r.End.Byte, len(out)); i++ {
			if out[i] != '\n' {
				out[i] = '*'
			}
		}
	}
	return out
}

// readBounded reads a file of at most MaxConfigFile bytes.
func readBounded(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(&limited{f, MaxConfigFile + 1}); err != nil {
		return nil, err
	}
	if b.Len() > MaxConfigFile {
		return nil, fmt.Errorf("%s is over %d bytes", name, MaxConfigFile)
	}
	return b.Bytes(), nil
}

type limited struct {
	f *os.File
	n int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, fmt.Errorf("over %d bytes", MaxConfigFile)
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.f.Read(p)
	l.n -= int64(n)
	return n, err
}

// parser checks one configuration, collecting every problem.
type parser struct {
	diags hcl.Diagnostics
	env   Env
	// secrets are where URLs that may be credentials are written
	// (maskSecrets).
	secrets []hcl.Range
}

func (c *parser) errorf(r hcl.Range, detail, format string, args ...any) {
	c.diags = append(c.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf(format, args...), Detail: detail, Subject: r.Ptr()})
}

// ParseConfig checks a configuration (filename, its bytes src: HCL when the
// name ends in .hcl, YAML otherwise), its secrets read from env. Every
// problem is a diagnostic at its key or value, all of them reported,
// sorted; the Config is nil when there is one.
func ParseConfig(filename string, src []byte, env Env) (*Config, hcl.Diagnostics) {
	cfg, c := parseConfig(filename, src, env)
	return cfg, c.diags
}

// parseConfig is ParseConfig, with the parser (its secrets' ranges).
func parseConfig(filename string, src []byte, env Env) (*Config, *parser) {
	c := &parser{env: env}
	cfg, diags := c.config(filename, src)
	c.diags = diags
	return cfg, c
}

// config checks a configuration.
func (c *parser) config(filename string, src []byte) (*Config, hcl.Diagnostics) {
	decode := loader.DecodeYAML
	if strings.HasSuffix(filename, ".hcl") {
		decode = loader.DecodeHCL
	}
	v, diags := decode(filename, src)
	if diags.HasErrors() {
		return nil, diags
	}
	c.diags = diags
	cfg := &Config{Queue: DefaultQueue, Retries: DefaultRetries, Backoff: DefaultBackoff}
	if !v.IsMap() {
		c.errorf(v.Range, "The file is a mapping with providers: (a list) and optionally base_url, queue, retries and retry_backoff.",
			"the notification config is a %s, not a mapping", v.Kind)
		return nil, c.diags
	}
	c.known(v, "", "base_url", "queue", "retries", "retry_backoff", "providers")
	if f := v.Field("base_url"); f != nil {
		cfg.BaseURL = strings.TrimRight(c.url(f.Value, "base_url", false), "/")
	}
	c.integer(v, "queue", 1, MaxQueue, &cfg.Queue)
	c.integer(v, "retries", 0, MaxRetries, &cfg.Retries)
	if f := v.Field("retry_backoff"); f != nil {
		cfg.Backoff = c.duration(f.Value, "retry_backoff", MaxBackoff)
	}
	providers := v.Get("providers")
	switch {
	case providers == nil || providers.IsNull():
		c.errorf(v.Range, "Without providers nothing is sent: leave --notify-config out instead.", "the notification config has no providers")
	case !providers.IsList():
		c.errorf(providers.Range, "", "providers is a %s, not a list", providers.Kind)
	case len(providers.Items) > MaxProviders:
		c.errorf(providers.Range, "", "%d providers, over the %d a configuration may have", len(providers.Items), MaxProviders)
	default:
		names := map[string]bool{}
		for i, item := range providers.Items {
			p := c.provider(item, i)
			if p == nil {
				continue
			}
			if p.Name != "" && names[p.Name] {
				c.errorf(item.Get("name").Range, "Each provider has a name of its own: the log names it.", "provider name %q is used twice", p.Name)
			}
			names[p.Name] = true
			cfg.Providers = append(cfg.Providers, p)
		}
	}
	sortDiags(c.diags)
	if c.diags.HasErrors() {
		return nil, c.diags
	}
	return cfg, c.diags
}

// provider checks providers[i].
func (c *parser) provider(v *loader.Value, i int) *Provider {
	where := fmt.Sprintf("providers[%d]", i)
	if !v.IsMap() {
		c.errorf(v.Range, "", "%s is a %s, not a mapping", where, v.Kind)
		return nil
	}
	c.known(v, where+".", "name", "type", "url", "url_file", "url_env", "secret_file", "secret_env", "channel", "username", "command", "timeout", "clusters", "events", "severity")
	p := &Provider{Timeout: DefaultTimeout}
	p.Name = c.str(v, where, "name", true)
	if p.Name != "" && !loader.IsName(p.Name) {
		c.errorf(v.Get("name").Range, "", "%s.name %q is not a name (lowercase letters, digits, '.', '_', '-')", where, p.Name)
	}
	p.Type = c.str(v, where, "type", true)
	switch p.Type {
	case Webhook, Slack:
		p.URL = c.urlOf(v, where)
		if p.Type == Webhook {
			p.Secret = c.secretOf(v, where)
		}
		if p.Type == Slack {
			p.Channel, p.Username = c.str(v, where, "channel", false), c.str(v, where, "username", false)
		}
		c.only(v, where, p.Type, map[string]bool{"command": true, "secret_file": p.Type == Slack, "secret_env": p.Type == Slack,
			"channel": p.Type == Webhook, "username": p.Type == Webhook})
	case Command:
		cmd := v.Get("command")
		argv, ok := cmd.Strings()
		switch {
		case cmd == nil:
			c.errorf(v.Range, "command: [/usr/local/bin/page-oncall, --team, ops] runs that program with the event as JSON on its stdin.", "%s (a command provider) has no command", where)
		case !ok || len(argv) == 0 || argv[0] == "":
			c.errorf(cmd.Range, "", "%s.command is a list of strings (the program, then its arguments)", where)
		default:
			p.Argv = c.program(itemRange(cmd, 0), where, argv)
		}
		c.only(v, where, p.Type, map[string]bool{"url": true, "url_file": true, "url_env": true, "secret_file": true, "secret_env": true, "channel": true, "username": true})
	case "":
	default:
		c.errorf(v.Get("type").Range, "", "%s.type %q is not webhook, slack or command%s", where, p.Type, didYouMean(p.Type, []string{Webhook, Slack, Command}))
	}
	if f := v.Field("timeout"); f != nil {
		p.Timeout = c.duration(f.Value, where+".timeout", MaxTimeout)
	}
	c.filters(v, where, p)
	return p
}

// program finds a command's program (argv[0]) with Env.LookPath.
func (c *parser) program(r hcl.Range, where string, argv []string) []string {
	if c.env.LookPath == nil {
		return argv
	}
	path, err := c.env.LookPath(argv[0])
	if err != nil {
		c.errorf(r, "A program's path (relative to the configuration's directory), or a name found on serve's PATH.", "%s.command: %v", where, err)
		return nil
	}
	return append([]string{path}, argv[1:]...)
}

// filters checks a provider's clusters, events and severity.
func (c *parser) filters(v *loader.Value, where string, p *Provider) {
	if f := v.Field("clusters"); f != nil {
		list, ok := f.Value.Strings()
		if !ok {
			c.errorf(f.Value.Range, "", "%s.clusters is a list of cluster names or patterns (prod-*)", where)
		}
		for i, pat := range list {
			if _, err := path.Match(pat, ""); err != nil || pat == "" {
				c.errorf(itemRange(f.Value, i), "Patterns are those of path.Match: * any characters, ? one, [a-z] a class.", "%s.clusters: %q is not a pattern", where, pat)
			}
		}
		p.Clusters = list
	}
	if f := v.Field("events"); f != nil {
		list, ok := f.Value.Strings()
		if !ok {
			c.errorf(f.Value.Range, "", "%s.events is a list of event types", where)
		}
		for i, e := range list {
			if !slices.Contains(Types, e) {
				c.errorf(itemRange(f.Value, i), "The events: "+strings.Join(Types, ", ")+".", "%s.events: %q is not an event type%s", where, e, didYouMean(e, Types))
			}
		}
		p.Events = list
	}
	p.Severity = c.str(v, where, "severity", false)
	if p.Severity != "" && p.Severity != Info && p.Severity != Error {
		c.errorf(v.Get("severity").Range, "severity: error sends the errors only; info (the default) sends every event.", "%s.severity %q is not info or error", where, p.Severity)
	}
}

// itemRange is where item i of a list is written (the value itself when it
// is a scalar, read as a list of one).
func itemRange(v *loader.Value, i int) hcl.Range {
	if v.IsList() && i < len(v.Items) {
		return v.Items[i].Range
	}
	return v.Range
}

// didYouMean is a hint for a misspelt name: ` (did you mean "x"?)`, or "".
func didYouMean(name string, candidates []string) string {
	if s := loader.Suggest(name, candidates); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// known refuses the keys of v not in keys.
func (c *parser) known(v *loader.Value, prefix string, keys ...string) {
	for _, f := range v.Fields {
		if !slices.Contains(keys, f.Key) {
			c.errorf(f.KeyRange, "The keys: "+strings.Join(keys, ", ")+".", "unknown key %s%s%s", prefix, f.Key, didYouMean(f.Key, keys))
		}
	}
}

// only refuses the keys of v that a provider of type typ does not take.
func (c *parser) only(v *loader.Value, where, typ string, not map[string]bool) {
	for _, f := range v.Fields {
		if not[f.Key] {
			c.errorf(f.KeyRange, "", "%s: a %s provider takes no %s", where, typ, f.Key)
		}
	}
}

// str is the string v.key ("" when absent, or not a string: an error).
func (c *parser) str(v *loader.Value, where, key string, required bool) string {
	f := v.Field(key)
	if f == nil {
		if required {
			c.errorf(v.Range, "", "%s has no %s", where, key)
		}
		return ""
	}
	s, ok := f.Value.Str()
	if !ok || f.Value.Kind != loader.KindString {
		c.errorf(f.Value.Range, "", "%s.%s is a %s, not a string", where, key, f.Value.Kind)
		return ""
	}
	return s
}

// integer sets *out from v.key, an integer between lo and hi.
func (c *parser) integer(v *loader.Value, key string, lo, hi int, out *int) {
	f := v.Field(key)
	if f == nil {
		return
	}
	if f.Value.Kind != loader.KindInt || f.Value.Int < int64(lo) || f.Value.Int > int64(hi) {
		c.errorf(f.Value.Range, "", "%s is an integer from %d to %d", key, lo, hi)
		return
	}
	*out = int(f.Value.Int)
}

// duration reads a positive duration of at most hi.
func (c *parser) duration(v *loader.Value, what string, hi time.Duration) time.Duration {
	s, _ := v.Str()
	d, err := time.ParseDuration(s)
	if v.Kind != loader.KindString || err != nil || d <= 0 || d > hi {
		c.errorf(v.Range, "A Go duration: 500ms, 10s, 1m.", "%s is a duration above 0 and at most %s", what, hi)
		return 0
	}
	return d
}

// urlOf is a webhook or slack provider's URL: url, url_file or url_env, one
// of them.
func (c *parser) urlOf(v *loader.Value, where string) string {
	f, key, s, ok := c.oneOf(v, where, "url", "url_file", "url_env")
	switch {
	case key == "":
		c.errorf(v.Range, "url: https://…, url_file: FILE or url_env: VARIABLE (a Slack webhook's URL is a credential: keep it in a file or the environment).", "%s has no url", where)
	case key == "url":
		return c.url(f.Value, where+".url", true)
	case ok:
		return c.checkURL(f.Value.Range, where+"."+key, strings.TrimSpace(string(s)), true)
	}
	return ""
}

// secretOf is a webhook provider's signing secret: secret_file or
// secret_env (nil: none, deliveries unsigned); an empty one is an error.
func (c *parser) secretOf(v *loader.Value, where string) []byte {
	f, key, s, ok := c.oneOf(v, where, "secret_file", "secret_env")
	if key == "" || !ok {
		return nil
	}
	if s = bytes.TrimSpace(s); len(s) == 0 {
		c.errorf(f.Value.Range, "An empty secret signs nothing anyone else could not sign: write one (openssl rand -hex 32).", "%s.%s: the secret is empty", where, key)
	}
	return s
}

// oneOf finds the one of keys v has: the literal value's key (the first),
// or a _file or _env key whose content it reads. key is "" when v has none
// (and an error when it has several); ok is false when the content cannot
// be read (an error said why).
func (c *parser) oneOf(v *loader.Value, where string, keys ...string) (f *loader.Field, key string, data []byte, ok bool) {
	for _, k := range keys {
		g := v.Field(k)
		if g == nil {
			continue
		}
		if f != nil {
			c.errorf(g.KeyRange, "", "%s has %s and %s: give one", where, key, k)
			continue
		}
		f, key = g, k
	}
	switch {
	case f == nil:
		return nil, "", nil, false
	case strings.HasSuffix(key, "_file"):
		data, ok = c.file(f.Value, where+"."+key)
	case strings.HasSuffix(key, "_env"):
		data, ok = c.envVar(f.Value, where+"."+key)
	default:
		ok = true
	}
	return f, key, data, ok
}

// envVar reads the environment variable v names.
func (c *parser) envVar(v *loader.Value, what string) ([]byte, bool) {
	name, ok := v.Str()
	if !ok || v.Kind != loader.KindString || name == "" {
		c.errorf(v.Range, "", "%s is the name of an environment variable", what)
		return nil, false
	}
	val, ok := c.env.Getenv(name)
	if !ok {
		c.errorf(v.Range, "serve reads it from its own environment (systemd: Environment= or EnvironmentFile=).", "%s: the environment variable %s is not set", what, name)
		return nil, false
	}
	return []byte(val), true
}

func (c *parser) url(v *loader.Value, what string, secret bool) string {
	if secret {
		c.secrets = append(c.secrets, v.Range)
	}
	s, ok := v.Str()
	if !ok || v.Kind != loader.KindString {
		c.errorf(v.Range, "", "%s is a %s, not a URL", what, v.Kind)
		return ""
	}
	return c.checkURL(v.Range, what, s, secret)
}

// checkURL checks an http(s) URL; a secret one is never repeated.
func (c *parser) checkURL(r hcl.Range, what, s string, secret bool) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		shown := fmt.Sprintf(" %q", s)
		if secret {
			shown = "" // it may be a credential
		}
		c.errorf(r, "", "%s%s is not an http:// or https:// URL", what, shown)
		return ""
	}
	return s
}

// file reads the file v names.
func (c *parser) file(v *loader.Value, what string) ([]byte, bool) {
	name, ok := v.Str()
	if !ok || v.Kind != loader.KindString || name == "" {
		c.errorf(v.Range, "", "%s is a file name", what)
		return nil, false
	}
	data, err := c.env.ReadFile(name)
	if err != nil {
		c.errorf(v.Range, "", "%s: %v", what, err)
		return nil, false
	}
	return data, true
}

// sortDiags sorts diagnostics by file, line and column.
func sortDiags(diags hcl.Diagnostics) {
	slices.SortStableFunc(diags, func(a, b *hcl.Diagnostic) int {
		var ra, rb hcl.Range
		if a.Subject != nil {
			ra = *a.Subject
		}
		if b.Subject != nil {
			rb = *b.Subject
		}
		if ra.Filename != rb.Filename {
			return strings.Compare(ra.Filename, rb.Filename)
		}
		if ra.Start.Line != rb.Start.Line {
			return ra.Start.Line - rb.Start.Line
		}
		return ra.Start.Column - rb.Start.Column
	})
}
