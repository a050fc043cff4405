/*
 * switch_served.c — when the destination first answered a client through
 * this sidecar after the switch (switch.c): the switch's last step, as a
 * log line and a gauge. Called by response.c for every response while the
 * first one is awaited; calls nothing of the data path. Loop thread.
 */
#include "proxy/datapath.h"

static struct metric *m_first_ms;
static int64_t switched_at_ms;

static const struct metric_def served_metrics[] = {
	{ &m_first_ms, METRIC_GAUGE, "syncgate_switch_first_response_ms",
	  "Milliseconds from this sidecar applying the switch to the first response the destination "
	  "sent a client through it (-1 until then)." },
};

void proxy_switch_served_start(struct proxy_server *srv)
{
	METRIC_DEFS_GET(served_metrics);
	switched_at_ms = mirror_now_ms();
	srv->switch_first_served = false;
	metric_set(m_first_ms, -1);
}

void proxy_switch_served(struct proxy_server *srv)
{
	if (!srv->switched || srv->switch_first_served)
		return;
	METRIC_DEFS_GET(served_metrics);
	srv->switch_first_served = true;
	int64_t ms = mirror_now_ms() - switched_at_ms;
	metric_set(m_first_ms, (double)ms);
	LOG_I("switch_first_response", "mirror=%s after_ms=%lld reason=\"the destination answered a client "
	      "through this sidecar\"", srv->switch_mirror, (long long)ms);
}
