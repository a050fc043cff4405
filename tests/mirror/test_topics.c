/* tests/mirror/test_topics.c — destination topic names (mirror/topics.c). */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "mirror/mirror.h"

Test(mirror_topics, destination_topic_replaces_every_topic_placeholder)
{
	const struct { const char *pattern, *src, *want; } cases[] = {
		{"{topic}", "orders", "orders"},
		{NULL, "orders", "orders"},
		{"", "orders", "orders"},
		{"primary.{topic}", "orders", "primary.orders"},
		{"{topic}.mirror", "a", "a.mirror"},
		{"{topic}-{topic}", "x", "x-x"},
		{"fixed", "orders", "fixed"},
		{"{top}", "orders", "{top}"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *d = mirror_destination_topic(cases[i].pattern, cases[i].src);
		cr_assert_str_eq(d, cases[i].want, "pattern %s", cases[i].pattern ? cases[i].pattern : "NULL");
		free(d);
	}
}
