/*
 * route.c — how syncgate's own librdkafka clients on the source cluster
 * (state log, decider, source high watermarks, MM2 offset-syncs, probes)
 * reach a broker (scenario S16). They bootstrap from upstream.broker and
 * then dial the addresses the brokers advertise — which, in the Kubernetes
 * sidecar shape, nothing answers: the broker's client listener is bound to
 * loopback and advertised under the pod's name.
 *
 * Rule: a broker's advertised address is tried first. When it refuses (or is
 * unreachable, or its name does not resolve), the client dials what clients
 * are told for that broker — the syncgate that fronts it
 * (conf_advertised_addr: advertise.nodes / advertise.template) — and when that
 * is this syncgate's own listener, upstream.broker directly. The decision is
 * taken once per advertised address and logged once (`source_route`).
 * Node ids come from the source Metadata syncgate's clients fetch
 * (mirror_route_learn); a broker not learnt yet is refused and retried.
 *
 * Threads: the callbacks run on librdkafka's broker threads; the tables are
 * under one mutex. The conf pointer is the last one given to
 * mirror_source_conf (retired confs live until exit, proxy/cmd/syncgate.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "mirror/internal.h"

#define ROUTE_MAX 256      /* brokers remembered; beyond it, nothing is cached */
#define PROBE_MAX_MS 2000  /* longest wait for an advertised address to answer */

enum route_via { ROUTE_UNKNOWN, ROUTE_DIRECT, ROUTE_MAPPED };

struct route {
	char name[300];        /* advertised "host:port" (librdkafka's node name) */
	int32_t node_id;       /* -1 until learnt from Metadata */
	enum route_via via;
};

static pthread_mutex_t route_mu = PTHREAD_MUTEX_INITIALIZER;
static struct route routes[ROUTE_MAX];
static size_t nroutes;
static const struct conf *route_conf;

/* The entry for `name`, created when missing (NULL when the table is full). Locked. */
static struct route *route_get(const char *name)
{
	for (size_t i = 0; i < nroutes; i++)
		if (!strcmp(routes[i].name, name))
			return &routes[i];
	if (nroutes == ROUTE_MAX || strlen(name) >= sizeof(routes[0].name))
		return NULL;
	struct route *r = &routes[nroutes++];
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->node_id = -1;
	r->via = ROUTE_UNKNOWN;
	return r;
}

void mirror_route_set_conf(const struct conf *conf)
{
	pthread_mutex_lock(&route_mu);
	route_conf = conf;
	pthread_mutex_unlock(&route_mu);
}

void mirror_route_learn(const struct rd_kafka_metadata *md)
{
	pthread_mutex_lock(&route_mu);
	for (int i = 0; i < md->broker_cnt; i++) {
		char name[300];
		snprintf(name, sizeof(name), "%s:%d", md->brokers[i].host, md->brokers[i].port);
		struct route *r = route_get(name);
		if (r)
			r->node_id = md->brokers[i].id;
	}
	pthread_mutex_unlock(&route_mu);
}

/* Split librdkafka's node name "host:port" ("[v6]:port") into host and port. */
static int split_name(const char *name, char *host, size_t hsz, char *port, size_t psz)
{
	const char *colon = strrchr(name, ':');
	if (!colon || !colon[1])
		return -1;
	const char *h = name, *he = colon;
	if (name[0] == '[' && colon > name && colon[-1] == ']') {
		h = name + 1;
		he = colon - 1;
	}
	if ((size_t)(he - h) >= hsz || strlen(colon + 1) >= psz)
		return -1;
	memcpy(host, h, (size_t)(he - h));
	host[he - h] = 0;
	snprintf(port, psz, "%s", colon + 1);
	return 0;
}

static bool is_wildcard(const char *host)
{
	return !host || !*host || !strcmp(host, "0.0.0.0") || !strcmp(host, "::");
}

