package conformance

import (
	"fmt"
	"sort"
)

// registry holds every scenario; the s_*.go files add theirs in init.
var registry []*Scenario

func register(ss ...*Scenario) { registry = append(registry, ss...) }

// All returns every scenario, sorted by ID. It panics on a duplicate ID or
// a scenario missing its description, so that `go test` catches them.
func All() []*Scenario {
	out := append([]*Scenario(nil), registry...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	seen := map[string]bool{}
	for _, s := range out {
		if seen[s.ID] {
			panic(fmt.Sprintf("conformance: duplicate scenario %s", s.ID))
		}
		seen[s.ID] = true
		if s.Title == "" || s.Checks == "" || s.Expect == "" || s.Run == nil {
			panic(fmt.Sprintf("conformance: scenario %s lacks a title, checks, expect or run", s.ID))
		}
	}
	return out
}
