package archtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the module's root directory, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// readmeLayout returns the directories the README's Layout block lists.
func readmeLayout(t *testing.T, readme string) map[string]bool {
	t.Helper()
	_, after, ok := strings.Cut(readme, "## Layout\n\n```\n")
	if !ok {
		t.Fatal("README.md has no Layout block")
	}
	block, _, _ := strings.Cut(after, "```")
	dirs := map[string]bool{}
	for _, line := range strings.Split(block, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasSuffix(f[0], "/") {
			dirs[strings.TrimSuffix(f[0], "/")] = true
		}
	}
	return dirs
}

// TestReadmeLayoutListsEveryPackage: the README's layout block names every
// package directory of the module, and only directories that exist.
func TestReadmeLayoutListsEveryPackage(t *testing.T) {
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := readmeLayout(t, string(raw))
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		if !listed[filepath.ToSlash(rel)] {
			t.Errorf("README.md's Layout block does not list package directory %s/", filepath.ToSlash(rel))
		}
	}
	for dir := range listed {
		if fi, err := os.Stat(filepath.Join(root, dir)); err != nil || !fi.IsDir() {
			t.Errorf("README.md's Layout block lists %s/, which is not a directory", dir)
		}
	}
}

// docPath matches a repository path to a document or directory that the
// README names: docs/NAME.md, docs/DIR/, and the like.
var docPath = regexp.MustCompile(`\bdocs/[A-Za-z0-9_./-]*`)

// TestReadmeDocsExist: every docs/ path the README names exists, so it
// promises no document that is not there.
func TestReadmeDocsExist(t *testing.T) {
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range docPath.FindAllString(string(raw), -1) {
		p = strings.TrimRight(p, ".")
		if p == "docs/" {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("README.md names %s, which does not exist", p)
		}
	}
	// Documents listed by name in the layout's docs/ line.
	_, after, _ := strings.Cut(string(raw), "\ndocs/ ")
	line, _, _ := strings.Cut(after, "```")
	for _, name := range regexp.MustCompile(`[a-z0-9-]+\.(?:md|yaml)|[a-z]+/`).FindAllString(line, -1) {
		if _, err := os.Stat(filepath.Join(root, "docs", name)); err != nil {
			t.Errorf("README.md's layout lists docs/%s, which does not exist", name)
		}
	}
}
