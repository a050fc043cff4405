/*
 * proxy/versions.h — request versions newer than syncgate understands
 * (proxy/versions.c), judged by request.c before anything is read.
 */
#ifndef SYNCGATE_PROXY_VERSIONS_H
#define SYNCGATE_PROXY_VERSIONS_H

#include "proxy/datapath.h"

enum proxy_version_verdict {
	PROXY_VERSION_KNOWN,  /* understood, or an API syncgate forwards byte for byte */
	PROXY_VERSION_PASS,   /* too new: forwarded unchanged, nothing read from it */
	PROXY_VERSION_REFUSE, /* too new: the connection is closed, nothing forwarded */
};
/**
 * Judge request header `h`: a version above its API table row's decode_max
 * on an API syncgate decodes, rewrites or judges is counted
 * (syncgate_unknown_api_version_total{api}) and warned (rate-limited), and
 * refused where forwarding it could ack, show or name what syncgate must
 * gate, clamp or rewrite; passed where nothing it does depends on it (the
 * reason is in the log line). Loop thread.
 */
enum proxy_version_verdict proxy_request_version_check(struct proxy_conn *c,
							const struct codec_request_header *h);

#endif
