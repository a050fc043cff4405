/* errors.c — the list of configuration errors: collect, sort, print, free. */
#include "conf/conf.h"

#include <stdlib.h>
#include <string.h>

static char oom_msg[] = "out of memory";

void conf_errors_add(struct conf_errors *errs, int line, int col, const char *fmt, ...)
{
	if (!errs)
		return;
	va_list ap;
	va_start(ap, fmt);
	char *msg = NULL;
	int r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r < 0)
		msg = NULL;
	struct conf_error *v = realloc(errs->v, (errs->n + 1) * sizeof(*v));
	if (!v) {
		free(msg);
		return; /* keep what we have; the load fails anyway */
	}
	errs->v = v;
	/* Keep the list sorted by position (stable: equal positions keep
	 * insertion order) so output follows the file. */
	size_t i = errs->n;
	while (i > 0 && (v[i - 1].line > line || (v[i - 1].line == line && v[i - 1].col > col))) {
		v[i] = v[i - 1];
		i--;
	}
	v[i].line = line;
	v[i].col = col;
	v[i].message = msg ? msg : oom_msg;
	errs->n++;
}

void conf_errors_write(const struct conf_errors *errs, FILE *out)
{
	if (!errs)
		return;
	const char *path = errs->path ? errs->path : "config";
	for (size_t i = 0; i < errs->n; i++) {
		const struct conf_error *e = &errs->v[i];
		if (e->line > 0)
			fprintf(out, "%s:%d:%d: %s\n", path, e->line, e->col, e->message);
		else
			fprintf(out, "%s: %s\n", path, e->message);
	}
	fflush(out);
}

void conf_errors_print(const struct conf_errors *errs)
{
	conf_errors_write(errs, stderr);
}

void conf_errors_free(struct conf_errors *errs)
{
	if (!errs)
		return;
	for (size_t i = 0; i < errs->n; i++)
		if (errs->v[i].message != oom_msg)
			free(errs->v[i].message);
	free(errs->v);
	free(errs->path);
	errs->v = NULL;
	errs->n = 0;
	errs->path = NULL;
}
