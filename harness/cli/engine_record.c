/*
 * engine_record.c — the engine record of a fuzz session's folder: made
 * from an engine, written, read back, found from a file below it (see
 * engine_record.h).
 */
#include "engine_record.h"

#include "../../include/attnguard/engine.h"
#include "input.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int engine_record_build_of(const char *path, char *out, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    /* FNV-1a, 64 bits: it names a build, it does not defend against one */
    uint64_t h = 0xcbf29ce484222325ull;
    unsigned char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < n; i++) h = (h ^ buf[i]) * 0x100000001b3ull;
    const int bad = ferror(f);
    fclose(f);
    if (bad) return -1;
    snprintf(out, cap, "fnv1a64:%016llx", (unsigned long long)h);
    return 0;
}

/* 1 when a loader's message says the object needs a sanitizer's or
 * libFuzzer's runtime (a symbol only the fuzz targets define). */
static int needs_fuzz_runtime(const char *loader_msg) {
    static const char *const runtime[] = {"undefined symbol: __sancov_",
                                          "undefined symbol: __sanitizer_",
                                          "undefined symbol: __asan_",
                                          "undefined symbol: __ubsan_"};
    for (size_t i = 0; i < sizeof runtime / sizeof runtime[0]; i++)
        if (strstr(loader_msg, runtime[i])) return 1;
    return 0;
}

