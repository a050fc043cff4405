/*
 * syncgate-ctl — the operator CLI, modelled on kafka-cluster-mirrors.sh.
 * It talks to a sidecar's admin API. Until the lifecycle verbs land it prints
 * its usage.
 *
 * Exit codes: 0 success, 2 bad usage.
 */
#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
	fprintf(out,
		"usage: syncgate-ctl [--admin HOST:PORT] [--token-file FILE] [--output table|json] VERB\n"
		"  --describe [--mirror M] [--topic P]\n"
		"  --add --topic P --mirror M [--sync]\n"
		"  --alter --topic P --mirror M --sync|--async\n"
		"  --release-sync --mirror M [--topics P]\n");
}

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("syncgate-ctl %s\n", SYNCGATE_VERSION);
		return 0;
	}
	usage(stderr);
	return 2;
}
