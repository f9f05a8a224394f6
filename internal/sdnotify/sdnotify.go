// Package sdnotify tells systemd how a service started with Type=notify is
// doing (sd_notify(3)): one datagram, such as "READY=1", to the unix socket
// that systemd names in $NOTIFY_SOCKET. Without that variable nothing is
// sent, so a broker started any other way is unaffected.
package sdnotify

import (
	"fmt"
	"net"
)

// States that Sluice sends.
const (
	// Ready: every listener is bound; systemd considers the start done.
	Ready = "READY=1"
	// Stopping: the broker has begun to shut down.
	Stopping = "STOPPING=1"
)

// Notify sends state to the socket at path, the value of $NOTIFY_SOCKET: a
// file system path, or an abstract socket name starting with "@". An empty
// path means the service was not started by systemd: Notify sends nothing
// and returns false.
func Notify(path, state string) (sent bool, err error) {
	if path == "" {
		return false, nil
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return false, fmt.Errorf("sd_notify %s: %w", state, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return false, fmt.Errorf("sd_notify %s to %s: %w", state, path, err)
	}
	return true, nil
}
