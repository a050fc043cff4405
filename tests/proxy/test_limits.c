/* limits.c: the accept-rate token bucket and the log limiter. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "proxy/security.h"

Test(limits, rate_zero_is_unlimited)
{
	struct proxy_rate r = { 0 };
	for (int i = 0; i < 1000; i++)
		cr_assert(proxy_rate_take(&r, 0, 1000));
}

Test(limits, rate_allows_a_second_worth_then_refills)
{
	struct proxy_rate r = { 0 };
	int64_t t = 5000;
	for (int i = 0; i < 10; i++)
		cr_assert(proxy_rate_take(&r, 10, t), "attempt %d", i);
	cr_assert_not(proxy_rate_take(&r, 10, t));
	cr_assert_not(proxy_rate_take(&r, 10, t + 50)); /* half a token */
	cr_assert(proxy_rate_take(&r, 10, t + 100));    /* one token back */
	cr_assert_not(proxy_rate_take(&r, 10, t + 100));
	/* never more than a second's worth */
	for (int i = 0; i < 10; i++)
		cr_assert(proxy_rate_take(&r, 10, t + 60000));
	cr_assert_not(proxy_rate_take(&r, 10, t + 60000));
}

Test(limits, log_limiter_one_line_a_second_and_counts)
{
	struct proxy_log_limit l = { 0 };
	uint64_t n = 99;
	cr_assert(proxy_log_allow(&l, 1000, &n));
	cr_assert(eq(i64, (int64_t)(n), (int64_t)(0)));
	cr_assert_not(proxy_log_allow(&l, 1500, &n));
	cr_assert_not(proxy_log_allow(&l, 1999, &n));
	cr_assert(proxy_log_allow(&l, 2000, &n));
	cr_assert(eq(i64, (int64_t)(n), (int64_t)(2)));
}
