/* reference.c — docs/configuration.md, generated from the settings table. */
#include "conf/conf.h"

#include <inttypes.h>
#include <string.h>

static void cell(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputs("\\|", out);
		else if (*s == '\n')
			fputc(' ', out);
		else
			fputc(*s, out);
	}
}

static void type_cell(FILE *out, const struct conf_setting *s)
{
	switch (s->type) {
	case CONF_T_STRING:
		fputs("string", out);
		break;
	case CONF_T_INT:
	case CONF_T_INT16:
	case CONF_T_INT64:
		fprintf(out, "integer %" PRId64 "..%" PRId64, s->min, s->max);
		break;
	case CONF_T_BOOL:
		fputs("boolean", out);
		break;
	case CONF_T_ENUM:
		for (int i = 0; s->names[i]; i++)
			fprintf(out, "%s`%s`", i ? " \\| " : "", s->names[i]);
		break;
	case CONF_T_ADDR:
		fputs((s->flags & CONF_F_PORT0) ? "host:port (port 0 allowed)" : "host:port", out);
		break;
	case CONF_T_REGEXES:
		fputs("list of regexes", out);
		break;
	case CONF_T_PROPS:
		fputs("map of strings", out);
		break;
	case CONF_T_NODES:
		fputs("map of node id → host:port", out);
		break;
	case CONF_T_LIST:
		fputs("list of mappings", out);
		break;
	case CONF_T_SECTION:
		fputs("mapping", out);
		break;
	case CONF_T_COUNT:
		break;
	}
}

static const char intro[] =
	"# syncgate configuration reference\n"
	"\n"
	"<!-- Generated from the settings table in conf/settings.c by conf_reference_write()\n"
	"     (conf/reference.c). Do not edit by hand: change the table, then run\n"
	"     `build/tests/conf/conf-reference > docs/configuration.md`\n"
	"     (or `syncgate --print-config-reference`). A unit test fails when this\n"
	"     file and the table disagree. -->\n"
	"\n"
	"syncgate reads one YAML file (`syncgate --config FILE`). Keys are nested\n"
	"mappings; below, `gate.max_hold_ms` means key `max_hold_ms` inside `gate:`,\n"
	"and `mirrors[].name` means key `name` in each item of the `mirrors:` list.\n"
	"\n"
	"A minimal file:\n"
	"\n"
	"```yaml\n"
	"listen:\n"
	"  kafka: 0.0.0.0:19092\n"
	"upstream:\n"
	"  broker: 127.0.0.1:9092\n"
	"mirrors:\n"
	"  - name: dr-east\n"
	"    bootstrap: dr-east-1:9092,dr-east-2:9092\n"
	"    sync_topics: [\"orders.*\"]\n"
	"```\n"
	"\n"
	"## Errors\n"
	"\n"
	"Every problem is reported as `file:line:col: message` (line and column\n"
	"1-based), all of them at once, and syncgate exits with status 2 without\n"
	"starting. Unknown keys, duplicate keys, wrong types, out-of-range numbers,\n"
	"unknown enum values, missing required keys, duplicate mirror names, invalid\n"
	"regular expressions, unreadable files (TLS files, token file, secrets) and\n"
	"YAML syntax errors are all errors. Integers must be plain (unquoted);\n"
	"booleans are `true` or `false`.\n"
	"\n"
	"## Secrets\n"
	"\n"
	"Values of `mirrors[].properties` may contain `${file:/path}` (the file's\n"
	"content, one trailing newline removed) or `${env:NAME}` (an environment\n"
	"variable). They are resolved when the file is loaded (and again on each\n"
	"reload); a missing file or unset variable is an error. Resolved values never\n"
	"appear in logs or error messages.\n"
	"\n"
	"## Reload\n"
	"\n"
	"On SIGHUP syncgate re-reads the file. Settings marked *live* below take\n"
	"effect without dropping connections; a change to a *restart* setting is\n"
	"logged and ignored until the next restart. An invalid file is rejected\n"
	"with its errors logged, and the running configuration stays in force.\n";

void conf_reference_write(FILE *out)
{
	fputs(intro, out);
	for (size_t i = 0; i < conf_nsettings; i++) {
		const struct conf_setting *s = &conf_settings[i];
		bool top = !strchr(s->path, '.') && strcmp(s->path, "mirrors[]") != 0;
		if (top) {
			/* a new top-level section: heading, its doc, the table head */
			fprintf(out, "\n## `%s`\n\n", s->path);
			if (s->type == CONF_T_SECTION || s->type == CONF_T_LIST) {
				fprintf(out, "%s%s\n\n", s->doc,
					(s->flags & CONF_F_REQUIRED) ? " Required." : "");
			}
			fputs("| Key | Type | Default | Reload | Description |\n", out);
			fputs("|---|---|---|---|---|\n", out);
			if (s->type == CONF_T_SECTION)
				continue;
		}
		fprintf(out, "| `%s` | ", s->path);
		type_cell(out, s);
		fputs(" | ", out);
		if (s->flags & CONF_F_REQUIRED)
			fputs("**required**", out);
		else if (s->def)
			fprintf(out, "`%s`", s->def);
		else
			fputs("—", out);
		if (s->type == CONF_T_SECTION && s->offset == CONF_F_NOOFFSET)
			fputs(" | — | ", out); /* a grouping only: its keys say */
		else
			fprintf(out, " | %s | ", (s->flags & CONF_F_LIVE) ? "live" : "restart");
		if (top && s->type == CONF_T_LIST)
			fputs("See the keys below.", out);
		else
			cell(out, s->doc);
		fputs(" |\n", out);
	}
}
