/*
 * TLS contexts (OpenSSL): the client-facing server context (certificate,
 * key, optional client CA for mTLS) and the upstream client context (CA,
 * optional client certificate; SNI and hostname verification are set per
 * connection in conn.c). Errors are logged with OpenSSL's reason. Loop thread.
 */
#include <openssl/err.h>

#include "proxy/proxy.h"

static void log_openssl(const char *event, const char *what, const char *path)
{
	char buf[256] = "unknown error";
	unsigned long err = ERR_get_error();
	if (err)
		ERR_error_string_n(err, buf, sizeof(buf));
	ERR_clear_error();
	LOG_E(event, "what=%s path=\"%s\" error=\"%s\"", what, path ? path : "", buf);
}

SSL_CTX *proxy_tls_server_ctx(const struct conf_tls *t)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx)
		return NULL;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	if (SSL_CTX_use_certificate_chain_file(ctx, t->cert) != 1) {
		log_openssl("tls_config_failed", "listen.tls.cert", t->cert);
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		log_openssl("tls_config_failed", "listen.tls.key", t->key);
		goto fail;
	}
	if (t->client_ca) {
		if (SSL_CTX_load_verify_locations(ctx, t->client_ca, NULL) != 1) {
			log_openssl("tls_config_failed", "listen.tls.client_ca", t->client_ca);
			goto fail;
		}
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	}
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

SSL_CTX *proxy_tls_client_ctx(const struct conf_tls *t)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx)
		return NULL;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	if (t->ca ? SSL_CTX_load_verify_locations(ctx, t->ca, NULL) != 1
		  : SSL_CTX_set_default_verify_paths(ctx) != 1) {
		log_openssl("tls_config_failed", "upstream.tls.ca", t->ca);
		goto fail;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (t->cert && (SSL_CTX_use_certificate_chain_file(ctx, t->cert) != 1 ||
			SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1)) {
		log_openssl("tls_config_failed", "upstream.tls.cert", t->cert);
		goto fail;
	}
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}
