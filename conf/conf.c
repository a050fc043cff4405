/*
 * conf.c — the loaded configuration's lifetime and its lookups: conf_free
 * (secret property values are wiped), which topics a mirror desires SYNC,
 * which clients and principals the consumer clamp exempts.
 */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "conf/loader.h"

static void free_props(struct conf_prop *props, size_t n)
{
	for (size_t j = 0; j < n; j++) {
		free(props[j].name);
		if (props[j].value) {
			explicit_bzero(props[j].value, strlen(props[j].value));
			free(props[j].value);
		}
	}
	free(props);
}

void conf_mirror_free_fields(struct conf_mirror *mi)
{
	free(mi->name);
	free(mi->bootstrap);
	free_props(mi->props, mi->nprops);
	free(mi->topic_name);
	free(mi->mm2_offset_syncs_topic);
	regex_t *res = mi->sync_topics_re;
	for (size_t j = 0; j < mi->nsync_topics; j++) {
		free(mi->sync_topics[j]);
		if (res)
			regfree(&res[j]);
	}
	free(mi->sync_topics);
	free(res);
	regex_t *gres = mi->sync_groups_re;
	for (size_t j = 0; j < mi->nsync_groups; j++) {
		free(mi->sync_groups[j]);
		if (gres)
			regfree(&gres[j]);
	}
	free(mi->sync_groups);
	free(gres);
}

static void free_tls(struct conf_tls *t)
{
	free(t->cert);
	free(t->key);
	free(t->client_ca);
	free(t->ca);
}

void conf_free(struct conf *c)
{
	if (!c)
		return;
	free(c->path);
	free(c->listen_kafka.host);
	free_tls(&c->listen_tls);
	free(c->upstream_broker.host);
	free_tls(&c->upstream_tls);
	free(c->advertise_template);
	for (size_t i = 0; i < c->nadvertise_nodes; i++)
		free(c->advertise_nodes[i].addr.host);
	free(c->advertise_nodes);
	free(c->switch_host);
	free_tls(&c->switch_tls);
	for (size_t i = 0; i < c->nmirrors; i++)
		conf_mirror_free_fields(&c->mirrors[i]);
	free(c->mirrors);
	regex_t *cres = c->consumers_exempt_re;
	for (size_t j = 0; j < c->nconsumers_exempt_client_ids; j++) {
		free(c->consumers_exempt_client_ids[j]);
		if (cres)
			regfree(&cres[j]);
	}
	free(c->consumers_exempt_client_ids);
	free(cres);
	regex_t *pres = c->consumers_exempt_principals_re;
	for (size_t j = 0; j < c->nconsumers_exempt_principals; j++) {
		free(c->consumers_exempt_principals[j]);
		if (pres)
			regfree(&pres[j]);
	}
	free(c->consumers_exempt_principals);
	free(pres);
	free(c->gate_timeout_answers);
	free(c->state_topic);
	free_props(c->source_props, c->nsource_props);
	free(c->admin_listen.host);
	free_tls(&c->admin_tls);
	free(c->admin_token_file);
	free(c);
}

bool conf_mirror_sync_topic(const struct conf_mirror *m, const char *topic)
{
	return m && conf_topic_regexes_match(m->sync_topics_re, m->nsync_topics, topic);
}

bool conf_mirror_sync_group(const struct conf_mirror *m, const char *group)
{
	return m && group && conf_topic_regexes_match(m->sync_groups_re, m->nsync_groups, group);
}

bool conf_consumer_exempt_principal(const struct conf *c, const char *subject, const char *name)
{
	regex_t *res = c ? c->consumers_exempt_principals_re : NULL;
	for (size_t i = 0; res && i < c->nconsumers_exempt_principals; i++)
		if ((subject && regexec(&res[i], subject, 0, NULL, 0) == 0) ||
		    (name && regexec(&res[i], name, 0, NULL, 0) == 0))
			return true;
	return false;
}

bool conf_consumer_exempt(const struct conf *c, const char *client_id)
{
	regex_t *res = c ? c->consumers_exempt_re : NULL;
	for (size_t i = 0; res && client_id && i < c->nconsumers_exempt_client_ids; i++)
		if (regexec(&res[i], client_id, 0, NULL, 0) == 0)
			return true;
	return false;
}
