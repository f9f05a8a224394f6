package main

// The parts of RabbitMQ's AMQP 0-9-1 that amqp0-9-1.stripped.extended.xml
// lacks. RabbitMQ's full definition (amqp-rabbitmq-0.9.1.json in
// rabbitmq-codegen) has them, and clients use them: amqp091-go and the Java
// client handle connection.blocked/unblocked (the "connection.blocked"
// capability) and connection.update-secret (OAuth 2 token refresh), and a
// mandatory basic.publish that no queue takes comes back in a basic.return
// with reply code 312, no-route. Each is added only where the XML does not
// have it; where the XML has it, the XML's definition must agree.

// extraNote is the reason given in the generated doc comments.
const extraNote = "not in amqp0-9-1.stripped.extended.xml; added by gen/amqp091gen from RabbitMQ's protocol extensions"

// extraConstants returns the constants to add.
func extraConstants() []xmlConstant {
	return []xmlConstant{
		{Name: "no-route", Value: "312", Class: "soft-error"},
	}
}

// extraMethod is a method to add to a class of the XML.
type extraMethod struct {
	Class  string
	Method xmlMethod
}

// extraMethods returns the methods to add.
func extraMethods() []extraMethod {
	return []extraMethod{
		{"connection", xmlMethod{Name: "blocked", Index: "60", Fields: []xmlField{
			{Name: "reason", Domain: "shortstr"},
		}}},
		{"connection", xmlMethod{Name: "unblocked", Index: "61"}},
		{"connection", xmlMethod{Name: "update-secret", Synchronous: "1", Index: "70", Fields: []xmlField{
			{Name: "new-secret", Domain: "longstr"},
			{Name: "reason", Domain: "shortstr"},
		}}},
		{"connection", xmlMethod{Name: "update-secret-ok", Synchronous: "1", Index: "71"}},
	}
}
