/*
 * tests/bench/scale_bed_wire.c — the scale bed's own Kafka client: Produce
 * v3 (one RecordBatch v2 per partition, every partition of a send round in
 * one request, as the Java producer batches per broker) and ListOffsets v1,
 * on a blocking TCP connection with requests pipelined and answers read in
 * order by a thread of the caller's. librdkafka's producer is not used for
 * the load: it walks every partition of the topic each time it sends
 * (10,000+ partitions saturate it before syncgate).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/bench/scale_bed.h"

static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1; /* Castagnoli, reflected */
		crc_table[i] = c;
	}
}

static uint32_t crc32c(const uint8_t *p, size_t n)
{
	if (!crc_table[1])
		crc_init();
	uint32_t c = 0xFFFFFFFFu;
	while (n--)
		c = crc_table[(c ^ *p++) & 0xFF] ^ (c >> 8);
	return c ^ 0xFFFFFFFFu;
}

static bool grow(struct wire_buf *b, size_t more)
{
	if (b->len + more <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more)
		cap *= 2;
	uint8_t *d = realloc(b->data, cap);
	if (!d)
		return false;
	b->data = d;
	b->cap = cap;
	return true;
}

static void put(struct wire_buf *b, const void *p, size_t n)
{
	if (grow(b, n)) {
		memcpy(b->data + b->len, p, n);
		b->len += n;
	} else {
		b->oom = true;
	}
}

static void put8(struct wire_buf *b, uint8_t v) { put(b, &v, 1); }
static void put16(struct wire_buf *b, int16_t v) { uint16_t x = htons((uint16_t)v); put(b, &x, 2); }
static void put32(struct wire_buf *b, int32_t v) { uint32_t x = htonl((uint32_t)v); put(b, &x, 4); }
static void put64(struct wire_buf *b, int64_t v)
{
	put32(b, (int32_t)((uint64_t)v >> 32));
	put32(b, (int32_t)((uint64_t)v & 0xFFFFFFFFu));
}
static void putstr(struct wire_buf *b, const char *s)
{
	put16(b, (int16_t)strlen(s));
	put(b, s, strlen(s));
}
static void putvar(struct wire_buf *b, int64_t v)
{
	uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
	while (z >= 0x80) {
		put8(b, (uint8_t)(z | 0x80));
		z >>= 7;
	}
	put8(b, (uint8_t)z);
}
static void set32(struct wire_buf *b, size_t at, int32_t v)
{
	uint32_t x = htonl((uint32_t)v);
	if (!b->oom)
		memcpy(b->data + at, &x, 4);
}

/* The request header (size patched by finish()). */
static void header(struct wire_buf *b, int16_t api, int16_t version, int32_t corr)
{
	b->len = 0;
	b->oom = false;
	put32(b, 0);
	put16(b, api);
	put16(b, version);
	put32(b, corr);
	putstr(b, "scale-bed");
}

static void finish(struct wire_buf *b)
{
	set32(b, 0, (int32_t)(b->len - 4));
}

void wire_produce(struct wire_buf *b, int32_t corr, const char *topic, const struct wire_part *parts, int n,
		  int record_bytes, const char *value, int32_t timeout_ms)
{
	header(b, 0, 3, corr);
	put16(b, -1); /* transactional id: none */
	put16(b, -1); /* acks=all */
	put32(b, timeout_ms);
	put32(b, 1);
	putstr(b, topic);
	put32(b, n);
	int64_t now_ms = bed_now_ns() / 1000000; /* timestamps need not be wall time here */
	for (int i = 0; i < n; i++) {
		put32(b, parts[i].partition);
		size_t size_at = b->len;
		put32(b, 0);                        /* records size */
		size_t batch_at = b->len;
		put64(b, 0);                        /* base offset */
		put32(b, 0);                        /* batch length */
		put32(b, -1);                       /* partition leader epoch */
		put8(b, 2);                         /* magic */
		size_t crc_at = b->len;
		put32(b, 0);                        /* crc */
		put16(b, 0);                        /* attributes */
		put32(b, parts[i].count - 1);       /* last offset delta */
		put64(b, now_ms);
		put64(b, now_ms);
		put64(b, -1);                       /* producer id */
		put16(b, -1);                       /* producer epoch */
		put32(b, -1);                       /* base sequence */
		put32(b, parts[i].count);
		for (int32_t k = 0; k < parts[i].count; k++) {
			/* length = attributes(1) + ts delta(1) + offset delta + key(1) + value len + value + headers(1) */
			struct wire_buf r = {0};
			put8(&r, 0);
			putvar(&r, 0);
			putvar(&r, k);
			putvar(&r, -1);
			putvar(&r, record_bytes);
			put(&r, value, (size_t)record_bytes);
			putvar(&r, 0);
			putvar(b, (int64_t)r.len);
			put(b, r.data, r.len);
			b->oom |= r.oom;
			free(r.data);
		}
		set32(b, size_at, (int32_t)(b->len - batch_at));
		set32(b, batch_at + 8, (int32_t)(b->len - batch_at - 12));
		if (!b->oom)
			set32(b, crc_at, (int32_t)crc32c(b->data + crc_at + 4, b->len - crc_at - 4));
	}
	finish(b);
}

