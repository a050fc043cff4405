/*
 * tls.h — TLS contexts and checks (proxy/tls.c), shared by the data path
 * (listen.tls, upstream.tls), the admin plane (admin.tls) and syncgate-ctl.
 * Depends only on OpenSSL and conf/conf.h.
 */
#ifndef SYNCGATE_PROXY_TLS_H
#define SYNCGATE_PROXY_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

#include "conf/conf.h"

/** Server context from `t` (cert, key, optional client CA: mTLS); errors name `section` ("listen.tls"). */
SSL_CTX *proxy_tls_server_ctx(const struct conf_tls *t, const char *section);
/** Client context from `t` (CA or the system store, optional client cert); errors name `section`. */
SSL_CTX *proxy_tls_client_ctx(const struct conf_tls *t, const char *section);
/**
 * SNI and the name the peer certificate must carry: an IP literal is checked
 * against the certificate's IP addresses and sent without SNI (RFC 6066).
 * 0, or -1. Any thread.
 */
int proxy_tls_client_name(SSL *ssl, const char *host, bool verify);
/**
 * The verified peer certificate of `ssl` (the listener's mTLS client): its
 * subject in RFC 2253 form into `subject` and its first common name into `cn`
 * (each NUL-terminated, truncated to its capacity; "" when absent). 0, or -1
 * when there is no verified certificate (both then ""). Loop thread.
 */
int proxy_tls_peer_subject(SSL *ssl, char *subject, size_t subject_cap, char *cn, size_t cn_cap);

#endif
