/* conf-reference: print the configuration reference (docs/configuration.md). */
#include "conf/conf.h"

int main(void)
{
	conf_reference_write(stdout);
	return fflush(stdout) == 0 ? 0 : 1;
}
