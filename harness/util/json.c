/*
 * json.c — see json.h.
 */
#include "json.h"

#include <math.h>

void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        const unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

void json_num(FILE *f, double x, int digits) {
    if (isfinite(x)) fprintf(f, "%.*g", digits, x);
    else fputs("null", f);
}
