package conformance

import (
	"context"
	"fmt"
	"io"
	"path"
	"regexp"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Status is the result of one scenario in one column.
type Status string

// Statuses.
const (
	Pass Status = "pass"
	Fail Status = "fail"
	// NotSupported: the broker lacks a feature or configuration the
	// scenario needs (the profile says so), or the runner lacks a
	// capability.
	NotSupported Status = "not supported"
	// NotExpressibleStatus: the protocol cannot say what the scenario
	// asks.
	NotExpressibleStatus Status = "not expressible"
	// Unavailable: the protocol's listener is not available (not served,
	// or not reachable), so nothing ran.
	Unavailable Status = "unavailable"
	// NotApplicable: the scenario does not run in this column (a Single
	// scenario in a cross-protocol column, or the reverse).
	NotApplicable Status = "-"
)

// Protocols are the protocols the suite knows, in column order.
var Protocols = []string{"stomp", "amqp", "amqp091"}

// Column is one column of the matrix: a protocol, or an ordered pair.
type Column struct {
	Name string `json:"name"`
	// From and To are the protocols (To empty for a single protocol).
	From string `json:"from"`
	To   string `json:"to,omitempty"`
}

// Cross reports whether the column is a protocol pair.
func (c Column) Cross() bool { return c.To != "" }

// Columns lists the matrix columns: each protocol, then each ordered pair.
func Columns() []Column {
	var cs []Column
	for _, p := range Protocols {
		cs = append(cs, Column{Name: p, From: p})
	}
	for _, a := range Protocols {
		for _, b := range Protocols {
			if a != b {
				cs = append(cs, Column{Name: a + "→" + b, From: a, To: b})
			}
		}
	}
	return cs
}

// Options configure a run.
type Options struct {
	// Drivers are the available protocols' drivers, by protocol.
	Drivers map[string]Driver
	// Unavailable says why a protocol is not available (by protocol);
	// its cells are reported Unavailable with the reason.
	Unavailable map[string]string
	// Profile is the broker under test; nil means SluiceProfile.
	Profile *Profile
	// Restart restarts the broker; nil when the runner cannot.
	Restart func(ctx context.Context) error
	// Admin is the broker's management API; nil when there is none, and
	// NoAdmin says why.
	Admin   Admin
	NoAdmin string
	// Parallel is how many scenarios run at once (default 4); scenarios
	// that restart the broker always run alone.
	Parallel int
	// Quiet is how long a scenario waits to conclude that no message comes
	// (default 300ms, scaled by the profile's slack).
	Quiet time.Duration
	// Timeout bounds each scenario (default 60s).
	Timeout time.Duration
	// Progress, when not nil, receives a line per finished cell.
	Progress io.Writer
	// Note goes into the report as Report.Note.
	Note string
}

// Result is one cell of the matrix.
type Result struct {
	Status   Status        `json:"status"`
	Detail   string        `json:"detail,omitempty"`
	Notes    []string      `json:"notes,omitempty"`
	Duration time.Duration `json:"-"`
	Millis   int64         `json:"duration_ms"`
}

// Row is one scenario and its cells.
type Row struct {
	ID      string            `json:"id"`
	Area    string            `json:"area"`
	Title   string            `json:"title"`
	Checks  string            `json:"checks"`
	Expect  string            `json:"expect"`
	Needs   []Need            `json:"needs,omitempty"`
	Cross   bool              `json:"cross"`
	Results map[string]Result `json:"results"`
}

// Report is the outcome of a run.
type Report struct {
	Profile     string            `json:"profile"`
	ProfileDoc  string            `json:"profile_description"`
	Targets     map[string]string `json:"targets"`
	Unavailable map[string]string `json:"unavailable,omitempty"`
	Started     time.Time         `json:"started"`
	Duration    time.Duration     `json:"-"`
	Seconds     float64           `json:"duration_s"`
	Columns     []Column          `json:"columns"`
	Rows        []*Row            `json:"rows"`
	// Counts are per column, per status.
	Counts map[string]map[Status]int `json:"counts"`
	// Note is a line the Markdown and HTML reports show under the title,
	// such as how the run was made (Options.Note).
	Note string `json:"note,omitempty"`
}

// Failed reports whether any cell failed.
func (r *Report) Failed() bool {
	for _, c := range r.Counts {
		if c[Fail] > 0 {
			return true
		}
	}
	return false
}

// Select filters scenarios by an --only pattern.
func Select(all []*Scenario, only string) ([]*Scenario, error) {
	if only == "" {
		return all, nil
	}
	var match func(string) bool
	if strings.ContainsAny(only, "*?[") {
		re, err := globRegexp(only)
		if err != nil {
			return nil, err
		}
		match = re.MatchString
	} else {
		match = func(id string) bool { return strings.Contains(id, only) }
	}
	var out []*Scenario
	for _, s := range all {
		if match(s.ID) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--only %q matches no scenario", only)
	}
	return out, nil
}

// globRegexp compiles a glob in which * matches any run of characters
// (slashes included) and ? one character.
func globRegexp(glob string) (*regexp.Regexp, error) {
	if _, err := path.Match(glob, ""); err != nil {
		return nil, fmt.Errorf("--only %q: %w", glob, err)
	}
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			j := strings.IndexByte(glob[i:], ']')
			b.WriteString(glob[i : i+j+1])
			i += j
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

type job struct {
	row *Row
	sc  *Scenario
	col Column
}

// Run runs the scenarios and returns the report.
func Run(ctx context.Context, scenarios []*Scenario, o Options) *Report {
	if o.Profile == nil {
		o.Profile = SluiceProfile()
	}
	if o.Profile.Slack <= 0 {
		o.Profile.Slack = 1
	}
	if o.Parallel <= 0 {
		o.Parallel = 4
	}
	if o.Quiet <= 0 {
		o.Quiet = 300 * time.Millisecond
	}
	o.Quiet = time.Duration(float64(o.Quiet) * o.Profile.Slack)
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	rep := &Report{
		Profile:     o.Profile.Name,
		ProfileDoc:  o.Profile.Description,
		Note:        o.Note,
		Targets:     map[string]string{},
		Unavailable: o.Unavailable,
		Started:     time.Now(),
		Columns:     Columns(),
		Counts:      map[string]map[Status]int{},
	}
	for p, d := range o.Drivers {
		rep.Targets[p] = d.Addr()
	}
	runID := strconv.FormatInt(time.Now().UnixMilli()%(36*36*36*36*36*36), 36)
	var parallel, alone []job
	seq := 0
	for _, sc := range scenarios {
		row := &Row{ID: sc.ID, Area: sc.Area(), Title: sc.Title, Checks: sc.Checks, Expect: sc.Expect,
			Needs: sc.Needs, Cross: sc.Mode == Cross, Results: map[string]Result{}}
		rep.Rows = append(rep.Rows, row)
		for _, col := range rep.Columns {
			if col.Cross() != (sc.Mode == Cross) {
				row.Results[col.Name] = Result{Status: NotApplicable}
				continue
			}
			if r, ok := precheck(sc, col, o); !ok {
				row.Results[col.Name] = r
				continue
			}
			j := job{row: row, sc: sc, col: col}
			if needs(sc, NeedRestart) {
				alone = append(alone, j)
			} else {
				parallel = append(parallel, j)
			}
		}
	}
	var mu sync.Mutex
	record := func(j job, r Result) {
		mu.Lock()
		j.row.Results[j.col.Name] = r
		mu.Unlock()
		if o.Progress != nil {
			line := fmt.Sprintf("%-13s %-50s %s", j.col.Name, j.sc.ID, r.Status)
			if r.Status != Pass && r.Detail != "" {
				line += ": " + oneLine(r.Detail, 200)
			}
			mu.Lock()
			fmt.Fprintln(o.Progress, line)
			mu.Unlock()
		}
	}
	runOne := func(j job) {
		mu.Lock()
		seq++
		id := fmt.Sprintf("%s-%d", runID, seq)
		mu.Unlock()
		record(j, runScenario(ctx, j.sc, j.col, o, id))
	}
	work := make(chan job)
	var wg sync.WaitGroup
	for i := 0; i < o.Parallel; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				runOne(j)
			}
		}()
	}
	for _, j := range parallel {
		work <- j
	}
	close(work)
	wg.Wait()
	for _, j := range alone {
		runOne(j)
	}
	for _, row := range rep.Rows {
		for col, r := range row.Results {
			if rep.Counts[col] == nil {
				rep.Counts[col] = map[Status]int{}
			}
			rep.Counts[col][r.Status]++
		}
	}
	rep.Duration = time.Since(rep.Started)
	rep.Seconds = rep.Duration.Round(100 * time.Millisecond).Seconds()
	return rep
}

