package security_test

import (
	"context"
	"fmt"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluicemq/sluice/engine"
	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/engine/security"
)

// A realm with one user who may send to and consume the orders.* queues. A
// front-end logs the client in and passes the identity to the engine's
// connection, which then asks its Permissions at every decision point.
func Example() {
	hash, _ := bcrypt.GenerateFromPassword([]byte("alice-pw"), bcrypt.MinCost)
	realm, err := security.New(security.Options{
		Users:  []security.User{{Name: "alice", PasswordHash: string(hash), Roles: []string{"orders"}}},
		Grants: []security.Grant{{Role: "orders", Kind: "queue", Match: "orders.*", Actions: []string{"send", "consume"}}},
	})
	if err != nil {
		panic(err)
	}
	id, err := realm.Login(context.Background(), security.Attempt{Protocol: "stomp"}, "alice", "alice-pw")
	if err != nil {
		panic(err)
	}
	_ = engine.ConnectionOptions{User: id.User, Permissions: id.Permissions}
	fmt.Println(id.Permissions.Allows(engine.ActionSend, message.Destination{Kind: message.Queue, Name: "orders.eu"}))
	fmt.Println(id.Permissions.Allows(engine.ActionBrowse, message.Destination{Kind: message.Queue, Name: "orders.eu"}))
	// Output:
	// true
	// false
}