void wire_list_offsets(struct wire_buf *b, int32_t corr, const char *topic, const int32_t *parts, int n)
{
	header(b, 2, 1, corr);
	put32(b, -1); /* replica id: a client */
	put32(b, 1);
	putstr(b, topic);
	put32(b, n);
	for (int i = 0; i < n; i++) {
		put32(b, parts[i]);
		put64(b, -1); /* latest */
	}
	finish(b);
}

/* A bounds-checked reader over one response body. */
struct rd {
	const uint8_t *p, *end;
	bool bad;
};

static const uint8_t *take(struct rd *r, size_t n)
{
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = true;
		return NULL;
	}
	const uint8_t *q = r->p;
	r->p += n;
	return q;
}
static int16_t get16(struct rd *r) { const uint8_t *q = take(r, 2); return q ? (int16_t)(q[0] << 8 | q[1]) : 0; }
static int32_t get32(struct rd *r)
{
	const uint8_t *q = take(r, 4);
	return q ? (int32_t)((uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3]) : 0;
}
static int64_t get64(struct rd *r)
{
	uint64_t hi = (uint32_t)get32(r), lo = (uint32_t)get32(r);
	return (int64_t)(hi << 32 | lo);
}
static void skipstr(struct rd *r)
{
	int16_t n = get16(r);
	if (n > 0)
		take(r, (size_t)n);
}

int wire_parse(const uint8_t *body, size_t len, int16_t api, struct wire_result *out, int max)
{
	struct rd r = {body + 4, body + len, false}; /* after the correlation id */
	int n = 0;
	int32_t topics = get32(&r);
	for (int32_t t = 0; t < topics && !r.bad; t++) {
		skipstr(&r);
		int32_t np = get32(&r);
		for (int32_t i = 0; i < np && !r.bad; i++) {
			struct wire_result w = {.partition = get32(&r), .err = get16(&r)};
			if (api == 0) {
				w.offset = get64(&r); /* base offset */
				get64(&r);            /* log append time */
			} else {
				get64(&r);            /* timestamp */
				w.offset = get64(&r);
			}
			if (n < max)
				out[n++] = w;
		}
	}
	return r.bad ? -1 : n;
}

int wire_connect(const char *hostport)
{
	char host[256];
	const char *colon = strrchr(hostport, ':');
	if (!colon)
		return -1;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - hostport), hostport);
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai = NULL;
	if (getaddrinfo(host, colon + 1, &hints, &ai) != 0 || !ai)
		return -1;
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd >= 0) {
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	return fd;
}

int wire_write(int fd, const struct wire_buf *b)
{
	if (b->oom)
		return -1;
	size_t off = 0;
	while (off < b->len) {
		ssize_t w = write(fd, b->data + off, b->len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

static int read_full(int fd, uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int wire_read(int fd, struct wire_buf *b)
{
	uint8_t sz[4];
	if (read_full(fd, sz, 4) != 0)
		return -1;
	size_t n = (size_t)sz[0] << 24 | (size_t)sz[1] << 16 | (size_t)sz[2] << 8 | sz[3];
	b->len = 0;
	if (n < 4 || n > (256u << 20) || !grow(b, n))
		return -1;
	if (read_full(fd, b->data, n) != 0)
		return -1;
	b->len = n;
	return 0;
}

int32_t wire_corr(const struct wire_buf *b)
{
	struct rd r = {b->data, b->data + b->len, false};
	return get32(&r);
}