func needs(sc *Scenario, n Need) bool {
	for _, x := range sc.Needs {
		if x == n {
			return true
		}
	}
	return false
}

// precheck decides the cells that need not run: unavailable protocols and
// unmet needs.
func precheck(sc *Scenario, col Column, o Options) (Result, bool) {
	protos := []string{col.From}
	if col.Cross() {
		protos = append(protos, col.To)
	}
	for _, p := range protos {
		if _, ok := o.Drivers[p]; !ok {
			reason := o.Unavailable[p]
			if reason == "" {
				reason = p + " listener not available"
			}
			return Result{Status: Unavailable, Detail: reason}, false
		}
	}
	var reasons []string
	for _, n := range sc.Needs {
		if n == NeedRestart {
			if o.Restart == nil {
				reasons = append(reasons, "needs a broker restart, which this runner cannot do (give --restart-cmd)")
			}
			continue
		}
		if n == NeedAdminDelete && o.Admin == nil {
			if r, ok := o.Profile.lacks(n, col.From); ok {
				reasons = append(reasons, string(n)+": "+r)
			} else {
				why := o.NoAdmin
				if why == "" {
					why = "no admin API given (--admin)"
				}
				reasons = append(reasons, string(n)+": "+why)
			}
			continue
		}
		for _, p := range protos {
			if r, ok := o.Profile.lacks(n, p); ok {
				reasons = append(reasons, string(n)+": "+r)
				break
			}
		}
	}
	if len(reasons) > 0 {
		sort.Strings(reasons)
		return Result{Status: NotSupported, Detail: strings.Join(reasons, "; ")}, false
	}
	return Result{}, true
}

