/*
 * Who the client is, and how a held Produce that times out is answered to
 * it (config `gate.timeout_answers`). The client software name and
 * version come from its ApiVersions v3+ request (ClientSoftwareName/
 * ClientSoftwareVersion); a client that sends none on a connection
 * (ApiVersions v0–v2 or none at all: KafkaJS, kafka-python 2.x on its
 * produce connections) is known by the client id of its first request.
 * Loop thread.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/datapath.h"

/* Copy a string slice of a request into `dst` (truncated, NUL-terminated). */
static void copy_slice(const struct codec_iov *iov, int niov, struct codec_slice s, char *dst,
		       size_t n)
{
	dst[0] = 0;
	if (s.len <= 0)
		return;
	size_t len = (size_t)s.len < n - 1 ? (size_t)s.len : n - 1;
	struct codec_reader r;
	codec_reader_init(&r, iov, niov);
	codec_reader_seek(&r, s.off);
	codec_read_raw(&r, dst, len);
	dst[r.err ? 0 : len] = 0;
}

void proxy_client_note(struct proxy_conn *c, struct evbuffer *in, size_t len,
		       const struct codec_request_header *h, const struct codec_iov *iov, int niov)
{
	if (h->api_key == CODEC_API_API_VERSIONS && h->api_version >= 3) {
		struct codec_iov body[PROXY_MAX_IOV];
		struct codec_api_versions_request req;
		int nb = proxy_buf_iov(in, 4 + h->len, len - h->len, body, PROXY_MAX_IOV);
		if (nb >= 0 && codec_api_versions_request_decode(body, nb, h->api_version, &req) == CODEC_OK &&
		    req.client_software_name && *req.client_software_name) {
			snprintf(c->client_name, sizeof(c->client_name), "%s", req.client_software_name);
			snprintf(c->client_version, sizeof(c->client_version), "%s",
				 req.client_software_version ? req.client_software_version : "");
			c->client_named = true;
			LOG_D("client_software", "conn=%llu name=\"%s\" version=\"%s\"",
			      (unsigned long long)c->id, c->client_name, c->client_version);
		}
		codec_api_versions_request_free(&req);
		return;
	}
	if (!c->client_named && !c->client_name[0] && h->client_id.len > 0)
		copy_slice(iov, niov, h->client_id, c->client_name, sizeof(c->client_name));
}

/* One `NAME[/VERSION-PREFIX]=ANSWER` entry: whether it names this client. */
static bool entry_matches(const struct proxy_conn *c, const char *e, size_t n)
{
	const char *slash = memchr(e, '/', n);
	size_t nlen = slash ? (size_t)(slash - e) : n;
	size_t have = strlen(c->client_name);
	if (have < nlen || strncasecmp(c->client_name, e, nlen) != 0)
		return false;
	/* a software name matches whole; a client id also as "NAME-..."
	 * (kafka-python's default ids are "kafka-python-producer-N") */
	if (have != nlen && (c->client_named || c->client_name[nlen] != '-'))
		return false;
	if (!slash)
		return true;
	size_t vlen = n - nlen - 1;
	return c->client_named && strncmp(c->client_version, slash + 1, vlen) == 0;
}

int proxy_client_timeout_answer(const struct proxy_conn *c)
{
	const char *list = c->srv->conf->gate_timeout_answers;
	if (!list || !c->client_name[0])
		return PROXY_ANSWER_ERROR;
	for (const char *p = list; *p;) {
		while (*p == ',' || isspace((unsigned char)*p))
			p++;
		const char *end = p + strcspn(p, ",");
		const char *eq = memchr(p, '=', (size_t)(end - p));
		if (eq) {
			const char *name_end = eq;
			while (name_end > p && isspace((unsigned char)name_end[-1]))
				name_end--;
			if (entry_matches(c, p, (size_t)(name_end - p))) {
				const char *v = eq + 1;
				while (isspace((unsigned char)*v))
					v++;
				if (!strncmp(v, "hold", 4))
					return PROXY_ANSWER_HOLD;
				if (!strncmp(v, "error", 5))
					return PROXY_ANSWER_ERROR;
				return (int)strtol(v, NULL, 10); /* a code, checked at load */
			}
		}
		p = end;
	}
	return PROXY_ANSWER_ERROR;
}
