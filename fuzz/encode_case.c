/*
 * encode_case.c — converts between the two corpus forms of a case:
 *
 *     encode_case [-p HEX] IN.case OUT.bin
 *                                     text -> fuzz bytes (case_encode), and
 *                                     checks that the bytes decode back to
 *                                     the same case; -p puts the given bytes
 *                                     first (fuzz_api's op/arg prefix)
 *     encode_case -d IN.bin           fuzz bytes -> text on stdout
 *
 * Used by `make corpus` (mk/fuzz.mk) and by people reading a crash file.
 * Owns nothing else; the byte grammar lives in harness/case/case_bytes.c.
 */
#include "../harness/case/case.h"
#include "../harness/case/case_bytes.h"

#include <stdio.h>
#include <string.h>

static int usage(void) {
    fprintf(stderr, "usage: encode_case [-p HEX] IN.case OUT.bin\n"
                    "       encode_case -d IN.bin\n");
    return 2;
}

static int decode_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    /* Bytes past CASE_BYTES_MAX are never read by the decoder either. */
    static uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    case_spec c;
    case_decode(buf, n, &c);
    printf("# decoded from %s (%zu bytes)\n", path, n);
    case_print(stdout, &c);
    return 0;
}

/* "00a1ff" -> bytes; returns the count or -1. */
static int parse_hex(const char *hex, uint8_t *out, size_t cap) {
    size_t n = strlen(hex);
    if (n % 2 || n / 2 > cap) return -1;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) return -1;
        out[i] = (uint8_t)v;
    }
    return (int)(n / 2);
}

static int encode_file(const char *in, const char *out, const uint8_t *prefix, size_t plen) {
    char err[256];
    case_spec c;
    if (case_load(in, &c, err, sizeof err)) {
        fprintf(stderr, "encode_case: %s\n", err);
        return 1;
    }
    uint8_t buf[CASE_BYTES_MAX];
    size_t n = case_encode(&c, buf, sizeof buf, err, sizeof err);
    if (n == 0) {
        fprintf(stderr, "encode_case: %s: %s\n", in, err);
        return 1;
    }
    case_spec back;
    case_decode(buf, n, &back);
    if (!case_equal(&c, &back)) {
        fprintf(stderr, "encode_case: %s: bytes do not decode back to the same case\n", in);
        return 1;
    }
    FILE *f = fopen(out, "wb");
    if (!f) {
        perror(out);
        return 1;
    }
    size_t wp = plen ? fwrite(prefix, 1, plen, f) : 0;
    size_t w = fwrite(buf, 1, n, f);
    if (fclose(f) != 0 || w != n || wp != plen) {
        fprintf(stderr, "encode_case: %s: write failed\n", out);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "-d") == 0) return decode_file(argv[2]);
    if (argc == 3) return encode_file(argv[1], argv[2], NULL, 0);
    if (argc == 5 && strcmp(argv[1], "-p") == 0) {
        uint8_t prefix[16];
        int plen = parse_hex(argv[2], prefix, sizeof prefix);
        if (plen < 0) return usage();
        return encode_file(argv[3], argv[4], prefix, (size_t)plen);
    }
    return usage();
}
