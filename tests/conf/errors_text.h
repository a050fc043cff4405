/* tests/conf/errors_text.h — the errors of a failed load as the user sees them. */
#ifndef SYNCGATE_TESTS_CONF_ERRORS_TEXT_H
#define SYNCGATE_TESTS_CONF_ERRORS_TEXT_H

#include <stdio.h>

#include "conf/conf.h"

/* Errors as printed by conf_errors_write(), in a malloc'd string (free it). */
static inline char *errors_text(const struct conf_errors *e)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	conf_errors_write(e, f);
	fclose(f);
	return buf;
}

#endif
