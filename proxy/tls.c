/*
 * TLS contexts (OpenSSL): the client-facing server context (certificate,
 * key, optional client CA for mTLS) and the upstream client context (CA,
 * optional client certificate; SNI and hostname verification are set per
 * connection: proxy_tls_client_name). Errors are logged with OpenSSL's reason.
 * Loop thread; also linked into syncgate-ctl (its admin HTTPS client).
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "proxy/tls.h"

static void log_openssl(const char *event, const char *what, const char *path)
{
	char buf[256] = "unknown error";
	unsigned long err = ERR_get_error();
	if (err)
		ERR_error_string_n(err, buf, sizeof(buf));
	ERR_clear_error();
	LOG_E(event, "what=%s path=\"%s\" error=\"%s\"", what, path ? path : "", buf);
}

SSL_CTX *proxy_tls_server_ctx(const struct conf_tls *t, const char *section)
{
	char what[64];
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx)
		return NULL;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	if (SSL_CTX_use_certificate_chain_file(ctx, t->cert) != 1) {
		snprintf(what, sizeof(what), "%s.cert", section);
		log_openssl("tls_config_failed", what, t->cert);
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		snprintf(what, sizeof(what), "%s.key", section);
		log_openssl("tls_config_failed", what, t->key);
		goto fail;
	}
	if (t->client_ca) {
		if (SSL_CTX_load_verify_locations(ctx, t->client_ca, NULL) != 1) {
			snprintf(what, sizeof(what), "%s.client_ca", section);
			log_openssl("tls_config_failed", what, t->client_ca);
			goto fail;
		}
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	}
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

SSL_CTX *proxy_tls_client_ctx(const struct conf_tls *t, const char *section)
{
	char what[64];
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx)
		return NULL;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	if (t->ca ? SSL_CTX_load_verify_locations(ctx, t->ca, NULL) != 1
		  : SSL_CTX_set_default_verify_paths(ctx) != 1) {
		snprintf(what, sizeof(what), "%s.ca", section);
		log_openssl("tls_config_failed", what, t->ca);
		goto fail;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (t->cert && (SSL_CTX_use_certificate_chain_file(ctx, t->cert) != 1 ||
			SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1)) {
		snprintf(what, sizeof(what), "%s.cert", section);
		log_openssl("tls_config_failed", what, t->cert);
		goto fail;
	}
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

int proxy_tls_client_name(SSL *ssl, const char *host, bool verify)
{
	struct in6_addr a;
	bool ip = inet_pton(AF_INET, host, &a) == 1 || inet_pton(AF_INET6, host, &a) == 1;
	if (!ip && SSL_set_tlsext_host_name(ssl, host) != 1)
		return -1;
	if (!verify)
		return 0;
	if (ip)
		return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 ? 0 : -1;
	return SSL_set1_host(ssl, host) == 1 ? 0 : -1;
}

int proxy_tls_peer_subject(SSL *ssl, char *subject, size_t subject_cap, char *cn, size_t cn_cap)
{
	if (subject_cap)
		subject[0] = '\0';
	if (cn_cap)
		cn[0] = '\0';
	X509 *cert = ssl ? SSL_get1_peer_certificate(ssl) : NULL;
	if (!cert)
		return -1;
	if (SSL_get_verify_result(ssl) != X509_V_OK) {
		X509_free(cert);
		return -1;
	}
	X509_NAME *name = X509_get_subject_name(cert);
	BIO *b = BIO_new(BIO_s_mem());
	/* RFC 2253, as Kafka's default SSL principal (X500Principal.getName()) */
	if (b && X509_NAME_print_ex(b, name, 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB) >= 0 && subject_cap) {
		int n = BIO_read(b, subject, (int)(subject_cap - 1));
		subject[n > 0 ? n : 0] = '\0';
	}
	BIO_free(b);
	if (cn_cap && X509_NAME_get_text_by_NID(name, NID_commonName, cn, (int)cn_cap) < 0)
		cn[0] = '\0';
	X509_free(cert);
	return 0;
}
