/*
 * clamp.h — what clamp.c asks clamp_who.c: whether a client's requests are
 * clamped. Private to proxy/. Loop thread.
 */
#ifndef SYNCGATE_PROXY_CLAMP_H
#define SYNCGATE_PROXY_CLAMP_H

#include "proxy/datapath.h"

/** Whether a client's consumer requests are clamped. */
enum proxy_clamp_who {
	PROXY_CLAMP_OFF,      /* consumers.clamp: pass, or no mirror configured */
	PROXY_CLAMP_EXEMPT,   /* its principal or client id is exempt */
	PROXY_CLAMP_CLAMPED,
};

/**
 * Decide for the request framed with header `h` (`iov` from the header on):
 * PROXY_CLAMP_EXEMPT (counted) by client id writes the id to `exempt_id` (`cap`
 * bytes, NUL-terminated); a clamped client that looks like a mirror tool is
 * warned about once.
 */
enum proxy_clamp_who proxy_clamp_client(struct proxy_conn *c, const struct codec_iov *iov, int niov,
				       const struct codec_request_header *h, char *exempt_id, size_t cap);
/** An exempt client `id` fetches read_committed: warn once if an mm2 mirror is set up read_uncommitted. */
void proxy_clamp_note_read_committed_reader(struct proxy_conn *c, const char *id);

#endif
