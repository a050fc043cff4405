/*
 * tests/bench/scale_bed_sg.c — the scale bed's syncgate child process: its
 * YAML config, start and stop, and what the bed reads of it (CPU and RSS
 * from /proc, /metrics over its admin listener).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/bench/scale_bed.h"

int64_t bed_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

/* A port free right now on 127.0.0.1 (the kernel's pick; a race with other
 * processes is possible and shows as syncgate failing to listen). */
static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int port = -1;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static int connect_local(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct timeval tv = {10, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int write_config(const struct sg_spec *s, const struct sg_proc *p, const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "mode: sidecar\n"
		   "listen:\n  kafka: 127.0.0.1:%d\n"
		   "upstream:\n  broker: %s\n"
		   "advertise:\n  nodes: {1: \"127.0.0.1:%d\"}\n"
		   "gate:\n  max_hold_ms: 30000\n"
		   "mirrors:\n", p->port, s->source, p->port);
	for (int i = 0; i < s->mirrors; i++)
		fprintf(f, "  - name: d%d\n    bootstrap: %s\n    offsets: preserved\n    progress: %s\n"
			   "    sync_topics: [\"%s\"]\n", i + 1, s->dst[i], s->progress, BED_TOPIC);
	fprintf(f, "state:\n  topic: __syncgate_state\n  replication_factor: 1\n"
		   "admin:\n  listen: 127.0.0.1:%d\n"
		   "log:\n  level: info\n", p->admin_port);
	return fclose(f) == 0 ? 0 : -1;
}

int sg_start(const struct sg_spec *s, struct sg_proc *out, int timeout_ms)
{
	char cfg[4096], logp[4096];
	memset(out, 0, sizeof(*out));
	out->port = free_port();
	out->admin_port = free_port();
	snprintf(cfg, sizeof(cfg), "%s/syncgate.yaml", s->dir);
	snprintf(logp, sizeof(logp), "%s/syncgate.log", s->dir);
	if (out->port < 0 || out->admin_port < 0 || write_config(s, out, cfg) != 0) {
		fprintf(stderr, "scale_bed: cannot write %s: %s\n", cfg, strerror(errno));
		return -1;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 2);
			dup2(fd, 1);
			close(fd);
		}
		execl(s->binary, s->binary, "--config", cfg, (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", s->binary, strerror(errno));
		_exit(127);
	}
	out->pid = pid;
	int64_t end = bed_now_ns() + (int64_t)timeout_ms * 1000000;
	while (bed_now_ns() < end) {
		if (!sg_alive(out)) {
			fprintf(stderr, "scale_bed: syncgate exited at start; see %s\n", logp);
			return -1;
		}
		int a = connect_local(out->port), b = connect_local(out->admin_port);
		if (a >= 0)
			close(a);
		if (b >= 0)
			close(b);
		if (a >= 0 && b >= 0)
			return 0;
		sleep_ms(50);
	}
	fprintf(stderr, "scale_bed: syncgate not listening after %d ms; see %s\n", timeout_ms, logp);
	sg_stop(out);
	return -1;
}

bool sg_alive(struct sg_proc *p)
{
	if (p->pid <= 0)
		return false;
	int st;
	if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
		fprintf(stderr, "scale_bed: syncgate (pid %d) ended: %s %d\n", (int)p->pid,
			WIFSIGNALED(st) ? "signal" : "exit status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		p->pid = 0;
		return false;
	}
	return true;
}

int sg_stop(struct sg_proc *p)
{
	if (!sg_alive(p))
		return -1;
	int st = 0;
	kill(p->pid, SIGTERM);
	for (int i = 0; i < 200; i++) {
		if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
			p->pid = 0;
			return st;
		}
		sleep_ms(50);
	}
	kill(p->pid, SIGKILL);
	waitpid(p->pid, &st, 0);
	p->pid = 0;
	return st;
}

/* /proc/PID/NAME opened for reading, NULL when the process is gone. */
static FILE *proc_file(pid_t pid, const char *name)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	return fopen(path, "r");
}

