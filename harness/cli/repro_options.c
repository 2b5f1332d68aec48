/*
 * repro_options.c — read a fuzz target's .options file into libFuzzer flags
 * (see repro_options.h).  Owns only the file format; which flags a run
 * gets on top (-max_total_time, -artifact_prefix...) is the caller's.
 */
#include "repro_options.h"

#include "input.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int valid_key(const char *k) {
    if (!*k) return 0;
    for (; *k; k++)
        if (!((*k >= 'a' && *k <= 'z') || *k == '_')) return 0;
    return 1;
}

/* dir of `path` including the slash ("fuzz/"), "" for a bare name. */
static size_t dir_len(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? (size_t)(slash - path) + 1 : 0;
}

static int add_flag(repro_flags *out, const char *path, int line, char *err, size_t errlen,
                    const char *key, const char *dir, size_t dlen, const char *val) {
    if (out->n >= REPRO_FLAGS_MAX) {
        snprintf(err, errlen, "%s:%d: more than %d flags", path, line, REPRO_FLAGS_MAX);
        return -1;
    }
    int w = snprintf(out->flag[out->n], REPRO_FLAG_LEN, "-%s=%.*s%s", key, (int)dlen, dir, val);
    if (w < 0 || w >= REPRO_FLAG_LEN) {
        snprintf(err, errlen, "%s:%d: flag -%s too long", path, line, key);
        return -1;
    }
    out->n++;
    return 0;
}

int repro_read_options(const char *path, repro_flags *out, char *err, size_t errlen) {
    out->n = 0;
    out->drives[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char buf[REPRO_FLAG_LEN];
    int line = 0, in_libfuzzer = 0, in_attnguard = 0, have_dict = 0, rc = 0;
    size_t dlen = dir_len(path);
    while (rc == 0 && fgets(buf, sizeof buf, f)) {
        line++;
        if (!strchr(buf, '\n') && !feof(f)) {
            snprintf(err, errlen, "%s:%d: line too long", path, line);
            rc = -1;
            break;
        }
        char *s = cli_trim(buf);
        if (!*s || *s == '#' || *s == ';') continue;
        if (*s == '[') {
            size_t n = strlen(s);
            if (s[n - 1] != ']') {
                snprintf(err, errlen, "%s:%d: unterminated section '%s'", path, line, s);
                rc = -1;
                break;
            }
            in_libfuzzer = strcmp(s, "[libfuzzer]") == 0;
            in_attnguard = strcmp(s, "[attnguard]") == 0;
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(err, errlen, "%s:%d: expected 'key = value', got '%s'", path, line, s);
            rc = -1;
            break;
        }
        *eq = '\0';
        char *key = cli_trim(s), *val = cli_trim(eq + 1);
        if (!valid_key(key) || !*val) {
            snprintf(err, errlen, "%s:%d: bad option '%s = %s' (key [a-z_]+, value not empty)",
                     path, line, key, val);
            rc = -1;
            break;
        }
        if (in_attnguard && strcmp(key, "drives") == 0) {
            if (strlen(val) >= sizeof out->drives) {
                snprintf(err, errlen, "%s:%d: drives '%s' too long", path, line, val);
                rc = -1;
                break;
            }
            memcpy(out->drives, val, strlen(val) + 1);
        }
        if (!in_libfuzzer) continue;
        /* a dict named in the file lives beside it, like the file itself */
        int is_dict = strcmp(key, "dict") == 0;
        have_dict |= is_dict;
        rc = add_flag(out, path, line, err, errlen, key, path,
                      is_dict && val[0] != '/' ? dlen : 0, val);
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        rc = -1;
    }
    fclose(f);
    if (rc != 0 || have_dict) return rc;

    /* <stem>.dict beside <stem>.options */
    const char *dot = strrchr(path, '.');
    size_t stem = dot && dot > path + dlen ? (size_t)(dot - path) : strlen(path);
    char dict[REPRO_FLAG_LEN];
    int w = snprintf(dict, sizeof dict, "%.*s.dict", (int)stem, path);
    if (w > 0 && w < (int)sizeof dict && access(dict, R_OK) == 0)
        rc = add_flag(out, path, line, err, errlen, "dict", "", 0, dict);
    return rc;
}

const char *repro_flag_value(const repro_flags *f, const char *key) {
    size_t k = strlen(key);
    for (int i = 0; i < f->n; i++)
        if (strncmp(f->flag[i] + 1, key, k) == 0 && f->flag[i][1 + k] == '=')
            return f->flag[i] + 2 + k;
    return NULL;
}

int cli_fuzz_flags(int argc, char **argv) {
    if (argc < 1 || strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help") == 0) {
        fputs("usage: attnguard fuzz-flags FILE.options...\n"
              "  print the libFuzzer flags of each fuzz target's .options file, one per line\n",
              argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    int rc = 0;
    for (int i = 0; i < argc; i++) {
        repro_flags fl;
        char err[512];
        if (repro_read_options(argv[i], &fl, err, sizeof err) != 0) {
            fprintf(stderr, "attnguard fuzz-flags: %s\n", err);
            rc = 1;
            continue;
        }
        for (int k = 0; k < fl.n; k++) puts(fl.flag[k]);
    }
    return rc;
}
