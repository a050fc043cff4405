/*
 * ctl.h — syncgate-ctl's table output (ctl_print.c), used by syncgate-ctl.c.
 * Documents are the admin API's JSON answers (see syncgate-ctl.c's header);
 * borrowed, never kept. Exit codes as syncgate-ctl's.
 */
#ifndef SYNCGATE_CTL_H
#define SYNCGATE_CTL_H

#include <jansson.h>

/** GET /v1/mirrors as the DESIRED / EFFECTIVE / ... table, stall notes under each topic. */
void ctl_print_describe(const json_t *doc);
/** A mutating call's {"topics":[...]} as one line a topic; 1 if any was REJECTED, else 0. */
int ctl_print_results(const json_t *doc);
/** The exit code of a failover/verify document: 0 verified, 3 a cluster unreachable, else 1. */
int ctl_failover_exit(const json_t *doc);
/** A failover/verify document as its partition table, moves and verdict; its exit code. */
int ctl_print_failover(const json_t *doc);
/** The exit code of a switch document: 1 when a dry run would not switch, else 0. */
int ctl_switch_exit(const json_t *doc);
/** A switch document (plan or result) as text; its exit code. */
int ctl_print_switch(const json_t *doc);

#endif
