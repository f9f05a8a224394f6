package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/sluicemq/sluice/engine/records"
	"github.com/sluicemq/sluice/engine/store"
)

// Definitions.
//
// A front-end may keep small durable records of its own configuration
// beside the engine's destinations: AMQP 0-9-1's declared exchanges and
// their bindings are the first. The engine gives them no meaning; it only
// stores them, in one bucket, under the front-end's namespace, and
// recovery leaves them alone. Without a store they are kept nowhere:
// PutDefinition and DeleteDefinition succeed and Definitions yields
// nothing, as every other durable thing of a broker without a store.

// maxDefinitionSize bounds one definition's key and value together.
const maxDefinitionSize = 64 << 10

func checkDefinition(namespace, key string, value []byte) error {
	switch {
	case namespace == "" || bytes.IndexByte([]byte(namespace), 0) >= 0:
		return errors.New("definition namespace must be non-empty and without NUL")
	case key == "":
		return errors.New("definition key is empty")
	case len(key)+len(value) > maxDefinitionSize:
		return fmt.Errorf("definition %s/%q is larger than %d bytes", namespace, key, maxDefinitionSize)
	}
	return nil
}

// PutDefinition stores value under key in namespace durably, replacing
// what was there, and returns once it is durable.
func (b *Broker) PutDefinition(ctx context.Context, namespace, key string, value []byte) error {
	if err := checkDefinition(namespace, key, value); err != nil {
		return errorf(CodeJMS, "%v", err)
	}
	if b.store == nil {
		return nil
	}
	op := store.Op{Kind: store.Put, Bucket: records.Definitions, Key: records.DefinitionKey(namespace, key), Value: append([]byte(nil), value...)}
	if err := b.store.Update(ctx, []store.Op{op}); err != nil {
		return fmt.Errorf("store definition %s/%q: %w", namespace, key, err)
	}
	return nil
}

// DeleteDefinition removes key from namespace durably; removing a key
// that is not there is no error.
func (b *Broker) DeleteDefinition(ctx context.Context, namespace, key string) error {
	if err := checkDefinition(namespace, key, nil); err != nil {
		return errorf(CodeJMS, "%v", err)
	}
	if b.store == nil {
		return nil
	}
	op := store.Op{Kind: store.Delete, Bucket: records.Definitions, Key: records.DefinitionKey(namespace, key)}
	if err := b.store.Update(ctx, []store.Op{op}); err != nil {
		return fmt.Errorf("delete definition %s/%q: %w", namespace, key, err)
	}
	return nil
}

// Definitions calls fn with every definition of namespace in key order.
// The value is valid only during the call. An error from fn stops the
// walk and is returned.
func (b *Broker) Definitions(namespace string, fn func(key string, value []byte) error) error {
	if b.store == nil {
		return nil
	}
	prefix := records.DefinitionKey(namespace, "")
	var stop error
	err := b.store.Range(records.Definitions, prefix, 0, func(k, v []byte) error {
		if !bytes.HasPrefix(k, prefix) {
			return errStopDefs
		}
		if err := fn(string(k[len(prefix):]), v); err != nil {
			stop = err
			return err
		}
		return nil
	})
	if stop != nil {
		return stop
	}
	if err != nil && !errors.Is(err, errStopDefs) {
		return fmt.Errorf("read definitions %s: %w", namespace, err)
	}
	return nil
}

// errStopDefs ends a walk of the definitions at the end of a namespace.
var errStopDefs = errors.New("end of namespace")