/* The name as a folder-name word: [A-Za-z0-9._-], others as '_'. */
static void folder_word(char *dst, size_t cap, const char *s) {
    size_t k = 0;
    for (; *s && k + 1 < cap; s++) {
        const char ch = *s;
        const int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                       (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
        dst[k++] = ok ? ch : '_';
    }
    dst[k] = '\0';
    if (!k) snprintf(dst, cap, "engine");
}

int engine_record_make(const char *engine, const char *options, engine_record *r, char *err,
                       size_t errlen) {
    memset(r, 0, sizeof *r);
    if (!engine || !*engine) engine = getenv("ATTNGUARD_ENGINE");
    if (!options) options = getenv("ATTNGUARD_ENGINE_OPTIONS");
    if (!options) options = "";
    ag_msg msg;
    const ag_engine *e = ag_engine_find(engine, &msg);
    if (!e && !(engine && strchr(engine, '/') && needs_fuzz_runtime(msg.text))) {
        snprintf(err, errlen, "%s", msg.text);
        return -1;
    }
    if (strchr(options, '\n') || strlen(options) >= sizeof r->options) {
        snprintf(err, errlen, "engine options '%.60s': one line of at most %zu characters",
                 options, sizeof r->options - 1);
        return -1;
    }
    if (e) {
        snprintf(r->name, sizeof r->name, "%s", e->name ? e->name : "?");
    } else {
        /* An adapter built with the kit's fuzzing flags carries ASan and
         * libFuzzer's counters: it loads only into the fuzz targets, which
         * carry their runtimes, never into this CLI.  The session still
         * needs its record (repro follows it without loading the engine),
         * so the object goes by its file's name. */
        const char *base = strrchr(engine, '/') + 1;
        if (strncmp(base, "lib", 3) == 0) base += 3;
        snprintf(r->name, sizeof r->name, "%.*s", (int)strcspn(base, "."), base);
        fprintf(stderr, "attnguard engines: note: %s is built for the fuzz targets (%s); "
                        "recorded by its file's name, %s; check and show need a plain build "
                        "of it (--engine)\n", engine, msg.text, r->name);
    }
    snprintf(r->options, sizeof r->options, "%s", options);
    char word[64];
    folder_word(word, sizeof word, r->name);
    if (engine && strchr(engine, '/')) {
        /* an adapter object: by its absolute path, keyed by its bytes */
        if (!realpath(engine, r->engine) || strchr(r->engine, '\n')) {
            snprintf(err, errlen, "%s: %s", engine, strerror(errno ? errno : EINVAL));
            return -1;
        }
        if (engine_record_build_of(r->engine, r->build, sizeof r->build) != 0) {
            snprintf(err, errlen, "%s: cannot read it: %s", r->engine, strerror(errno));
            return -1;
        }
        snprintf(r->key, sizeof r->key, "%s-%.8s", word, r->build + strlen("fnv1a64:"));
    } else {
        const char *names[1];
        ag_engine_list(names, 1);
        snprintf(r->engine, sizeof r->engine, "%s", engine && *engine ? engine : names[0]);
        snprintf(r->build, sizeof r->build, "built-in");
        snprintf(r->key, sizeof r->key, "%s", word);
    }
    return 0;
}

void engine_record_print(FILE *f, const engine_record *r) {
    fprintf(f,
            "# The engine the fuzz inputs under this folder ran on (attnguard engines\n"
            "# --record).  attnguard repro, show and check follow it unless --engine\n"
            "# says otherwise (docs/fuzzing.md, \"Which engine\").\n"
            "name = %s\nengine = %s\noptions =%s%s\nbuild = %s\nkey = %s\n",
            r->name, r->engine, r->options[0] ? " " : "", r->options, r->build, r->key);
}

int engine_record_read(const char *path, engine_record *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    size_t len;
    char *text = cli_read_all(path, &len, err, errlen);
    if (!text) return -1;
    struct {
        const char *key;
        char *dst;
        size_t cap;
        int seen;
    } fields[] = {{"name", r->name, sizeof r->name, 0},
                  {"engine", r->engine, sizeof r->engine, 0},
                  {"options", r->options, sizeof r->options, 0},
                  {"build", r->build, sizeof r->build, 0},
                  {"key", r->key, sizeof r->key, 0}};
    enum { NF = sizeof fields / sizeof fields[0] };
    int line = 0, rc = 0;
    for (char *s = text, *nl; rc == 0 && s && *s; s = nl ? nl + 1 : NULL) {
        nl = strchr(s, '\n');
        if (nl) *nl = '\0';
        line++;
        char *t = cli_trim(s);
        if (!*t || *t == '#') continue;
        char *eq = strchr(t, '=');
        if (!eq) {
            snprintf(err, errlen, "%s line %d: expected 'key = value', got '%.60s'", path, line, t);
            rc = -1;
            break;
        }
        *eq = '\0';
        const char *k = cli_trim(t), *v = cli_trim(eq + 1);
        int f = 0;
        while (f < NF && strcmp(fields[f].key, k) != 0) f++;
        if (f == NF || fields[f].seen || strlen(v) >= fields[f].cap) {
            snprintf(err, errlen, "%s line %d: %s '%.40s'", path, line,
                     f == NF ? "unknown key" : fields[f].seen ? "a second" : "a value too long for",
                     k);
            rc = -1;
            break;
        }
        memcpy(fields[f].dst, v, strlen(v) + 1);
        fields[f].seen = 1;
    }
    free(text);
    for (int f = 0; rc == 0 && f < NF; f++)
        if (!fields[f].seen || (!fields[f].dst[0] && f != 2)) {
            snprintf(err, errlen, "%s: no %s", path, fields[f].key);
            rc = -1;
        }
    return rc;
}

int engine_record_find(const char *file, engine_record *r, char *where, size_t wcap, char *err,
                       size_t errlen) {
    char dir[PATH_MAX], abs[PATH_MAX];
    const char *slash = strrchr(file, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == file) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - file), file);
    if (!realpath(dir, abs)) return 0;   /* no folder, no record: the file says so itself */
    for (;;) {
        char path[PATH_MAX + sizeof ENGINE_RECORD_FILE + 1];
        snprintf(path, sizeof path, "%s%s%s", abs, strcmp(abs, "/") ? "/" : "",
                 ENGINE_RECORD_FILE);
        if (access(path, F_OK) == 0) {
            if (engine_record_read(path, r, err, errlen) != 0) return -1;
            snprintf(where, wcap, "%s", path);
            return 1;
        }
        char *up = strrchr(abs, '/');
        if (!up || !strcmp(abs, "/")) return 0;
        if (up == abs) up[1] = '\0';
        else *up = '\0';
    }
}
