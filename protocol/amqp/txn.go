package amqp

import (
	"context"

	"github.com/sluicemq/sluice/protocol/amqp/types"
)

// coordinate handles a message on the transaction coordinator link: a
// declare starts a transaction, a discharge commits (fail=false) or rolls
// it back (fail=true). The outcome goes back in the disposition: declared
// with the transaction id, accepted, or rejected with the reason.
func (l *link) coordinate(id uint32, am *types.Message, settled bool) {
	c := l.s.c
	reject := func(e *amqpError) {
		l.outcome(id, false, nil, &types.Rejected{Error: e.wire()})
	}
	var v any
	if am.Value != nil {
		v = am.Value.Value
	}
	d, ok := v.(types.Described)
	if !ok {
		reject(errf(types.AMQPErrorDecodeError, "a coordinator message must hold a declare or discharge in an amqp-value"))
		return
	}
	known, err := types.FromDescribed(d)
	if err != nil {
		reject(errf(types.AMQPErrorDecodeError, "%v", err))
		return
	}
	switch x := known.(type) {
	case *types.Declare:
		if x.GlobalID != nil {
			reject(errf(types.AMQPErrorNotImplemented, "distributed transactions are not supported"))
			return
		}
		tx, err := c.eng.BeginTxn()
		if err != nil { // past MaxTransactions: amqp:resource-limit-exceeded
			reject(condOf(err))
			return
		}
		c.txnSeq++
		txnID := deliveryTag(c.txnSeq)
		c.txns[string(txnID)] = tx
		l.s.c.sendFrame(l.s.ch, &types.Disposition{Role: types.RoleReceiver, First: types.DeliveryNumber(id), Settled: true,
			State: &types.Declared{TxnID: txnID}})
	case *types.Discharge:
		key := txnKey(x.TxnID)
		tx := c.txns[key]
		if tx == nil {
			reject(errf(types.TransactionErrorUnknownID, "transaction %x is not declared", x.TxnID))
			return
		}
		delete(c.txns, key)
		if x.Fail.Or(false) {
			tx.Rollback(context.Background())
		} else if err := tx.Commit(context.Background()); err != nil {
			reject(&amqpError{Cond: types.TransactionErrorTransactionRollback, Desc: err.Error()})
			return
		}
		l.outcome(id, false, nil, &types.Accepted{})
	default:
		name, _ := known.Descriptor()
		reject(errf(types.AMQPErrorNotImplemented, "%s on the coordinator link", name))
	}
}
