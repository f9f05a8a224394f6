package admin

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
)

// Rate history: every HistoryInterval the server reads the engine's
// counters and keeps, per destination and for the whole broker, how many
// messages per second were enqueued, delivered, acknowledged and
// redelivered in the interval, with the depth and the consumers at its
// end. Each series is a ring of HistorySamples samples (an hour at the
// defaults), so that a console opened now shows the last hour. At most
// HistoryDestinations destinations are tracked; others get no history
// until tracked ones are deleted (their history goes with them).
// Temporary destinations are not tracked: their names are unique, each
// would be a new series.

// History defaults.
const (
	DefaultHistoryInterval     = 5 * time.Second
	DefaultHistoryLength       = time.Hour
	DefaultHistoryDestinations = 500
)

// rateSample is one interval of a series. Rates are per second.
type rateSample struct {
	at                              int64 // end of the interval, Unix ms
	enqueued, delivered, acked, red float32
	messages                        int64
	consumers                       int32
}

// counters are the cumulative values rates are computed from.
type counters struct {
	enqueued, delivered, acked, redelivered uint64
}

// series is one ring of samples and the counters last read.
type series struct {
	samples []rateSample // ring of cap samples
	next    int          // where the next sample goes
	n       int          // samples held
	last    counters
	lastAt  time.Time
	primed  bool // last holds a reading
}

func newSeries(capacity int) *series { return &series{samples: make([]rateSample, capacity)} }

// delta is cur − prev, or 0 when the counter went down (a topic whose
// subscription ended, a destination deleted and made again).
func delta(cur, prev uint64) float64 {
	if cur < prev {
		return 0
	}
	return float64(cur - prev)
}

// observe reads c at now and, from the second reading on, adds a sample.
func (s *series) observe(now time.Time, c counters, messages int64, consumers int) {
	if s.primed {
		dt := now.Sub(s.lastAt).Seconds()
		if dt > 0 {
			rate := func(cur, prev uint64) float32 { return float32(delta(cur, prev) / dt) }
			s.samples[s.next] = rateSample{at: now.UnixMilli(),
				enqueued: rate(c.enqueued, s.last.enqueued), delivered: rate(c.delivered, s.last.delivered),
				acked: rate(c.acked, s.last.acked), red: rate(c.redelivered, s.last.redelivered),
				messages: messages, consumers: int32(min(consumers, 1<<31-1))}
			s.next = (s.next + 1) % len(s.samples)
			s.n = min(s.n+1, len(s.samples))
		}
	}
	s.last, s.lastAt, s.primed = c, now, true
}

// since returns the samples after t (Unix ms), oldest first.
func (s *series) since(t int64) []rateSample {
	out := make([]rateSample, 0, s.n)
	start := (s.next - s.n + len(s.samples)) % len(s.samples)
	for i := range s.n {
		x := s.samples[(start+i)%len(s.samples)]
		if x.at > t {
			out = append(out, x)
		}
	}
	return out
}

// history holds the broker's series and one per tracked destination.
type history struct {
	interval time.Duration
	capacity int // samples per series
	maxDests int

	mu        sync.Mutex
	broker    *series
	dests     map[message.Destination]*series
	untracked int // destinations seen at the last sample and not tracked
}

func newHistory(interval, length time.Duration, maxDests int) *history {
	if interval <= 0 {
		interval = DefaultHistoryInterval
	}
	if length <= 0 {
		length = DefaultHistoryLength
	}
	if maxDests <= 0 {
		maxDests = DefaultHistoryDestinations
	}
	capacity := max(int(length/interval), 2)
	return &history{interval: interval, capacity: capacity, maxDests: maxDests,
		broker: newSeries(capacity), dests: map[message.Destination]*series{}}
}

