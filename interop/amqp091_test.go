//go:build interop

// AMQP 0-9-1 interop: pika (Debian's python3-pika, run by /usr/bin/python3)
// against Sluice's AMQP port, which tells 0-9-1 from AMQP 1.0 by the
// protocol header. The scenarios of python/pika_py.py are written as
// applications for RabbitMQ are, and pass against RabbitMQ 3.10 too
// (except selector: RabbitMQ ignores x-selector); the same pattern as
// amqp_test.go.

package interop

import (
	"path/filepath"
	"testing"
)

// TestPika runs each pika scenario against its own broker.
func TestPika(t *testing.T) {
	py := pythonWith(t, "pika", "pika.__version__", "pika", "python3-pika")
	script := filepath.Join("python", "pika_py.py")
	for _, scenario := range []string{
		"app",        // declare exchange and queue, bind, publish with confirms and mandatory (basic.return), qos, manual ack, nack with requeue, reject
		"get",        // basic.get on an empty queue and on a message
		"tx",         // tx.select, rollback, commit
		"topic",      // a server-named exclusive queue bound to amq.topic with a pattern
		"fanout",     // a declared fanout exchange to two queues
		"selector",   // the x-selector consumer argument; a bad selector closes the channel with an error naming it
		"redelivery", // nack with requeue: redelivered, x-delivery-count, then the error destination past the redelivery limit
		"delay",      // x-delay holds a message back; JMSDeliveryTime on delivery
		"priority",   // waiting messages go highest priority first
		"expiry",     // an expired message is never delivered
		"cross",      // STOMP /topic/K to a queue bound to amq.topic K; typed headers read back over STOMP
	} {
		t.Run(scenario, func(t *testing.T) {
			t.Parallel()
			s := startAMQPSluice(t)
			runAMQPScript(t, s, scenario, py, script)
		})
	}
}
