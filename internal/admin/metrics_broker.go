package admin

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicemq/sluice/engine"
)

// totalsCollector serves the engine's broker-wide counters (engine.Totals)
// and the data directory's size and free space, read at scrape time.
type totalsCollector struct {
	eng     *engine.Broker
	dataDir string

	enqueued, delivered, acked, redelivered *prometheus.Desc
	confirms                                *prometheus.Desc
	opened, closed                          *prometheus.Desc
	dataBytes, dataFree                     *prometheus.Desc
}

func newTotalsCollector(eng *engine.Broker, dataDir string) *totalsCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &totalsCollector{
		eng:         eng,
		dataDir:     dataDir,
		enqueued:    d("sluice_messages_enqueued_total", "Messages added to queues and topic subscriptions (a topic message once per subscription), since the broker started, whatever was deleted since."),
		delivered:   d("sluice_messages_delivered_total", "Deliveries of messages to consumers, redeliveries included."),
		acked:       d("sluice_messages_acknowledged_total", "Messages consumers acknowledged."),
		redelivered: d("sluice_messages_redelivered_total", "Messages that came back for another delivery (rollback, recover, NACK, a consumer that went away)."),
		confirms:    d("sluice_producer_confirms_total", "Pipelined sends (STOMP SEND, AMQP transfer) the broker confirmed to their producer (result confirmed: durable or consumed), or whose write failed (result failed).", "result"),
		opened:      d("sluice_connections_opened_total", "Client connections opened, by protocol (stomp, amqp; admin for the admin API's test messages; embedded for in-process clients).", "protocol"),
		closed:      d("sluice_connections_closed_total", "Client connections closed, by protocol and reason (client, network_error, heartbeat_timeout, administrator, shutdown, error).", "protocol", "reason"),
		dataBytes:   d("sluice_data_directory_bytes", "Size of the files in the data directory (the store and its journal)."),
		dataFree:    d("sluice_data_directory_free_bytes", "Space available to the broker on the file system of the data directory."),
	}
}

// Describe sends every descriptor.
func (c *totalsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.enqueued, c.delivered, c.acked, c.redelivered, c.confirms, c.opened, c.closed} {
		ch <- d
	}
	if c.dataDir != "" {
		ch <- c.dataBytes
		ch <- c.dataFree
	}
}

// Collect reads the totals and the data directory.
func (c *totalsCollector) Collect(ch chan<- prometheus.Metric) {
	counter := prometheus.CounterValue
	t := c.eng.Totals()
	ch <- prometheus.MustNewConstMetric(c.enqueued, counter, float64(t.Enqueued))
	ch <- prometheus.MustNewConstMetric(c.delivered, counter, float64(t.Delivered))
	ch <- prometheus.MustNewConstMetric(c.acked, counter, float64(t.Acknowledged))
	ch <- prometheus.MustNewConstMetric(c.redelivered, counter, float64(t.Redelivered))
	ch <- prometheus.MustNewConstMetric(c.confirms, counter, float64(t.Confirmed), "confirmed")
	ch <- prometheus.MustNewConstMetric(c.confirms, counter, float64(t.ConfirmFailed), "failed")
	byProto := map[string]engine.ConnectionTotals{}
	for _, p := range []string{"stomp", "amqp", "admin", "embedded"} { // at zero before their first connection
		byProto[p] = engine.ConnectionTotals{}
	}
	for p, ct := range t.Connections {
		l := protocolLabel(p)
		sum := byProto[l]
		sum.Opened += ct.Opened
		for i := range sum.Closed {
			sum.Closed[i] += ct.Closed[i]
		}
		byProto[l] = sum
	}
	for p, ct := range byProto {
		ch <- prometheus.MustNewConstMetric(c.opened, counter, float64(ct.Opened), p)
		for _, r := range engine.CloseReasons() {
			ch <- prometheus.MustNewConstMetric(c.closed, counter, float64(ct.Closed[r]), p, r.Label())
		}
	}
	if c.dataDir != "" {
		if u, err := dataUsage(c.dataDir); err == nil {
			ch <- prometheus.MustNewConstMetric(c.dataBytes, prometheus.GaugeValue, float64(u.Bytes))
			if u.FreeBytes != nil {
				ch <- prometheus.MustNewConstMetric(c.dataFree, prometheus.GaugeValue, float64(*u.FreeBytes))
			}
		}
	}
}

// StoreSyncLatency is the sluice_store_sync_seconds histogram: how long
// each sync of the store's journal took (the fdatasync that makes a group
// commit durable). The broker hands Observe to the journal
// (journal.Options.ObserveSync) and the histogram to Options.
type StoreSyncLatency struct {
	h prometheus.Histogram
}

// NewStoreSyncLatency makes the histogram.
func NewStoreSyncLatency() *StoreSyncLatency {
	return &StoreSyncLatency{h: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "sluice_store_sync_seconds",
		Help:    "Time each sync (fdatasync) of the store's journal took; each makes one group commit durable.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	})}
}

// Observe records one sync.
func (l *StoreSyncLatency) Observe(d time.Duration) { l.h.Observe(d.Seconds()) }
