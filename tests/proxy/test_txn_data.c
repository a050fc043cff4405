/*
 * tests/proxy/test_txn_data.c — proxy/txn_data.c, what a sidecar remembers
 * of transactions for the commit gate: the partitions of a held commit (for
 * its retry) and the last data offset per (producer, partition); the
 * partition lists the commit gate builds.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <string.h>

#include "proxy/datapath.h"

Test(txn_data, a_held_commits_partitions_are_remembered_until_forgotten)
{
	const struct codec_txn_partition parts[] = { { "orders", 0 }, { "payments", 3 } };
	size_t n = 99;
	cr_assert(eq(ptr, (void *)proxy_txn_remembered("tx-a", &n), NULL));
	cr_assert(eq(sz, n, 0));
	proxy_txn_remember("tx-a", parts, 2);
	const struct codec_txn_partition *m = proxy_txn_remembered("tx-a", &n);
	cr_assert(ne(ptr, (void *)m, NULL));
	cr_assert(eq(sz, n, 2));
	cr_assert_str_eq(m[0].topic, "orders");
	cr_assert(eq(i32, m[1].partition, 3));
	cr_assert(m[0].topic != parts[0].topic, "copied, not borrowed");
	proxy_txn_remember("tx-a", parts + 1, 1); /* remembered again: replaced */
	m = proxy_txn_remembered("tx-a", &n);
	cr_assert(eq(sz, n, 1));
	cr_assert_str_eq(m[0].topic, "payments");
	cr_assert(eq(ptr, (void *)proxy_txn_remembered("tx-b", &n), NULL));
	proxy_txn_forget("tx-a");
	cr_assert(eq(ptr, (void *)proxy_txn_remembered("tx-a", &n), NULL));
	proxy_txn_forget("tx-never"); /* nothing to forget: no effect */
}

Test(txn_data, the_oldest_commit_is_forgotten_first_when_full)
{
	const struct codec_txn_partition p = { "orders", 1 };
	char id[32];
	for (int i = 0; i < 300; i++) {
		snprintf(id, sizeof(id), "tx-%d", i);
		proxy_txn_remember(id, &p, 1);
	}
	size_t n;
	cr_assert(eq(ptr, (void *)proxy_txn_remembered("tx-0", &n), NULL), "the oldest went");
	cr_assert(ne(ptr, (void *)proxy_txn_remembered("tx-299", &n), NULL), "the newest stays");
	cr_assert(ne(ptr, (void *)proxy_txn_remembered("tx-100", &n), NULL), "256 are kept");
}

Test(txn_data, last_data_offset_per_producer_and_partition_only_grows)
{
	int64_t off = -7;
	cr_assert(not(proxy_txn_last_data(42, "orders", 0, &off)));
	cr_assert(eq(i64, off, -7), "untouched when unknown");
	proxy_txn_note_data(42, "orders", 0, 10);
	proxy_txn_note_data(42, "orders", 0, 14);
	proxy_txn_note_data(42, "orders", 0, 12); /* a late answer of an earlier batch */
	proxy_txn_note_data(43, "orders", 0, 100);
	proxy_txn_note_data(42, "orders", 1, 5);
	proxy_txn_note_data(-1, "orders", 0, 999); /* not a producer id: ignored */
	cr_assert(proxy_txn_last_data(42, "orders", 0, &off));
	cr_assert(eq(i64, off, 14));
	cr_assert(proxy_txn_last_data(43, "orders", 0, &off));
	cr_assert(eq(i64, off, 100));
	cr_assert(proxy_txn_last_data(42, "orders", 1, &off));
	cr_assert(eq(i64, off, 5));
	cr_assert(not(proxy_txn_last_data(42, "payments", 0, &off)));
}

Test(txn_data, a_partition_list_keeps_each_partition_once_grouped_by_topic)
{
	struct codec_txn_partition *v = NULL;
	size_t n = 0;
	cr_assert(proxy_txn_parts_add(&v, &n, "orders", 0));
	cr_assert(proxy_txn_parts_add(&v, &n, "payments", 1));
	cr_assert(proxy_txn_parts_add(&v, &n, "orders", 2));
	cr_assert(proxy_txn_parts_add(&v, &n, "orders", 0)); /* there already */
	cr_assert(eq(sz, n, 3));
	cr_assert_str_eq(v[0].topic, "orders");
	cr_assert_str_eq(v[1].topic, "orders", "a topic's partitions stay together (one ListOffsets topic)");
	cr_assert(eq(i32, v[1].partition, 2));
	cr_assert_str_eq(v[2].topic, "payments");
	proxy_txn_parts_free(v, n);
}
