package main

import (
	"log/slog"
	"os"

	"github.com/sluicemq/sluice/internal/sdnotify"
)

// notifySystemd tells systemd the broker's state (sdnotify.Ready once every
// listener is bound, sdnotify.Stopping when shutdown begins) when systemd
// started it with Type=notify, as packaging/sluice.service does; without
// $NOTIFY_SOCKET it does nothing. A failure is logged: the broker runs on.
func notifySystemd(log *slog.Logger, state string) {
	if _, err := sdnotify.Notify(os.Getenv("NOTIFY_SOCKET"), state); err != nil {
		log.Warn("telling systemd the broker's state", slog.String("state", state), slog.Any("error", err))
	}
}