// runScenario runs one cell, turning T's panics into a result.
func runScenario(parent context.Context, sc *Scenario, col Column, o Options, runID string) (res Result) {
	ctx, cancel := context.WithTimeout(parent, o.Timeout)
	defer cancel()
	t := &T{
		ctx: ctx, P: o.Drivers[col.From], prof: o.Profile, runID: runID,
		quiet: o.Quiet, slack: o.Profile.Slack, restart: o.Restart, admin: o.Admin,
	}
	if col.Cross() {
		t.Q = o.Drivers[col.To]
	}
	start := time.Now()
	done := make(chan Result, 1)
	go func() {
		r := Result{Status: Pass}
		defer func() {
			if p := recover(); p != nil {
				if s, ok := p.(stop); ok {
					r = Result{Status: s.status, Detail: s.detail}
				} else {
					r = Result{Status: Fail, Detail: fmt.Sprintf("panic: %v\n%s", p, debug.Stack())}
				}
			}
			t.closeAll()
			t.mu.Lock()
			r.Notes = append(r.Notes, t.notes...)
			t.mu.Unlock()
			done <- r
		}()
		sc.Run(t)
	}()
	select {
	case res = <-done:
	case <-time.After(o.Timeout + 15*time.Second):
		res = Result{Status: Fail, Detail: fmt.Sprintf("scenario did not finish within %s (last step: %s)", o.Timeout, t.lastStep())}
	}
	res.Duration = time.Since(start)
	res.Millis = res.Duration.Milliseconds()
	return res
}
