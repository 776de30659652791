/*
 * config.h - sonde's configuration: YAML files read into JSON trees.
 *
 * Two files, the nearer first: the store's (.sonde/config.yaml, found from a
 * directory upwards) and the user's ($SONDE_CONFIG, else
 * $XDG_CONFIG_HOME/sonde/config.yaml, else ~/.config/sonde/config.yaml: an
 * XDG variable or HOME counts only where it holds an absolute path).
 * Merged, a mapping merges key by key, a scalar of the nearer file wins and
 * the lists of both are gathered (the nearer's items first, each item once).
 * Keys are addressed with dots: "execute.pre_run", "collectors.0.name".
 *
 * Plain YAML scalars become numbers, booleans and null as YAML's core schema
 * reads them; quoted ones stay strings. Written back, a file keeps its keys
 * and values, not its comments (docs/config.md).
 */
#ifndef SONDE_CONFIG_H
#define SONDE_CONFIG_H

#include <stdbool.h>
#include <jansson.h>
#include <sonde/strbuf.h>

enum sonde_config_scope {
	SONDE_CONFIG_MERGED, /* the store's over the user's (read only) */
	SONDE_CONFIG_LOCAL,  /* the store's file */
	SONDE_CONFIG_USER,   /* the user's file */
};

/*
 * The path of a scope's file (heap). LOCAL: -ENOENT when dir has no store
 * above it. MERGED: -EINVAL.
 */
int sonde_config__path(enum sonde_config_scope scope, const char *dir, char **path);

/*
 * sonde's directory of a kind (heap): $VAR/sonde where the XDG variable var
 * holds an absolute path, else $HOME/fallback/sonde where HOME does
 * ("XDG_CONFIG_HOME", ".config"; "XDG_CACHE_HOME", ".cache"). -ENOENT when
 * neither does, -ENOMEM.
 */
int sonde_config__xdg_dir(const char *var, const char *fallback, char **dir);

/*
 * Parse YAML text (one document; none: an empty mapping) into *out, a
 * mapping. -EINVAL with "NAME:LINE:COLUMN: problem" in err for text that is
 * not YAML, not a mapping at the top, or has a key that is not a scalar;
 * -E2BIG for a document that expands past 100000 nodes (aliases).
 */
int sonde_config__parse(const char *yaml, size_t len, const char *name, json_t **out,
			struct sonde_strbuf *err);
/* Read a file as sonde_config__parse() does; a missing file is an empty mapping. */
int sonde_config__read(const char *path, json_t **out, struct sonde_strbuf *err);
/* The configuration of a scope as seen from dir (MERGED: both files merged). */
int sonde_config__load(enum sonde_config_scope scope, const char *dir, json_t **out,
		       struct sonde_strbuf *err);
/* near over far as the merge above; a new reference. */
json_t *sonde_config__merge(json_t *near, json_t *far);

/* The value at a dotted key (borrowed), or NULL. */
json_t *sonde_config__get(json_t *cfg, const char *key);
/*
 * The keys of cfg that sonde does not read, one call each: perun is true for
 * a key of Perun's configuration that has no effect in sonde (vcs.url,
 * general.editor, format.status, ...), false for a key no one knows (a typo).
 * Returns the number of such keys.
 */
size_t sonde_config__unread_keys(json_t *cfg, void (*fn)(void *ctx, const char *key, bool perun),
				 void *ctx);
/*
 * Set the value at a dotted key (the reference to value is stolen), making
 * the mappings on the way. A number among the parts indexes a list (one past
 * its end appends). -EINVAL: an empty part, or a scalar on the way.
 */
int sonde_config__set(json_t *cfg, const char *key, json_t *value);
/*
 * A value written as YAML ("3", "true", "[a, b]", "text"), typed as in a
 * file; text that is not YAML ("%collector%-%cmd%") is that text, a string.
 */
int sonde_config__value(const char *text, json_t **out, struct sonde_strbuf *err);

/* cfg as YAML text (block style) into out. */
int sonde_config__dump(json_t *cfg, struct sonde_strbuf *out);
/* Write cfg to path as YAML, atomically (the directory is made when missing). */
int sonde_config__write(const char *path, json_t *cfg);
/* Write YAML text as it is (an edited file, comments kept), as sonde_config__write(). */
int sonde_config__write_text(const char *path, const char *text, size_t len);

#endif
