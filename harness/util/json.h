/*
 * json.h — the JSON the harness, the bench and the reports write
 * (attnguard classify's lines, bench.json and bench-peer.json,
 * report_grid's grid.json): the two values every writer needs spelled the
 * same, a string with its escapes and a number that may not be finite.
 * The documents' shapes stay with their writers.  The lowest room of the
 * harness: it includes no other (scripts/check_layers.py).
 */
#ifndef AG_JSON_H
#define AG_JSON_H

#include <stdio.h>

/* s as a JSON string literal: '"' and '\' escaped, control characters as
 * \u00XX, every other byte as it is (UTF-8 passes through); NULL as "". */
void json_str(FILE *f, const char *s);

/* x with `digits` significant digits (printf's %.*g), or null when x is
 * not finite (JSON has no NaN or infinity). */
void json_num(FILE *f, double x, int digits);

#endif /* AG_JSON_H */
