/*
 * engine_record.h — which engine a fuzz session's inputs ran on, written
 * into the session's folder (ENGINE_RECORD_FILE) by the fuzz launcher and
 * followed by `attnguard repro`, `show` and `check`: a crash or corpus file
 * under that folder reruns on the engine that produced it, with no
 * environment variable, and a different engine is said out loud.
 *
 * The record is a small text of `key = value` lines ('#' comments):
 *
 *     name    = the adapter's own name (ag_engine.name)
 *     engine  = what --engine takes to open it again: a built-in engine's
 *               name, or the adapter object's absolute path
 *     options = the engine's open() options ($ATTNGUARD_ENGINE_OPTIONS), may be empty
 *     build   = built-in, or fnv1a64:<16 hex digits> of the adapter object's bytes
 *     key     = the name a session folder is keyed by: the name, and for an
 *               adapter object the first 8 hex digits of its build
 *               (two builds of an engine at one path keep their corpora apart)
 *
 * Owns: that format and the lookup of a file's record (its folder or the
 * nearest one above it).  Which engine a command then runs on is
 * engine_pick.h's.
 */
#ifndef AG_ENGINE_RECORD_H
#define AG_ENGINE_RECORD_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

#define ENGINE_RECORD_FILE "attnguard-engine.txt"

typedef struct engine_record {
    char name[64];
    char engine[PATH_MAX];
    char options[256];
    char build[40];
    char key[96];
} engine_record;

/* The record of `engine` (a built-in name or an adapter path; NULL or "":
 * $ATTNGUARD_ENGINE, else the first built-in) with `options` (NULL:
 * $ATTNGUARD_ENGINE_OPTIONS).  Finds the adapter (an object is loaded, its
 * ABI version checked) but does not open it.  0, or -1 with a message. */
int engine_record_make(const char *engine, const char *options, engine_record *r, char *err,
                       size_t errlen);
/* Writes the record's text (with a comment saying what it is). */
void engine_record_print(FILE *f, const engine_record *r);
/* Reads a record file.  0, or -1 with a message naming the file and line. */
int engine_record_read(const char *path, engine_record *r, char *err, size_t errlen);
/* The record that governs `file`: ENGINE_RECORD_FILE in its folder or the
 * nearest folder above it.  1 found (its path in where), 0 none, -1 a
 * record that cannot be read (message in err). */
int engine_record_find(const char *file, engine_record *r, char *where, size_t wcap, char *err,
                       size_t errlen);
/* The build of an adapter object ("fnv1a64:<hex>"); -1 when unreadable. */
int engine_record_build_of(const char *path, char *out, size_t cap);

#endif /* AG_ENGINE_RECORD_H */
