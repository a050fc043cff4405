/* buf.c — evbuffer bytes seen as codec segments, without a copy. Any file of
 * the proxy; loop thread. */
#include "proxy/datapath.h"

int proxy_buf_iov(struct evbuffer *buf, size_t off, size_t len,
		  struct codec_iov *iov, int max)
{
	struct evbuffer_ptr p;
	struct evbuffer_iovec vec[PROXY_MAX_IOV];
	if (max > PROXY_MAX_IOV)
		max = PROXY_MAX_IOV;
	if (evbuffer_ptr_set(buf, &p, off, EVBUFFER_PTR_SET) < 0)
		return -1;
	int n = evbuffer_peek(buf, (ev_ssize_t)len, &p, vec, max);
	if (n > max) { /* too fragmented: make the range contiguous */
		if (!evbuffer_pullup(buf, (ev_ssize_t)(off + len)))
			return -1;
		evbuffer_ptr_set(buf, &p, off, EVBUFFER_PTR_SET);
		n = evbuffer_peek(buf, (ev_ssize_t)len, &p, vec, max);
	}
	size_t left = len;
	for (int i = 0; i < n; i++) {
		iov[i].base = vec[i].iov_base;
		iov[i].len = vec[i].iov_len < left ? vec[i].iov_len : left;
		left -= iov[i].len;
	}
	return left == 0 ? n : -1;
}
