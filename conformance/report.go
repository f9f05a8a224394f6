package conformance

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// statusOrder is the order statuses are counted and shown in.
var statusOrder = []Status{Pass, Fail, NotSupported, NotExpressibleStatus, Unavailable}

// short is a status's label in the text and Markdown matrices.
func short(s Status) string {
	switch s {
	case Pass:
		return "pass"
	case Fail:
		return "FAIL"
	case NotSupported:
		return "n/s"
	case NotExpressibleStatus:
		return "n/e"
	case Unavailable:
		return "n/a"
	}
	return "·"
}

const legend = "pass · FAIL · n/s = not supported by the broker (profile) · n/e = not expressible in the protocol · n/a = protocol listener not available · \"·\" = not applicable"

// usedColumns are the columns in which some cell is applicable.
func (r *Report) usedColumns() []Column {
	var out []Column
	for _, c := range r.Columns {
		for _, row := range r.Rows {
			if row.Results[c.Name].Status != NotApplicable {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// SummaryLine counts the statuses of a column.
func (r *Report) SummaryLine(col string) string {
	var parts []string
	for _, s := range statusOrder {
		if n := r.Counts[col][s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

func (r *Report) targetLines() []string {
	var out []string
	for _, p := range Protocols {
		switch {
		case r.Targets[p] != "":
			out = append(out, fmt.Sprintf("%s %s", p, r.Targets[p]))
		case r.Unavailable[p] != "":
			out = append(out, fmt.Sprintf("%s: %s", p, r.Unavailable[p]))
		}
	}
	return out
}

// WriteText writes the matrix as plain text; details adds a line for each
// cell that did not pass, with its reason.
func (r *Report) WriteText(w io.Writer, details bool) error {
	cols := r.usedColumns()
	width := len("scenario")
	for _, row := range r.Rows {
		width = max(width, len(row.ID))
	}
	// A column is as wide as its name and a space, at least 12 (fmt pads
	// by runes, so "→" counts as one).
	colw := 12
	for _, c := range cols {
		colw = max(colw, utf8.RuneCountInString(c.Name)+1)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "conformance: profile %s, %d scenarios, %.1fs\n", r.Profile, len(r.Rows), r.Seconds)
	for _, l := range r.targetLines() {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "%-*s", width+2, "scenario")
	for _, c := range cols {
		fmt.Fprintf(&b, "%-*s", colw, c.Name)
	}
	b.WriteString("\n")
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "%-*s", width+2, row.ID)
		for _, c := range cols {
			fmt.Fprintf(&b, "%-*s", colw, short(row.Results[c.Name].Status))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n" + legend + "\n\n")
	for _, c := range cols {
		fmt.Fprintf(&b, "%-12s %s\n", c.Name+":", r.SummaryLine(c.Name))
	}
	if details {
		first := true
		for _, row := range r.Rows {
			for _, c := range cols {
				res := row.Results[c.Name]
				if res.Status == Pass || res.Status == NotApplicable || res.Status == Unavailable {
					continue
				}
				if first {
					b.WriteString("\ndetails:\n")
					first = false
				}
				fmt.Fprintf(&b, "  %s [%s] %s: %s\n", row.ID, c.Name, res.Status, oneLine(res.Detail, 400))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report as JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "*", `\*`, "_", `\_`, "<", "&lt;").Replace(s)
}

// WriteMarkdown writes the matrix and the reasons of every cell that did
// not pass as Markdown.
func (r *Report) WriteMarkdown(w io.Writer) error {
	cols := r.usedColumns()
	var b strings.Builder
	fmt.Fprintf(&b, "# Conformance matrix: profile `%s`\n\n", r.Profile)
	fmt.Fprintf(&b, "%s  \n", mdEscape(r.ProfileDoc))
	fmt.Fprintf(&b, "Run %s, %d scenarios, %.0fs.\n\n", r.Started.UTC().Format(time.RFC3339), len(r.Rows), r.Seconds)
	if r.Note != "" {
		fmt.Fprintf(&b, "%s\n\n", mdEscape(r.Note))
	}
	for _, l := range r.targetLines() {
		fmt.Fprintf(&b, "- %s\n", mdEscape(l))
	}
	b.WriteString("\n| column | result |\n|---|---|\n")
	for _, c := range cols {
		fmt.Fprintf(&b, "| %s | %s |\n", c.Name, r.SummaryLine(c.Name))
	}
	b.WriteString("\n" + mdEscape(legend) + "\n\n| scenario |")
	for _, c := range cols {
		fmt.Fprintf(&b, " %s |", c.Name)
	}
	b.WriteString("\n|---|")
	for range cols {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "| `%s` |", row.ID)
		for _, c := range cols {
			s := short(row.Results[c.Name].Status)
			if s == "FAIL" {
				s = "**FAIL**"
			}
			fmt.Fprintf(&b, " %s |", s)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## Cells that did not pass\n\n")
	for _, row := range r.Rows {
		for _, c := range cols {
			res := row.Results[c.Name]
			if res.Status == Pass || res.Status == NotApplicable || res.Status == Unavailable {
				continue
			}
			fmt.Fprintf(&b, "- `%s` [%s] **%s**: %s\n", row.ID, c.Name, res.Status, mdEscape(oneLine(res.Detail, 500)))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteHTML writes the report as one self-contained page.
func (r *Report) WriteHTML(w io.Writer) error {
	type cell struct {
		Class, Label, Title string
	}
	type hrow struct {
		ID, Title, Tip string
		Cells          []cell
	}
	type area struct {
		Name string
		Rows []hrow
	}
	type issue struct {
		ID, Col, Status, Class, Detail string
		Notes                          []string
	}
	type summary struct {
		Col    string
		Counts []cell
	}
	cols := r.usedColumns()
	var areas []area
	var issues, notes []issue
	for _, row := range r.Rows {
		if len(areas) == 0 || areas[len(areas)-1].Name != row.Area {
			areas = append(areas, area{Name: row.Area})
		}
		hr := hrow{ID: row.ID, Title: row.Title,
			Tip: row.Title + "\nexpect: " + row.Expect + "\nchecks: " + row.Checks}
		if len(row.Needs) > 0 {
			var ns []string
			for _, n := range row.Needs {
				ns = append(ns, string(n))
			}
			hr.Tip += "\nneeds: " + strings.Join(ns, ", ")
		}
		for _, c := range cols {
			res := row.Results[c.Name]
			title := string(res.Status)
			if res.Detail != "" {
				title += ": " + res.Detail
			}
			if len(res.Notes) > 0 {
				title += "\n" + strings.Join(res.Notes, "\n")
			}
			if res.Millis > 0 {
				title += fmt.Sprintf("\n(%d ms)", res.Millis)
			}
			hr.Cells = append(hr.Cells, cell{Class: cssClass(res.Status), Label: short(res.Status), Title: title})
			switch res.Status {
			case Fail, NotSupported, NotExpressibleStatus:
				issues = append(issues, issue{ID: row.ID, Col: c.Name, Status: string(res.Status), Class: cssClass(res.Status), Detail: res.Detail, Notes: res.Notes})
			case Pass:
				if len(res.Notes) > 0 {
					notes = append(notes, issue{ID: row.ID, Col: c.Name, Notes: res.Notes})
				}
			}
		}
		areas[len(areas)-1].Rows = append(areas[len(areas)-1].Rows, hr)
	}
	sort.SliceStable(issues, func(i, j int) bool { return issueRank(issues[i].Status) < issueRank(issues[j].Status) })
	var sums []summary
	for _, c := range cols {
		s := summary{Col: c.Name}
		for _, st := range statusOrder {
			if n := r.Counts[c.Name][st]; n > 0 {
				s.Counts = append(s.Counts, cell{Class: cssClass(st), Label: fmt.Sprintf("%d %s", n, st)})
			}
		}
		sums = append(sums, s)
	}
	var scenarios []*Row
	scenarios = append(scenarios, r.Rows...)
	data := map[string]any{
		"R": r, "Cols": cols, "Areas": areas, "Issues": issues, "Notes": notes, "Sums": sums,
		"Targets": r.targetLines(), "Started": r.Started.UTC().Format(time.RFC3339), "Scenarios": scenarios,
		"Verdict": verdict(r),
	}
	return htmlReport.Execute(w, data)
}

func verdict(r *Report) string {
	if r.Failed() {
		n := 0
		for _, c := range r.Counts {
			n += c[Fail]
		}
		return fmt.Sprintf("%d failing cells", n)
	}
	return "no failures"
}

func issueRank(s string) int {
	switch Status(s) {
	case Fail:
		return 0
	case NotSupported:
		return 1
	}
	return 2
}

func cssClass(s Status) string {
	switch s {
	case Pass:
		return "pass"
	case Fail:
		return "fail"
	case NotSupported:
		return "ns"
	case NotExpressibleStatus:
		return "ne"
	case Unavailable:
		return "na"
	}
	return "skip"
}

var htmlReport = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Conformance: {{.R.Profile}} — {{.Verdict}}</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#1d232a;background:#fff}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:28px 0 8px}
.meta{color:#555;margin:0 0 12px}
.sum{display:flex;gap:18px;flex-wrap:wrap;margin:12px 0}
.sum div{border:1px solid #ddd;border-radius:6px;padding:8px 12px}
.sum b{display:block;margin-bottom:4px}
.badge{display:inline-block;border-radius:4px;padding:1px 6px;margin:2px 4px 2px 0;font-size:12px}
table{border-collapse:collapse} th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{position:sticky;top:0;background:#f6f8fa;font-weight:600}
td.c{text-align:center;min-width:84px;font-size:12px;font-weight:600;cursor:help}
tr.area td{background:#f6f8fa;font-weight:600;padding-top:10px}
td.id{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;cursor:help}
td.t{color:#555;font-size:12px}
.pass{background:#dcf5e3;color:#146c2e} .fail{background:#ffd9d9;color:#a00} .ns{background:#fff1c2;color:#7a5a00}
.ne{background:#e6e6fa;color:#40407a} .na{background:#eee;color:#666} .skip{color:#bbb}
ul.iss{padding-left:18px} ul.iss li{margin:3px 0} code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.legend span{margin-right:10px}
dl dt{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;margin-top:8px} dl dd{margin:0 0 0 16px;color:#333}
</style></head><body>
<h1>Conformance matrix — profile <code>{{.R.Profile}}</code>: {{.Verdict}}</h1>
<p class="meta">{{.R.ProfileDoc}}<br>Run {{.Started}}, {{len .R.Rows}} scenarios, {{printf "%.0f" .R.Seconds}}s.{{range .Targets}}<br>{{.}}{{end}}{{if .R.Note}}<br>{{.R.Note}}{{end}}</p>
<div class="sum">{{range .Sums}}<div><b>{{.Col}}</b>{{range .Counts}}<span class="badge {{.Class}}">{{.Label}}</span>{{end}}</div>{{end}}</div>
<p class="legend"><span class="badge pass">pass</span><span class="badge fail">FAIL</span><span class="badge ns">n/s</span>not supported by the broker (profile)
<span class="badge ne">n/e</span>not expressible in the protocol <span class="badge na">n/a</span>protocol listener not available <span class="badge skip">·</span>not applicable.
Hover a cell for its reason, a scenario for what it checks.</p>
<table><thead><tr><th>scenario</th>{{range .Cols}}<th>{{.Name}}</th>{{end}}<th>what</th></tr></thead><tbody>
{{range .Areas}}<tr class="area"><td colspan="99">{{.Name}}</td></tr>
{{range .Rows}}<tr><td class="id" title="{{.Tip}}">{{.ID}}</td>{{range .Cells}}<td class="c {{.Class}}" title="{{.Title}}">{{.Label}}</td>{{end}}<td class="t">{{.Title}}</td></tr>
{{end}}{{end}}</tbody></table>
{{if .Issues}}<h2>Cells that did not pass</h2><ul class="iss">{{range .Issues}}<li><span class="badge {{.Class}}">{{.Status}}</span> <code>{{.ID}}</code> [{{.Col}}]: {{.Detail}}{{range .Notes}} — {{.}}{{end}}</li>{{end}}</ul>{{end}}
{{if .Notes}}<h2>Observations on passing cells</h2><ul class="iss">{{range .Notes}}<li><code>{{.ID}}</code> [{{.Col}}]: {{range .Notes}}{{.}}; {{end}}</li>{{end}}</ul>{{end}}
<h2>Scenarios</h2><dl>{{range .Scenarios}}<dt>{{.ID}}</dt><dd>{{.Title}}. <b>Expect:</b> {{.Expect}}. <b>Checks:</b> {{.Checks}}.{{if .Needs}} <b>Needs:</b> {{range .Needs}}{{.}} {{end}}{{end}}</dd>{{end}}</dl>
</body></html>
`))
