/* proxy/admin/admin_tls.c: which admin.listen hosts are loopback (the
 * admin_listen_insecure warning is logged for any other over plain HTTP). */
#include <criterion/criterion.h>

#include "proxy/admin/admin.h"

Test(admin, loopback_hosts)
{
	cr_assert(proxy_host_is_loopback("127.0.0.1"));
	cr_assert(proxy_host_is_loopback("127.1.2.3"));
	cr_assert(proxy_host_is_loopback("::1"));
	cr_assert(proxy_host_is_loopback("localhost"));
	cr_assert_not(proxy_host_is_loopback("0.0.0.0"));
	cr_assert_not(proxy_host_is_loopback("10.0.0.1"));
	cr_assert_not(proxy_host_is_loopback("::"));
	cr_assert_not(proxy_host_is_loopback(NULL));
}
