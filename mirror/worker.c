/* worker.c — placeholder until the librdkafka worker lands (next commit). */
#include "mirror/internal.h"

struct mirror_worker *mirror_worker_start(const struct conf *conf, const struct conf_mirror *cm,
					  uint64_t link_id, struct mirror_bridge *b)
{
	LOG_W("mirror_worker_unavailable", "mirror=%s reason=\"progress worker not built yet\"", cm->name);
	return NULL;
}

void mirror_worker_stop(struct mirror_worker *w)
{
}

void mirror_worker_demand(struct mirror_worker *w, const char *topic, int32_t partition,
			  int64_t need, int64_t until_ms)
{
}