// sample reads the engine once: every destination's counters and the
// broker's totals.
func (h *history) sample(now time.Time, infos []engine.DestinationInfo, tot engine.Totals) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var messages int64
	consumers := 0
	seen := make(map[message.Destination]bool, len(infos))
	for _, d := range infos {
		messages += d.Messages
		consumers += d.Consumers
		if !d.Kind.IsTemporary() {
			seen[d.Destination()] = true
		}
	}
	for dest := range h.dests {
		if !seen[dest] {
			delete(h.dests, dest) // deleted: its history goes
		}
	}
	untracked := 0
	for _, d := range infos {
		if d.Kind.IsTemporary() {
			continue
		}
		dest := d.Destination()
		s := h.dests[dest]
		if s == nil {
			if len(h.dests) >= h.maxDests {
				untracked++
				continue
			}
			s = newSeries(h.capacity)
			h.dests[dest] = s
		}
		s.observe(now, counters{d.Enqueued, d.Delivered, d.Dequeued, d.Redelivered}, d.Messages, d.Consumers)
	}
	h.untracked = untracked
	h.broker.observe(now, counters{tot.Enqueued, tot.Delivered, tot.Acknowledged, tot.Redelivered}, messages, consumers)
}

// run samples every interval until ctx ends.
func (h *history) run(ctx context.Context, eng *engine.Broker) {
	t := time.NewTicker(h.interval)
	defer t.Stop()
	h.sample(time.Now(), eng.Destinations(), eng.Totals())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			h.sample(now, eng.Destinations(), eng.Totals())
		}
	}
}

// historyJSON is the answer of the history endpoints.
type historyJSON struct {
	// Interval is the sampling interval in seconds; Capacity how many
	// samples a series keeps.
	Interval float64 `json:"interval"`
	Capacity int     `json:"capacity"`
	// Tracked is false for a destination that has no history: temporary,
	// or over the number of destinations tracked.
	Tracked bool                `json:"tracked"`
	Samples []historySampleJSON `json:"samples"`
	// Untracked counts the destinations without history (broker only).
	Untracked int `json:"untracked,omitempty"`
}

type historySampleJSON struct {
	Time         int64   `json:"time"`
	Enqueued     float32 `json:"enqueued"`
	Delivered    float32 `json:"delivered"`
	Acknowledged float32 `json:"acknowledged"`
	Redelivered  float32 `json:"redelivered"`
	Messages     int64   `json:"messages"`
	Consumers    int32   `json:"consumers"`
}

func (h *history) answer(s *series, since int64) historyJSON {
	out := historyJSON{Interval: h.interval.Seconds(), Capacity: h.capacity, Tracked: s != nil, Samples: []historySampleJSON{}}
	if s == nil {
		return out
	}
	for _, x := range s.since(since) {
		out.Samples = append(out.Samples, historySampleJSON{Time: x.at, Enqueued: x.enqueued, Delivered: x.delivered,
			Acknowledged: x.acked, Redelivered: x.red, Messages: x.messages, Consumers: x.consumers})
	}
	return out
}

// querySince reads ?since= (Unix ms; 0 when absent).
func querySince(r *http.Request) (int64, error) {
	v := r.URL.Query().Get("since")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("query parameter since=%q: want a time in Unix milliseconds", v)
	}
	return n, nil
}

// brokerHistory answers GET /api/history: the broker's rates.
func (s *Server) brokerHistory(w http.ResponseWriter, r *http.Request) {
	since, err := querySince(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	h := s.history
	h.mu.Lock()
	out := h.answer(h.broker, since)
	out.Untracked = h.untracked
	h.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// destinationHistory answers GET /api/destinations/{kind}/{name}/history.
func (s *Server) destinationHistory(w http.ResponseWriter, r *http.Request) {
	dest, err := pathDest(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	since, err := querySince(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if _, err := s.eng.DestinationInfo(dest); err != nil {
		s.fail(w, r, err)
		return
	}
	h := s.history
	h.mu.Lock()
	out := h.answer(h.dests[dest], since)
	h.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}
