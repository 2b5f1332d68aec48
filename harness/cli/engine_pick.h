/*
 * engine_pick.h — the engine `attnguard repro`, `show` and `check` run on,
 * chosen the same way by all three: --engine first, then the engine
 * recorded for the files (engine_record.h), then $ATTNGUARD_ENGINE, then
 * the first built-in engine; and every disagreement between them said out
 * loud, never settled in silence.
 */
#ifndef AG_ENGINE_PICK_H
#define AG_ENGINE_PICK_H

#include "engine_record.h"

typedef enum engine_source {
    ENGINE_FROM_FLAG,      /* --engine */
    ENGINE_FROM_RECORD,    /* the files' record */
    ENGINE_FROM_ENV,       /* $ATTNGUARD_ENGINE */
    ENGINE_FROM_DEFAULT    /* the first built-in engine */
} engine_source;

typedef struct engine_pick {
    char engine[PATH_MAX];     /* what to open: a built-in name or an adapter path */
    char options[256];         /* its open() options ("" none) */
    int have_options;          /* options given (record or $ATTNGUARD_ENGINE_OPTIONS) */
    char name[64];             /* its name, as said to the user */
    engine_source source;
    char record[PATH_MAX];     /* ENGINE_FROM_RECORD: the record followed */
} engine_pick;

/* Chooses the engine for `files` (n of them; may be 0) the way repro, show
 * and check do: `flag` (--engine's value, or NULL), else the record the
 * files share, else $ATTNGUARD_ENGINE, else the first built-in.  Every
 * disagreement is said on `say`, each line starting with `prefix`: a file
 * recorded on another engine than --engine's, $ATTNGUARD_ENGINE set to
 * another engine than the record's, an adapter object changed since its
 * record.  Files recorded on different engines, without --engine, are an
 * error, and so is a recorded adapter object that is gone.  0, or -1 with
 * a message. */
int engine_pick_for(const char *flag, char *const *files, int n, FILE *say, const char *prefix,
                    engine_pick *p, char *err, size_t errlen);
/* "ggml (recorded in build/fuzz-session-engine-ggml/attnguard-engine.txt)",
 * "attnguard (--engine)", "... ($ATTNGUARD_ENGINE)", "... (the default)". */
void engine_pick_describe(const engine_pick *p, char *buf, size_t cap);

#endif /* AG_ENGINE_PICK_H */
