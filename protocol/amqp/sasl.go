package amqp

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/sluicemq/sluice/protocol/amqp/frames"
	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// SASL mechanisms the server offers.
const (
	mechPlain     types.Symbol = "PLAIN"
	mechAnonymous types.Symbol = "ANONYMOUS"
)

// sasl runs the SASL exchange after the SASL protocol header: offer the
// mechanisms, read sasl-init, answer with the outcome.
func (c *conn) sasl() error {
	mechs := []types.Symbol{mechPlain}
	if !c.srv.opts.DisableAnonymous {
		mechs = append(mechs, mechAnonymous)
	}
	c.send(outItem{fr: frames.Frame{Type: frames.TypeSASL, Body: &types.SASLMechanisms{SASLServerMechanisms: mechs}}})
	f, err := c.rd.ReadFrame()
	if err != nil {
		return err
	}
	init, ok := f.Body.(*types.SASLInit)
	if !ok || f.Type != frames.TypeSASL {
		c.saslOutcome(types.SASLCodeSysPerm)
		return fmt.Errorf("expected sasl-init, got %s", bodyName(f.Body))
	}
	if err := c.authenticate(init); err != nil {
		c.saslOutcome(types.SASLCodeAuth)
		return err
	}
	c.send(outItem{fr: frames.Frame{Type: frames.TypeSASL, Body: &types.SASLOutcome{Code: types.SASLCodeOK}}})
	return nil
}

func (c *conn) saslOutcome(code types.SASLCode) {
	c.failing.Store(true)
	c.send(outItem{fr: frames.Frame{Type: frames.TypeSASL, Body: &types.SASLOutcome{Code: code}}, close: true})
}

// authenticate is the one place that decides whether a client may in.
func (c *conn) authenticate(init *types.SASLInit) error {
	switch init.Mechanism {
	case mechAnonymous:
		if c.srv.opts.DisableAnonymous {
			return errors.New("SASL ANONYMOUS is disabled")
		}
		return nil
	case mechPlain:
		// authzid NUL authcid NUL password
		parts := bytes.SplitN(init.InitialResponse, []byte{0}, 3)
		if len(parts) != 3 {
			return errors.New("malformed SASL PLAIN response")
		}
		user, pass := string(parts[1]), string(parts[2])
		if fn := c.srv.opts.Authenticate; fn != nil {
			return fn(user, pass)
		}
		return nil
	}
	return fmt.Errorf("SASL mechanism %q is not offered", init.Mechanism)
}
