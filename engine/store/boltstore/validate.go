package boltstore

import "github.com/sluicemq/sluice/engine/store"

// Validate checks a batch with the rules Update applies (see Update), so a
// layer in front of the store, such as a journal, can refuse a batch the
// store would refuse before confirming it.
func Validate(ops []store.Op) error {
	_, err := validate(ops)
	return err
}
