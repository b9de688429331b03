package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/stream"
)

// eventsConfig is how GET /api/events keeps its streams: how often an idle one sends a heartbeat
// comment, and how often its credential is checked again (zero: the stream package's defaults).
type eventsConfig struct {
	heartbeat, recheck time.Duration
}

func (c *eventsConfig) flags(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&c.heartbeat, "events-heartbeat", envDuration("CHORUS_EVENTS_HEARTBEAT", stream.DefaultHeartbeat),
		"how often an idle event stream (GET /api/events) sends a heartbeat comment, so proxies keep it open; below "+
			"your proxy's idle timeout (env CHORUS_EVENTS_HEARTBEAT)")
}