/* Whether `sa` is an address of this host (it can be bound). */
static bool addr_is_local(const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr_storage ss;
	if (len > sizeof(ss))
		return false;
	memcpy(&ss, sa, len);
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = 0;
	else if (ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
	int s = socket(ss.ss_family, SOCK_STREAM, 0);
	bool ok = s >= 0 && bind(s, (struct sockaddr *)&ss, len) == 0;
	if (s >= 0)
		close(s);
	return ok;
}

/*
 * Where to dial instead of the advertised `name`: the syncgate fronting that
 * node, or upstream.broker when that is us. Returns 0 with host/port filled,
 * -1 when the node id is not known yet. Not locked (conf is immutable).
 */
static int route_target(const struct conf *cf, const char *name, int32_t node_id,
			char *host, size_t hsz, int *port)
{
	char adv_host[256], adv_port[16];
	if (node_id < 0 || split_name(name, adv_host, sizeof(adv_host), adv_port, sizeof(adv_port)))
		return -1;
	*port = conf_advertised_addr(cf, node_id, adv_host, host, hsz);
	if (*port < 0)
		return -1;
	bool self = false;
	if (*port == cf->listen_kafka.port) {
		if (cf->listen_kafka.host && !strcmp(host, cf->listen_kafka.host)) {
			self = true;
		} else if (is_wildcard(cf->listen_kafka.host)) {
			struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
			if (getaddrinfo(host, NULL, &hints, &ai) == 0 && ai)
				self = addr_is_local(ai->ai_addr, ai->ai_addrlen);
			if (ai)
				freeaddrinfo(ai);
		}
	}
	if (self) {
		snprintf(host, hsz, "%s", cf->upstream_broker.host);
		*port = cf->upstream_broker.port;
	}
	return 0;
}

/* Whether `name` is upstream.broker itself (the bootstrap). */
static bool is_bootstrap(const struct conf *cf, const char *name)
{
	char buf[300];
	return !strcmp(conf_addr_format(&cf->upstream_broker, buf, sizeof(buf)), name);
}

/*
 * The mapped destination of advertised `name`, resolved, or an errno.
 * `*res` is freed by the caller (freeaddrinfo).
 */
static int route_resolve_mapped(const char *name, const char *why, struct addrinfo **res,
				const struct addrinfo *hints)
{
	pthread_mutex_lock(&route_mu);
	const struct conf *cf = route_conf;
	struct route *r = route_get(name);
	int32_t node_id = r ? r->node_id : -1;
	bool first = r && r->via != ROUTE_MAPPED;
	if (r)
		r->via = ROUTE_MAPPED;
	pthread_mutex_unlock(&route_mu);

	char host[256], port[16];
	int p;
	if (!cf || route_target(cf, name, node_id, host, sizeof(host), &p) < 0) {
		LOG_W("source_route_unknown", "broker=%s reason=\"%s; node id not learnt yet, "
		      "retrying\"", name, why);
		return ECONNREFUSED;
	}
	snprintf(port, sizeof(port), "%d", p);
	if (first)
		LOG_I("source_route", "broker=%s node=%d reason=\"%s\" via=%s:%s", name, node_id, why,
		      host, port);
	return getaddrinfo(host, port, hints, res) == 0 ? 0 : EHOSTUNREACH;
}

/*
 * Connect `fd` to `sa` and wait up to PROBE_MAX_MS for the outcome: 0
 * connected, EINPROGRESS still pending, else the connect error.
 */
static int probe_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	if (connect(fd, sa, len) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return errno;
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int n = poll(&p, 1, PROBE_MAX_MS);
	if (n == 0)
		return EINPROGRESS;
	int err = 0;
	socklen_t elen = sizeof(err);
	if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
		return errno;
	return err;
}

/* Replace `fd` with a fresh non-blocking socket of `family` (a failed connect
 * cannot be retried portably on the same socket). */
static int fresh_socket(int fd, int family)
{
	int s = socket(family, SOCK_STREAM, 0);
	if (s < 0)
		return errno;
	int rc = dup2(s, fd) < 0 ? errno : 0;
	close(s);
	if (!rc && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
		rc = errno;
	return rc;
}

static int route_connect_cb(int fd, const struct sockaddr *sa, int salen, const char *name,
			    void *opaque)
{
	(void)opaque; /* the handles' opaque belongs to their owners */
	pthread_mutex_lock(&route_mu);
	const struct conf *cf = route_conf;
	struct route *r = cf && !is_bootstrap(cf, name) ? route_get(name) : NULL;
	enum route_via via = r ? r->via : ROUTE_DIRECT;
	pthread_mutex_unlock(&route_mu);

	if (via == ROUTE_DIRECT)
		return connect(fd, sa, (socklen_t)salen) == 0 || errno == EINPROGRESS ? 0 : errno;
	if (via == ROUTE_UNKNOWN) {
		int rc = probe_connect(fd, sa, (socklen_t)salen);
		if (rc == 0) {
			pthread_mutex_lock(&route_mu);
			r->via = ROUTE_DIRECT;
			pthread_mutex_unlock(&route_mu);
		}
		if (rc == 0 || rc == EINPROGRESS)
			return 0; /* slow, not refused: librdkafka's own timeout decides */
		if (rc != ECONNREFUSED && rc != EHOSTUNREACH && rc != ENETUNREACH &&
		    rc != EADDRNOTAVAIL)
			return rc;
	}
	struct addrinfo hints = { .ai_family = sa->sa_family, .ai_socktype = SOCK_STREAM }, *ai = NULL;
	int rc = route_resolve_mapped(name, "advertised address refused the connection", &ai,
				      &hints);
	if (!rc)
		rc = fresh_socket(fd, sa->sa_family);
	if (!rc && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS)
		rc = errno;
	if (ai)
		freeaddrinfo(ai);
	return rc;
}

static int route_resolve_cb(const char *node, const char *service, const struct addrinfo *hints,
			    struct addrinfo **res, void *opaque)
{
	(void)opaque;
	if (!node && !service) {
		freeaddrinfo(*res);
		return 0;
	}
	int rc = getaddrinfo(node, service, hints, res);
	if (rc != EAI_NONAME && rc != EAI_AGAIN && rc != EAI_FAIL)
		return rc;
	char name[300];
	snprintf(name, sizeof(name), strchr(node, ':') ? "[%s]:%s" : "%s:%s", node, service);
	pthread_mutex_lock(&route_mu);
	bool boot = !route_conf || is_bootstrap(route_conf, name);
	pthread_mutex_unlock(&route_mu);
	if (boot)
		return rc;
	return route_resolve_mapped(name, "advertised host does not resolve", res, hints) ? rc : 0;
}

void mirror_route_install(struct rd_kafka_conf_s *c)
{
	rd_kafka_conf_set_connect_cb(c, route_connect_cb);
	rd_kafka_conf_set_resolve_cb(c, route_resolve_cb);
}
