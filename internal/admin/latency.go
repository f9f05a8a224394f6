package admin

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicemq/sluice/engine/message"
)

// DeliveryLatency is the sluice_delivery_latency_seconds histogram: how long
// messages waited between becoming deliverable and reaching a consumer, by
// destination kind. The broker hands Observe to the engine
// (engine.Config.ObserveDelivery) and the histogram to Options.
type DeliveryLatency struct {
	vec *prometheus.HistogramVec
}

// NewDeliveryLatency makes the histogram.
func NewDeliveryLatency() *DeliveryLatency {
	return &DeliveryLatency{vec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sluice_delivery_latency_seconds",
		Help:    "Time from when a message became deliverable (its delivery time or timestamp) to its delivery to a consumer.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"kind"})}
}

// Observe records one delivery.
func (l *DeliveryLatency) Observe(dest message.Destination, wait time.Duration) {
	kind := "queue"
	if dest.Kind.IsTopic() {
		kind = "topic"
	}
	l.vec.WithLabelValues(kind).Observe(max(wait, 0).Seconds())
}
