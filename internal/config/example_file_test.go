package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// exampleFile is the annotated example at the repository root.
const exampleFile = "../../sluice.example.toml"

// tomlKeys lists the key paths of the struct type t, from its toml tags,
// descending into tables; skip names keys not to list.
func tomlKeys(t reflect.Type, prefix []string, skip string) [][]string {
	var keys [][]string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if tag == "" || tag == "-" || tag == skip {
			continue
		}
		key := append(append([]string(nil), prefix...), tag)
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			keys = append(keys, tomlKeys(ft, key, skip)...)
			continue
		}
		keys = append(keys, key)
	}
	return keys
}

// The example must load, validate, and give exactly the defaults, so it
// cannot drift from Default; and it must spell out every key.
func TestExampleFileIsTheDefaults(t *testing.T) {
	cfg, err := Load(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dir = "" // set by Load (TestLoadTLSRelativeToTheFile checks it); Default has none
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	want := Default()
	want.file = exampleFile
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("%s loads as\n%+v\nbut Default() is\n%+v", exampleFile, cfg, want)
	}

	var raw map[string]any
	md, err := toml.DecodeFile(exampleFile, &raw)
	if err != nil {
		t.Fatal(err)
	}
	keys := tomlKeys(reflect.TypeFor[Config](), nil, "destination")
	if len(keys) < 15 {
		t.Fatalf("found only %d keys in Config: %v", len(keys), keys)
	}
	for _, k := range keys {
		if k[0] == "cluster" {
			continue // no default: docs/cluster.md and examples/cluster show it
		}
		if !md.IsDefined(k...) {
			t.Errorf("%s does not set %s", exampleFile, strings.Join(k, "."))
		}
	}
}

// commentedSetting is a commented-out setting or [[destination]] header in
// the example; explanations are written differently ("#   key  meaning").
var commentedSetting = regexp.MustCompile(`^# (\[\[destination\]\]|[a-z_]+ = .+)$`)

// The commented-out [[destination]] section of the example must name every
// destination key and be valid once uncommented.
func TestExampleFileDestinationSection(t *testing.T) {
	text, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, line := range strings.Split(string(text), "\n") {
		if m := commentedSetting.FindStringSubmatch(line); m != nil {
			b.WriteString(m[1] + "\n")
		}
	}
	uncommented := b.String()
	if !strings.HasPrefix(uncommented, "[[destination]]\n") {
		t.Fatalf("the uncommented example does not start with [[destination]]:\n%s", uncommented)
	}

	cfg, err := Load(writeFile(t, uncommented))
	if err != nil {
		t.Fatalf("uncommented destination example: %v\n%s", err, uncommented)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("uncommented destination example: Validate() = %v\n%s", err, uncommented)
	}
	if len(cfg.Destinations) != 1 {
		t.Fatalf("uncommented destination example has %d sections, want 1", len(cfg.Destinations))
	}
	if _, err := cfg.PolicyFunc(); err != nil {
		t.Fatal(err)
	}

	var raw struct {
		Destination []map[string]any `toml:"destination"`
	}
	if _, err := toml.Decode(uncommented, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range tomlKeys(reflect.TypeFor[Destination](), nil, "") {
		if _, ok := raw.Destination[0][k[0]]; !ok {
			t.Errorf("the [[destination]] example in %s does not show %s", exampleFile, k[0])
		}
	}
}

// Unknown keys in the example's tables are refused, naming the key.
func TestExampleFileUnknownKeys(t *testing.T) {
	text, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, old, new, want string
	}{
		{"top level", "log_level = \"info\"\n", "log_level = \"info\"\nloglevel = \"debug\"\n", "unknown keys: loglevel"},
		{"listeners", "admin = \"127.0.0.1:8161\"\n", "admin = \"127.0.0.1:8161\"\nhttp = \"127.0.0.1:80\"\n", "unknown keys: listeners.http"},
		{"connection", "prefetch = 1000\n", "prefetch = 1000\nmessages_maximum = 10\n", "unknown keys: connection.messages_maximum"},
		{"destination", "# [[destination]]\n# match = \"orders.*\"\n", "[[destination]]\nmatch = \"orders.*\"\nerror_queue = \"/queue/x\"\n", "unknown keys: destination.error_queue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(string(text), tt.old) {
				t.Fatalf("%s no longer contains %q", exampleFile, tt.old)
			}
			_, err := Load(writeFile(t, strings.Replace(string(text), tt.old, tt.new, 1)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// docFile is the configuration reference.
const docFile = "../../docs/configuration.md"

// Every toml example of the reference is a complete, valid file, and the
// reference names every key. The examples are loaded from a directory with
// the files the TLS examples name (tls/server.crt, tls/server.key,
// tls/ca.pem).
func TestConfigurationDoc(t *testing.T) {
	text, err := os.ReadFile(docFile)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(text)
	blocks := regexp.MustCompile("(?s)```toml\n(.*?)```").FindAllStringSubmatch(doc, -1)
	if len(blocks) < 4 {
		t.Fatalf("%s has %d toml examples, want at least 4", docFile, len(blocks))
	}
	dir := tlsFiles(t)
	for i, b := range blocks {
		file := filepath.Join(dir, "sluice.toml")
		if err := os.WriteFile(file, []byte(b[1]), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(file)
		if err == nil {
			err = cfg.Validate()
		}
		if err != nil {
			t.Errorf("%s: toml example %d: %v\n%s", docFile, i+1, err, b[1])
		}
	}
	keys := tomlKeys(reflect.TypeFor[Config](), nil, "destination")
	keys = append(keys, tomlKeys(reflect.TypeFor[Destination](), nil, "")...)
	for _, k := range keys {
		if !strings.Contains(doc, "`"+k[len(k)-1]+"`") {
			t.Errorf("%s does not document `%s`", docFile, strings.Join(k, "."))
		}
	}
}
