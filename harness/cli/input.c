/*
 * input.c — reading what a user hands the CLI: a corpus, crash or .case
 * file as a case (text when it is a case text, else fuzz bytes, with the
 * fuzz_api prefix first for that target), what the path says about the
 * target and the mutant, and the small file helpers show, repro and
 * minimize share (see input.h).
 */
#include "input.h"

#include "../case/case_bytes.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REPRO_MAX_FILE   (1u << 20)   /* corpus files and case texts are tiny */

/* Read a whole file (at most REPRO_MAX_FILE bytes) into a NUL-terminated
 * buffer.  Returns the buffer (free it) or NULL with a message. */
char *cli_read_all(const char *path, size_t *len, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    /* a folder opens but does not read: say so, not "read error" */
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        snprintf(err, errlen, "%s: is a directory (give the files in it)", path);
        return NULL;
    }
    char *buf = malloc(REPRO_MAX_FILE + 1);
    if (!buf) {
        fclose(f);
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    size_t n = fread(buf, 1, REPRO_MAX_FILE + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n > REPRO_MAX_FILE) {
        free(buf);
        if (bad) snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
        else snprintf(err, errlen, "%s: file too large (more than %u bytes)", path, REPRO_MAX_FILE);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

int cli_write_all(const char *path, const void *data, size_t len, char *err, size_t errlen) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    size_t w = len ? fwrite(data, 1, len, f) : 0;
    int bad = (w != len) | ferror(f);
    bad |= fclose(f) != 0;
    if (bad) {
        snprintf(err, errlen, "%s: write error", path);
        return -1;
    }
    return 0;
}

int cli_ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

char *cli_trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

/* Truncating copy (never overruns, always terminates). */
void cli_str_copy(char *dst, size_t cap, const char *src) {
    size_t n = strlen(src);
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* out = a "/" b (b may be NULL: out = a); -1 if it does not fit. */
int cli_path_join(char *out, size_t cap, const char *a, const char *b) {
    size_t la = strlen(a), lb = b ? strlen(b) : 0;
    if (la + 1 + lb + 1 > cap) return -1;
    memcpy(out, a, la);
    if (b) {
        out[la] = '/';
        memcpy(out + la + 1, b, lb);
        out[la + 1 + lb] = '\0';
    } else {
        out[la] = '\0';
    }
    return 0;
}

int cli_file_executable(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int cli_valid_word(const char *s) {
    if (!s || !*s) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return 0;
    return 1;
}

/* From FILE's directories: the innermost `fuzz_*` one names the target, an
 * `*-inject-<bug>` one (build/fuzz-session-inject-<bug>/artifacts/...) the
 * mutant. */
void repro_guess_from_path(const char *path, char *target, size_t tcap, char *inject,
                            size_t icap) {
    const char *slash = strrchr(path, '/');
    if (!slash) return;
    size_t dlen = (size_t)(slash - path);
    const char *s = path;
    while (s < path + dlen) {
        const char *e = memchr(s, '/', (size_t)(path + dlen - s));
        if (!e) e = path + dlen;
        char comp[256];
        size_t n = (size_t)(e - s);
        if (n > 0 && n < sizeof comp) {
            memcpy(comp, s, n);
            comp[n] = '\0';
            if (strncmp(comp, "fuzz_", 5) == 0 && cli_valid_word(comp))
                cli_str_copy(target, tcap, comp);   /* innermost wins */
            const char *inj = strstr(comp, "-inject-");
            if (inj && cli_valid_word(inj + 8)) cli_str_copy(inject, icap, inj + 8);
        }
        s = e + 1;
    }
}

int repro_is_api_target(const char *target) { return target && strcmp(target, "fuzz_api") == 0; }

/* force_bytes: the file is known to be fuzz bytes (libFuzzer's output). */
int repro_load(const char *path, const char *target, int force_bytes, case_spec *out,
                     repro_input *info, char *errbuf, size_t errlen) {
    char err[512];
    size_t len = 0;
    if (errbuf && errlen) errbuf[0] = '\0';
    if (!path || !out || !info) {
        if (errbuf && errlen) snprintf(errbuf, errlen, "NULL argument");
        return -1;
    }
    char g_target[64] = "", g_inject[64] = "";
    if (!target) {
        repro_guess_from_path(path, g_target, sizeof g_target, g_inject, sizeof g_inject);
        target = g_target;
    }
    char *buf = cli_read_all(path, &len, err, sizeof err);
    if (!buf) {
        if (errbuf && errlen) cli_str_copy(errbuf, errlen, err);
        return -1;
    }
    memset(info, 0, sizeof *info);
    info->nbytes = len;
    /* Text only when it really is a case text: a byte string that happens
     * to be printable is a fuzz input.  An empty file is an empty text (an
     * error: "no keys") unless it is known to be fuzz bytes (--target, or a
     * fuzz_* directory in its path): the empty fuzz input is a valid case. */
    int empty_text = !force_bytes && len == 0 && !(target && target[0]);
    int named_case = !force_bytes && (cli_ends_with(path, ".case") || empty_text);
    int text_ok = !force_bytes && (len > 0 || empty_text) && memchr(buf, '\0', len) == NULL;
    case_spec c;
    char msg[256] = "";
    if (named_case || text_ok) {
        int rc = text_ok ? case_parse(buf, &c, msg, sizeof msg) : -1;
        if (rc == 0) {
            free(buf);
            *out = c;
            info->was_text = 1;
            return 0;
        }
        if (named_case) {
            free(buf);
            if (errbuf && errlen)
                snprintf(errbuf, errlen, "%.300s: %.200s", path, msg[0] ? msg : "not a text case");
            return -1;
        }
    }
    const uint8_t *data = (const uint8_t *)buf;
    if (repro_is_api_target(target)) {
        /* missing prefix bytes read as 0, as in the target */
        info->api = 1;
        for (size_t i = 0; i < REPRO_API_PREFIX_LEN && i < len; i++) info->api_prefix[i] = data[i];
        size_t skip = len < REPRO_API_PREFIX_LEN ? len : REPRO_API_PREFIX_LEN;
        data += skip;
        len -= skip;
    }
    case_decode(len ? data : NULL, len, &c);
    free(buf);
    *out = c;
    return 0;
}

int repro_load_any(const char *path, const char *target, case_spec *out, repro_input *info,
                   char *errbuf, size_t errlen) {
    return repro_load(path, target, 0, out, info, errbuf, errlen);
}

/* The comment line that says where a case came from ('#' lines are
 * comments in the text form, so the output still parses). */
void repro_print_origin(FILE *f, const char *path, const repro_input *in) {
    if (in->was_text) {
        fprintf(f, "# %s: case text\n", path);
        return;
    }
    fprintf(f, "# %s: %zu bytes, decoded as fuzz input\n", path, in->nbytes);
    if (in->api)
        fprintf(f, "# fuzz_api prefix %02x%02x%02x%02x: op %u, arg %u, n %u\n", in->api_prefix[0],
                in->api_prefix[1], in->api_prefix[2], in->api_prefix[3], in->api_prefix[0],
                in->api_prefix[1], in->api_prefix[2] | (unsigned)in->api_prefix[3] << 8);
}


void cli_print_tail(const char *path, int lines) {
    size_t n;
    char err[256];
    char *text = cli_read_all(path, &n, err, sizeof err);
    if (!text) return;
    const char *p = text + n;
    int seen = 0;
    while (p > text && seen <= lines) {
        p--;
        if (*p == '\n') seen++;
    }
    if (*p == '\n') p++;
    fputs(p, stderr);
    free(text);
}

void cli_print_file(const char *path) {
    size_t n;
    char err[256];
    char *text = cli_read_all(path, &n, err, sizeof err);
    if (!text) return;
    fwrite(text, 1, n, stdout);
    free(text);
}

/* libFuzzer -minimize_crash=1 on `input`; the result lands in `min_path`.
 * `asan` is the ASAN_OPTIONS addition that decides what "the same crash" is
 * (DEDUP_TOKEN frames).  Returns 0 when min_path was written. */
