/* LD_PRELOAD shim (benchmark diagnostics only, built by bench.py): set TCP_NODELAY on every
 * TCP socket the process accepts or connects, to measure what syncgate would gain from
 * setting it itself (proxy/ sets no TCP_NODELAY as of 2026-11-30). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

static void nodelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* fails harmlessly on non-TCP */
}

int accept(int fd, struct sockaddr *a, socklen_t *l)
{
	static int (*real)(int, struct sockaddr *, socklen_t *);
	if (!real) real = dlsym(RTLD_NEXT, "accept");
	int r = real(fd, a, l);
	if (r >= 0) nodelay(r);
	return r;
}

int accept4(int fd, struct sockaddr *a, socklen_t *l, int flags)
{
	static int (*real)(int, struct sockaddr *, socklen_t *, int);
	if (!real) real = dlsym(RTLD_NEXT, "accept4");
	int r = real(fd, a, l, flags);
	if (r >= 0) nodelay(r);
	return r;
}

int connect(int fd, const struct sockaddr *a, socklen_t l)
{
	static int (*real)(int, const struct sockaddr *, socklen_t);
	if (!real) real = dlsym(RTLD_NEXT, "connect");
	if (a && (a->sa_family == AF_INET || a->sa_family == AF_INET6)) nodelay(fd);
	return real(fd, a, l);
}
