package archtest

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// seedCitation matches the old shorthand by which comments and documents
// cited the WebLogic text: the word in front of a quotation, a section or a
// table number, or after "the". The source is to be named as Oracle
// WebLogic JMS "Managing Your Applications" with the section the sentence
// comes from. The pattern is assembled so that this file does not match
// itself.
var seedCitation = regexp.MustCompile(`(?i)\bthe ` + `seed\b|\bseed's\b|\(` + `seed:|\bseed: "|\bseed table\b|Checks: "[^"]*\bseed: `)

// TestNoSeedCitations: no Go or Markdown file of the repository cites the
// WebLogic documentation by the old shorthand instead of its title.
func TestNoSeedCitations(t *testing.T) {
	root := repoRoot(t)
	var files int
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".md") {
			return nil
		}
		files++
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for n := 1; sc.Scan(); n++ {
			if m := seedCitation.FindString(sc.Text()); m != "" {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d says %q: name the source, WebLogic JMS \"Managing Your Applications\", and its section", rel, n, m)
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("walked %d Go and Markdown files under %s: the walk missed the repository", files, root)
	}
}
