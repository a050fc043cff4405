/*
 * admin_tls.c — the admin listener's transport: with admin.tls,
 * every connection evhttp accepts is made here (proxy_admin_transport_bev) as an
 * OpenSSL server bufferevent (certificate and key, optional client CA for
 * mutual TLS; the context is swapped on reload, open connections keep
 * theirs). Handshake failures (plain HTTP to the HTTPS port, a missing or untrusted
 * client certificate) are logged as `admin_tls_error`, at most once a
 * second. Loop thread.
 *
 * admin_conns.c installs the factory (evhttp_set_bevcb) and counts the
 * connections for admin.max_connections.
 *
 * Note: a NULL from this factory does not drop the connection — evhttp
 * then makes a plain socket bufferevent itself (libevent 2.1.12,
 * evhttp_connection_base_bufferevent_new).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/bufferevent_ssl.h>
#include <event2/http.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "conf/conf.h"
#include "mirror/mirror.h"
#include "proxy/admin/admin.h"
#include "proxy/proxy.h"
#include "proxy/security.h"
#include "proxy/tls.h"

struct admin_transport {
	SSL_CTX *ctx;                 /* the admin.tls context new connections use */
};

static struct proxy_log_limit tls_log; /* handshake failures, process-wide */

bool proxy_host_is_loopback(const char *host)
{
	if (!host)
		return false;
	if (!strcmp(host, "localhost") || !strcmp(host, "::1"))
		return true;
	struct in_addr a;
	return inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

static void peer_of_fd(int fd, char *out, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;
	if (fd >= 0 && getpeername(fd, (struct sockaddr *)&ss, &len) == 0) {
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
			port = ntohs(in->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
			port = ntohs(in6->sin6_port);
		}
	}
	snprintf(out, n, "%s:%d", host, port);
}

/* A failed handshake: say why, with a hint for the usual mistakes. */
static void tls_info_cb(const SSL *ssl, int where, int ret)
{
	if (!(where & SSL_CB_EXIT) || ret > 0 || !SSL_in_init(ssl))
		return;
	unsigned long err = ERR_peek_last_error();
	if (!err)
		return; /* only waiting for more bytes */
	uint64_t swallowed = 0;
	if (!proxy_log_allow(&tls_log, mirror_now_ms(), &swallowed))
		return;
	char reason[256], peer[80];
	ERR_error_string_n(err, reason, sizeof(reason));
	peer_of_fd(SSL_get_fd(ssl), peer, sizeof(peer));
	const char *hint = "";
	if (ERR_GET_REASON(err) == SSL_R_HTTP_REQUEST)
		hint = " hint=\"plain HTTP sent to the HTTPS admin port: use https://\"";
	else if (ERR_GET_REASON(err) == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE)
		hint = " hint=\"admin.tls.client_ca is set: a client certificate is required\"";
	LOG_W("admin_tls_error", "peer=%s error=\"%s\"%s suppressed_since_last_line=%llu", peer, reason,
	      hint, (unsigned long long)swallowed);
}

static SSL_CTX *load_ctx(const struct conf *conf)
{
	if (!conf->admin_tls.enabled)
		return NULL;
	SSL_CTX *ctx = proxy_tls_server_ctx(&conf->admin_tls, "admin.tls");
	if (ctx)
		SSL_CTX_set_info_callback(ctx, tls_info_cb);
	return ctx;
}

struct bufferevent *proxy_admin_transport_bev(struct admin_transport *t, struct event_base *base)
{
	if (!t->ctx)
		return bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	SSL *ssl = SSL_new(t->ctx);
	struct bufferevent *bev = ssl ? bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
								       BEV_OPT_CLOSE_ON_FREE)
				      : NULL;
	if (!bev)
		SSL_free(ssl);
	return bev; /* NULL (out of memory): evhttp falls back to plain HTTP, see above */
}

struct admin_transport *proxy_admin_transport_new(struct event_base *base, struct evhttp *http,
						  const struct conf *conf)
{
	(void)base;
	struct admin_transport *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	if (conf->admin_tls.enabled) {
		if (!(t->ctx = load_ctx(conf))) {
			free(t);
			return NULL;
		}
	}
	return t;
}

int proxy_admin_transport_reconfigure(struct admin_transport *t, const struct conf *conf)
{
	if (!t->ctx)
		return 0; /* TLS on/off is a restart setting: only the files change here */
	SSL_CTX *ctx = load_ctx(conf);
	if (!ctx)
		return -1;
	SSL_CTX_free(t->ctx); /* open connections hold their own reference */
	t->ctx = ctx;
	return 0;
}

void proxy_admin_transport_free(struct admin_transport *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->ctx);
	free(t);
}
