package admin

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicemq/sluice/engine"
)

// flowCollector serves the state of the engine's flow gate (engine.Flow):
// the memory budget, the disk watermark, and whether producers are held.
type flowCollector struct {
	eng *engine.Broker

	memLimit, memUsed, diskLimit *prometheus.Desc
	blocked, engaged, seconds    *prometheus.Desc
}

func newFlowCollector(eng *engine.Broker) *flowCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &flowCollector{
		eng:       eng,
		memLimit:  d("sluice_memory_limit_bytes", "The live heap at which producers are held (90% of [limits] memory_limit); 0 when there is no limit."),
		memUsed:   d("sluice_memory_used_bytes", "The live heap as last measured against the limit (what the last garbage collection found in use); 0 when there is no limit."),
		diskLimit: d("sluice_disk_free_limit_bytes", "The free space the data directory's file system must keep ([limits] disk_free_limit); 0 when it is not watched."),
		blocked:   d("sluice_flow_blocked", "1 while the resource (memory, disk) holds producers, else 0.", "reason"),
		engaged:   d("sluice_flow_blocked_total", "Times the resource (memory, disk) began to hold producers.", "reason"),
		seconds:   d("sluice_flow_blocked_seconds_total", "Time producers have been held, for any reason."),
	}
}

// Describe sends every descriptor.
func (c *flowCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.memLimit, c.memUsed, c.diskLimit, c.blocked, c.engaged, c.seconds} {
		ch <- d
	}
}

// Collect reads the gate.
func (c *flowCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.eng.Flow().Stats()
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	ch <- prometheus.MustNewConstMetric(c.memLimit, gauge, float64(st.MemoryLimit))
	ch <- prometheus.MustNewConstMetric(c.memUsed, gauge, float64(st.MemoryUsed))
	ch <- prometheus.MustNewConstMetric(c.diskLimit, gauge, float64(st.DiskFreeLimit))
	bit := func(r engine.FlowReason) float64 {
		if st.Reasons&r != 0 {
			return 1
		}
		return 0
	}
	ch <- prometheus.MustNewConstMetric(c.blocked, gauge, bit(engine.FlowMemory), "memory")
	ch <- prometheus.MustNewConstMetric(c.blocked, gauge, bit(engine.FlowDisk), "disk")
	ch <- prometheus.MustNewConstMetric(c.engaged, counter, float64(st.EngagedMemory), "memory")
	ch <- prometheus.MustNewConstMetric(c.engaged, counter, float64(st.EngagedDisk), "disk")
	ch <- prometheus.MustNewConstMetric(c.seconds, counter, st.BlockedTime.Seconds())
}
