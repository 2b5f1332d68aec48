/*
 * fz_tally.c — the contract targets' counted messages (fz_tally.h).
 */
#include "fz_tally.h"

#include <stdio.h>
#include <string.h>

/* Adds one to key k, or enters it while there is room. */
static void count(fz_tally *t, const char *k) {
    for (int i = 0; i < t->used; i++)
        if (!strcmp(t->key[i], k)) {
            t->n[i]++;
            return;
        }
    if (t->used < FZ_TALLY_LINES)
        snprintf(t->key[t->used], sizeof t->key[0], "%s", k), t->n[t->used++] = 1;
}

void fz_tally_folded(fz_tally *t, const char *text) {
    /* 112: the width ORT's lines have always been cut to (one screen
     * line with the count in front) */
    char k[112];
    size_t j = 0;
    for (size_t i = 0; text[i] && j + 1 < sizeof k; i++)
        if (!(text[i] >= '0' && text[i] <= '9') || j == 0 || k[j - 1] != '#')
            k[j++] = text[i] >= '0' && text[i] <= '9' ? '#' : text[i] == '\n' ? ' ' : text[i];
    k[j] = '\0';
    count(t, k);
}

void fz_tally_exact(fz_tally *t, const char *text) {
    char k[FZ_TALLY_KEY];
    snprintf(k, sizeof k, "%s", text);
    count(t, k);
}

void fz_tally_print(const char *title, const fz_tally *t) {
    if (title && t->used) fprintf(stderr, "  %s:\n", title);
    for (int i = 0; i < t->used; i++) fprintf(stderr, "  %8lu x %s\n", t->n[i], t->key[i]);
}
