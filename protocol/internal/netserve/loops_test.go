package netserve

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicemq/sluice/engine"
)

func TestRunLoops(t *testing.T) {
	errBroken := errors.New("broken frame")
	for _, tc := range []struct {
		name      string
		readErr   error
		failing   bool
		wantEnded bool
	}{
		{"client went away", io.EOF, false, false},
		{"closed here", net.ErrClosed, false, false},
		{"reader failed", errBroken, false, true},
		{"error frame on its way", errBroken, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop := make(chan struct{})
			var wrote, shutdowns, wroteAtShutdown atomic.Int32
			var ended error
			done := make(chan struct{})
			go func() {
				defer close(done)
				RunLoops(Loops{
					Read: func() error { return tc.readErr },
					Write: func() {
						if tc.failing {
							time.Sleep(20 * time.Millisecond) // writing the error frame
							wrote.Add(1)
							return
						}
						<-stop
					},
					Failing:  func() bool { return tc.failing },
					Shutdown: func() { wroteAtShutdown.Store(wrote.Load()); shutdowns.Add(1); close(stop) },
					Ended:    func(err error) { ended = err },
				})
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("RunLoops did not return")
			}
			if shutdowns.Load() != 1 {
				t.Fatalf("Shutdown ran %d times", shutdowns.Load())
			}
			if got := ended != nil; got != tc.wantEnded {
				t.Fatalf("Ended told %v, want told: %v", ended, tc.wantEnded)
			}
			if tc.failing && wroteAtShutdown.Load() != 1 {
				t.Fatal("Shutdown came before the writer delivered the error frame")
			}
		})
	}
}

func TestEndReasonFirstWins(t *testing.T) {
	var e EndReason
	if r, err := e.Get(); r != engine.ClosedNetworkError || err != nil {
		t.Fatalf("unset: %v %v, want network error", r, err)
	}
	timeout := errors.New("nothing received for 21s")
	e.Set(engine.ClosedHeartbeatTimeout, timeout)
	e.Set(engine.ClosedError, errors.New("the ERROR frame"))
	if r, err := e.Get(); r != engine.ClosedHeartbeatTimeout || err != timeout {
		t.Fatalf("got %v %v, want the heart-beat timeout", r, err)
	}
}
