package loadgen

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// The slow scenario sends every message to a queue whose subscriber reads
// nothing, each confirmed, and measures the broker (here this process).
func TestSlowScenario(t *testing.T) {
	p, err := StartInProcessAt(context.Background(), t.TempDir(), "127.0.0.1:0", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Stop() }()
	rep, err := RunSlow(context.Background(), p.STOMPAddr(), "", "", "", Options{Count: 300, Size: 4096, ReceiptWindow: 16, Prefix: "t", BrokerPID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Sent != 300 || rep.Bytes != 300*4096 || rep.Stalled || rep.RSSBefore <= 0 || rep.RSSPeak < rep.RSSBefore {
		t.Fatalf("report %+v", rep)
	}
	var out bytes.Buffer
	if err := rep.Write(&out, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "sent       300 messages of 4096 bytes") || !strings.Contains(out.String(), "broker RSS before") {
		t.Fatalf("report text:\n%s", out.String())
	}
}
