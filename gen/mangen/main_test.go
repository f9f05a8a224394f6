package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestSync(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sluice.1", "same\n")
	write("sluice-serve.1", "old\n")
	write("sluice-gone.1", "a command that no longer exists\n")
	write("README", "not a page\n")
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(filepath.Join(dir, "sluice.1"), old, old); err != nil {
		t.Fatal(err)
	}

	pages := map[string][]byte{"sluice.1": []byte("same\n"), "sluice-serve.1": []byte("new\n"), "sluice-version.1": []byte("added\n")}
	if err := sync(dir, pages); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got[e.Name()] = string(b)
	}
	want := map[string]string{"sluice.1": "same\n", "sluice-serve.1": "new\n", "sluice-version.1": "added\n", "README": "not a page\n"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("directory holds %v, want %v", got, want)
	}
	if info, err := os.Stat(filepath.Join(dir, "sluice.1")); err != nil || !info.ModTime().Equal(old) {
		t.Errorf("an up-to-date page was rewritten (%v)", err)
	}
}

func TestChildEnv(t *testing.T) {
	got := childEnv([]string{"PATH=/usr/bin", "SLUICE_ADMIN_PASSWORD=secret", "HOME=/root", "SLUICE_ADMIN_URL=http://x"})
	if want := []string{"PATH=/usr/bin", "HOME=/root"}; !reflect.DeepEqual(got, want) {
		t.Errorf("childEnv = %v, want %v", got, want)
	}
}

func TestRunBadDate(t *testing.T) {
	if err := run("github.com/sluicemq/sluice/cmd/sluice", "December", t.TempDir()); err == nil || !strings.Contains(err.Error(), "-date") {
		t.Errorf("run with a bad date = %v, want a -date error", err)
	}
}

// The real thing: the pages of every visible command, none of the hidden
// man command, with the header and the fixed date, free of the caller's
// SLUICE_* variables, and readable by groff (as man(1) runs it) without a
// warning.
func TestGenerate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/sluice")
	}
	t.Setenv("SLUICE_ADMIN_PASSWORD", "hunter2-must-not-leak")
	pages, err := generate("github.com/sluicemq/sluice/cmd/sluice", "2031-07-15")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range pages {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range []string{"sluice.1", "sluice-serve.1", "sluice-version.1", "sluice-admin-browse.1", "sluice-selector-check.1"} {
		if _, ok := pages[name]; !ok {
			t.Errorf("no %s among %v", name, names)
		}
	}
	if _, ok := pages["sluice-man.1"]; ok {
		t.Error("the hidden man command has a page")
	}
	for name, page := range pages {
		if !bytes.HasPrefix(page, []byte(header)) {
			t.Errorf("%s does not start with the do-not-edit comment", name)
		}
		title := strings.ToUpper(strings.TrimSuffix(name, ".1"))
		if !bytes.Contains(page, []byte(`.TH "`+title+`" "1" "Jul 2031" "Sluice `)) {
			t.Errorf("%s has no .TH header with the given date", name)
		}
		if bytes.Contains(page, []byte("hunter2-must-not-leak")) {
			t.Errorf("%s holds the value of SLUICE_ADMIN_PASSWORD", name)
		}
	}
	if !bytes.Contains(pages["sluice-serve.1"], []byte(`--data\fP="./sluice-data"`)) {
		t.Error("sluice-serve.1 does not list --data with its default")
	}
	if !bytes.Contains(pages["sluice.1"], []byte(`--version`)) {
		t.Error("sluice.1 does not list --version")
	}

	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Log("groff is not installed: the pages' roff is not checked")
		return
	}
	for _, name := range names {
		// -k runs preconv, as man(1) does, for the pages' UTF-8; -P-cbou
		// makes plain text; -ww enables every warning.
		cmd := exec.Command(groff, "-k", "-man", "-Tutf8", "-P-cbou", "-ww")
		cmd.Stdin = bytes.NewReader(pages[name])
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil || stderr.Len() > 0 {
			t.Errorf("groff %s: %v\n%s", name, err, stderr.String())
			continue
		}
		// The NAME section, "sluice-admin-browse - Show ...", whatever
		// hyphens and justification groff prints.
		text := strings.Join(strings.Fields(strings.NewReplacer("\u2010", "-", "\u2212", "-").Replace(stdout.String())), " ")
		if base := strings.TrimSuffix(name, ".1"); !strings.Contains(text, "NAME "+base+" - ") || !strings.Contains(text, "SYNOPSIS") {
			t.Errorf("groff's rendering of %s lacks NAME (%s - ...) or SYNOPSIS:\n%s", name, base, text)
		}
	}
}
