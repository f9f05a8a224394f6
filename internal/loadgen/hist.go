package loadgen

import (
	"math"
	"math/bits"
	"time"
)

// Histogram records durations in log-linear buckets: 32 sub-buckets per
// power of two of microseconds, so a percentile is within about 3% of the
// true value. It is bounded in size whatever the count, and its zero value
// is ready to use. Not safe for concurrent use.
type Histogram struct {
	counts [64 * histSub]int64
	n      int64
	sum    float64 // microseconds
	max    int64   // microseconds
	neg    int64   // negative samples (clocks disagree), counted as 0
}

const (
	histSubBits = 5
	histSub     = 1 << histSubBits
)

func histIndex(us uint64) int {
	if us < histSub {
		return int(us)
	}
	exp := bits.Len64(us) - 1 - histSubBits // ≥ 0
	mant := (us >> uint(exp)) & (histSub - 1)
	return (exp+1)*histSub + int(mant)
}

// histValue is the upper bound (in µs) of bucket i.
func histValue(i int) float64 {
	if i < histSub {
		return float64(i)
	}
	exp := i/histSub - 1
	mant := uint64(i % histSub)
	lo := (histSub + mant) << uint(exp)
	return float64(lo + (1 << uint(exp)) - 1)
}

// Record adds one sample.
func (h *Histogram) Record(d time.Duration) {
	us := d.Microseconds()
	if us < 0 {
		h.neg++
		us = 0
	}
	h.counts[histIndex(uint64(us))]++
	h.n++
	h.sum += float64(us)
	if us > h.max {
		h.max = us
	}
}

// Merge adds o's samples to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
	h.neg += o.neg
}

// Quantile returns the q-quantile (0 < q ≤ 1), in microseconds.
func (h *Histogram) Quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(histValue(i), float64(h.max))
		}
	}
	return float64(h.max)
}

// LatencySummary is the latency part of a report, in milliseconds.
type LatencySummary struct {
	Samples int64   `json:"samples"`
	MeanMs  float64 `json:"mean_ms"`
	P50Ms   float64 `json:"p50_ms"`
	P90Ms   float64 `json:"p90_ms"`
	P99Ms   float64 `json:"p99_ms"`
	P999Ms  float64 `json:"p999_ms"`
	MaxMs   float64 `json:"max_ms"`
}

// Summary returns the percentiles.
func (h *Histogram) Summary() LatencySummary {
	if h.n == 0 {
		return LatencySummary{}
	}
	return LatencySummary{
		Samples: h.n,
		MeanMs:  h.sum / float64(h.n) / 1000,
		P50Ms:   h.Quantile(0.50) / 1000,
		P90Ms:   h.Quantile(0.90) / 1000,
		P99Ms:   h.Quantile(0.99) / 1000,
		P999Ms:  h.Quantile(0.999) / 1000,
		MaxMs:   float64(h.max) / 1000,
	}
}
