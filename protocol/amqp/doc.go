// Package amqp serves AMQP 1.0 on the Sluice engine: SASL, connections,
// sessions, links with credit and drain, transactions through the
// coordinator, and the JMS mapping Qpid JMS, ActiveMQ and Artemis use
// (mapping.go). The codec is generated into types/ and frames/ by
// gen/amqpgen; docs/amqp.md describes the behaviour a client sees.
package amqp
