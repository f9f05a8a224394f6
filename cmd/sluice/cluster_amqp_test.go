package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	amqp "github.com/Azure/go-amqp"
	amqp091 "github.com/rabbitmq/amqp091-go"
)

// Confirmed AMQP sends and receives of the black-box cluster tests: each
// returns an error rather than failing the test.

// amqp10SendConfirmed sends one durable message over AMQP 1.0 on an
// unsettled link: nil once the broker's disposition accepted it.
func amqp10SendConfirmed(addr, queue, body string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := amqp.Dial(ctx, "amqp://"+addr, &amqp.ConnOptions{SASLType: amqp.SASLTypeAnonymous()})
	if err != nil {
		return fmt.Errorf("AMQP 1.0 dial %s: %w", addr, err)
	}
	defer c.Close()
	s, err := c.NewSession(ctx, nil)
	if err != nil {
		return err
	}
	snd, err := s.NewSender(ctx, queue, &amqp.SenderOptions{SettlementMode: amqp.SenderSettleModeUnsettled.Ptr()})
	if err != nil {
		return err
	}
	m := amqp.NewMessage([]byte(body))
	m.Header = &amqp.MessageHeader{Durable: true}
	return snd.Send(ctx, m, nil)
}

// amqp10Receive takes one message over AMQP 1.0 and accepts it.
func amqp10Receive(addr, queue string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := amqp.Dial(ctx, "amqp://"+addr, &amqp.ConnOptions{SASLType: amqp.SASLTypeAnonymous()})
	if err != nil {
		return "", fmt.Errorf("AMQP 1.0 dial %s: %w", addr, err)
	}
	defer c.Close()
	s, err := c.NewSession(ctx, nil)
	if err != nil {
		return "", err
	}
	r, err := s.NewReceiver(ctx, queue, nil)
	if err != nil {
		return "", err
	}
	m, err := r.Receive(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("AMQP 1.0 receive from %s: %w", queue, err)
	}
	return string(m.GetData()), r.AcceptMessage(ctx, m)
}

// amqp091SendConfirmed publishes one persistent message over AMQP 0-9-1
// with publisher confirms: nil once the broker acked it.
func amqp091SendConfirmed(addr, queue, body string) error {
	c, err := amqp091.DialConfig("amqp://guest:guest@"+addr+"/", amqp091.Config{Dial: amqp091.DefaultDial(5 * time.Second)})
	if err != nil {
		return fmt.Errorf("AMQP 0-9-1 dial %s: %w", addr, err)
	}
	defer c.Close()
	ch, err := c.Channel()
	if err != nil {
		return err
	}
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		return err
	}
	if err := ch.Confirm(false); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false,
		amqp091.Publishing{DeliveryMode: amqp091.Persistent, Body: []byte(body)})
	if err != nil {
		return err
	}
	ok, err := dc.WaitContext(ctx)
	if err == nil && !ok {
		err = errors.New("nacked")
	}
	return err
}

// amqp091Receive takes one message over AMQP 0-9-1 and acks it.
func amqp091Receive(addr, queue string) (string, error) {
	c, err := amqp091.DialConfig("amqp://guest:guest@"+addr+"/", amqp091.Config{Dial: amqp091.DefaultDial(5 * time.Second)})
	if err != nil {
		return "", fmt.Errorf("AMQP 0-9-1 dial %s: %w", addr, err)
	}
	defer c.Close()
	ch, err := c.Channel()
	if err != nil {
		return "", err
	}
	ds, err := ch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		return "", err
	}
	select {
	case d, ok := <-ds:
		if !ok {
			return "", errors.New("AMQP 0-9-1 consumer closed")
		}
		return string(d.Body), d.Ack(false)
	case <-time.After(15 * time.Second):
		return "", fmt.Errorf("AMQP 0-9-1: nothing from %s within 15 s", queue)
	}
}