double sg_cpu_s(pid_t pid)
{
	char buf[2048];
	FILE *f = proc_file(pid, "stat");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *q = strrchr(buf, ')'); /* the command name may hold spaces */
	if (!q)
		return -1;
	unsigned long long ut = 0, st = 0;
	/* after ") ": state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime(14) stime(15) */
	if (sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

long sg_rss_kib(pid_t pid)
{
	char line[256];
	FILE *f = proc_file(pid, "status");
	if (!f)
		return -1;
	long kib = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

char *sg_http_get(int admin_port, const char *path)
{
	int fd = connect_local(admin_port);
	if (fd < 0)
		return NULL;
	char req[512];
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
	if (write(fd, req, (size_t)n) != n) {
		close(fd);
		return NULL;
	}
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (!buf)
			break;
		if (len + 4096 > cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (!buf)
		return NULL;
	buf[len] = 0;
	char *body = strstr(buf, "\r\n\r\n");
	if (strncmp(buf, "HTTP/1.1 200", 12) != 0 || !body) {
		free(buf);
		return NULL;
	}
	memmove(buf, body + 4, len - (size_t)(body + 4 - buf) + 1);
	return buf;
}

/* Whether the label set `lb` (between the braces, NUL-terminated copy)
 * contains every ','-separated needle of `want`. */
static bool labels_match(const char *lb, const char *want)
{
	if (!want || !*want)
		return true;
	char tmp[512];
	snprintf(tmp, sizeof(tmp), "%s", want);
	for (char *save = NULL, *tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!strstr(lb, tok))
			return false;
	return true;
}

/* Calls fn for every sample line of family `name` + `suffix` whose labels
 * match: fn(labels, value, arg). */
static void each_sample(const char *text, const char *name, const char *suffix, const char *want,
			void (*fn)(const char *lb, double v, void *arg), void *arg)
{
	char full[256];
	snprintf(full, sizeof(full), "%s%s", name, suffix);
	size_t fl = strlen(full);
	for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (strncmp(line, full, fl) != 0 || (line[fl] != ' ' && line[fl] != '{'))
			continue;
		char lb[512] = "";
		const char *v = line + fl;
		if (*v == '{') {
			const char *close = strchr(v, '}');
			if (!close)
				continue;
			snprintf(lb, sizeof(lb), "%.*s", (int)(close - v - 1), v + 1);
			v = close + 1;
		}
		if (labels_match(lb, want))
			fn(lb, strtod(v, NULL), arg);
	}
}

static void add_value(const char *lb, double v, void *arg)
{
	*(double *)arg += v;
}

double sg_metric_sum(const char *text, const char *name, const char *labels)
{
	double s = 0;
	each_sample(text, name, "", labels, add_value, &s);
	return s;
}

static void count_sync(const char *lb, double v, void *arg)
{
	if (v == 1)
		(*(int *)arg)++;
}

int sg_sync_count(int admin_port)
{
	char *m = sg_http_get(admin_port, "/metrics");
	if (!m)
		return -1;
	int n = 0;
	each_sample(m, "syncgate_mirror_topic_effective_type", "", "topic=\"" BED_TOPIC "\"", count_sync, &n);
	free(m);
	return n;
}

static void add_bucket(const char *lb, double v, void *arg)
{
	struct sg_hist *h = arg;
	const char *le = strstr(lb, "le=\"");
	if (!le)
		return;
	double b = strncmp(le + 4, "+Inf", 4) == 0 ? 1e300 : strtod(le + 4, NULL);
	int i = 0;
	while (i < h->n && h->le[i] < b)
		i++;
	if (i < h->n && h->le[i] == b) {
		h->cum[i] += v;
		return;
	}
	if (h->n == SG_HIST_MAX)
		return;
	memmove(&h->le[i + 1], &h->le[i], (size_t)(h->n - i) * sizeof(double));
	memmove(&h->cum[i + 1], &h->cum[i], (size_t)(h->n - i) * sizeof(double));
	h->le[i] = b;
	h->cum[i] = v;
	h->n++;
}

void sg_hist_read(const char *text, const char *name, struct sg_hist *h)
{
	memset(h, 0, sizeof(*h));
	each_sample(text, name, "_bucket", NULL, add_bucket, h);
	each_sample(text, name, "_count", NULL, add_value, &h->count);
	each_sample(text, name, "_sum", NULL, add_value, &h->sum);
}

double sg_hist_quantile(const struct sg_hist *a, const struct sg_hist *b, double q)
{
	double total = b->count - a->count;
	if (total <= 0)
		return -1;
	for (int i = 0; i < b->n; i++) {
		double before = 0;
		for (int j = 0; j < a->n; j++)
			if (a->le[j] == b->le[i])
				before = a->cum[j];
		if (b->cum[i] - before >= q * total)
			return b->le[i];
	}
	return 1e300;
}
