#!/usr/bin/env bash
# check_report.sh DIR — the checks behind `make report-test` for one report
# folder (normally build/report):
#   1. DIR/report.json validates against reports/schema.json (python3-jsonschema);
#   2. DIR/report.html renders in headless chromium: the screenshot must be
#      non-trivial (size and number of distinct colours) and the DOM must hold
#      the four SVG charts by id;
#   3. at 1,349 and 1,366 px wide the page does not scroll sideways and every
#      chart colour has its legend entry (reports/screenshot.py).
# Leaves the screenshot and the dumped DOM in build/report-test/.
# Needs: Debian chromium and python3-jsonschema (make deps WITH=report).
set -euo pipefail

dir=${1:-build/report}
py=${REPORT_PY:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
out=build/report-test
mkdir -p "$out"

echo "report-test: schema: $dir/report.json against reports/schema.json"
"$py" - "$here/schema.json" "$dir/report.json" <<'PY'
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2]))
cls = jsonschema.validators.validator_for(schema)
cls.check_schema(schema)
errors = sorted(cls(schema).iter_errors(doc), key=lambda e: list(e.absolute_path))
for e in errors[:20]:
    print("  at /" + "/".join(str(p) for p in e.absolute_path) + ": " + e.message[:300])
if errors:
    sys.exit(f"report-test: {len(errors)} schema violation(s)")
print(f"report-test: schema ok ({cls.__name__}, {len(doc['grid']['cells'])} cells)")
PY

browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "report-test: chromium not found (make deps WITH=report)" >&2; exit 1; }
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
       --disable-component-update --disable-sync --no-first-run --disable-dev-shm-usage
       "--user-data-dir=$profile")
html=$(cd "$dir" && pwd)/report.html
png=$out/report.png
rm -f "$png"
echo "report-test: screenshot of $html"
timeout 120 "$browser" "${flags[@]}" "--screenshot=$png" --window-size=1400,2400 \
    "file://$html" >"$out/chromium-shot.log" 2>&1 || true
[ -s "$png" ] || { cat "$out/chromium-shot.log" >&2; echo "report-test: no screenshot" >&2; exit 1; }
timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$html" >"$out/report.dom.html" \
    2>"$out/chromium-dom.log" || true

"$py" - "$png" "$out/report.dom.html" <<'PY'
import struct, sys, zlib
png, dom = sys.argv[1], sys.argv[2]
data = open(png, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
assert depth == 8 and ctype in (2, 6), f"unexpected PNG format {depth}/{ctype}"
bpp = 3 if ctype == 2 else 4
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
colours = set()
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    if y % 4 == 0:
        for x in range(0, w, 2):
            colours.add(bytes(line[x * bpp:x * bpp + 3]))
    prev = line
size = len(data)
print(f"report-test: screenshot {w}x{h}, {size} bytes, {len(colours)} distinct colours (sampled)")
if w < 1000 or h < 2000 or size < 50000 or len(colours) < 50:
    sys.exit("report-test: the screenshot looks empty or trivial")
text = open(dom, errors="replace").read()
missing = [cid for cid in ("chart-heatmap", "chart-dist", "chart-ttd", "chart-execs")
           if f'<svg id="{cid}"' not in text]
if missing:
    sys.exit(f"report-test: DOM lacks charts {missing}")
print(f"report-test: DOM has the 4 SVG charts ({text.count('<svg')} svg elements, "
      f"{text.count('<rect')} rects, {text.count('<circle')} circles)")
PY
"$py" "$here/screenshot.py" "$dir/report.html" "$out" --widths 1349,1366 \
    || { echo "report-test: the page does not fit a 1,366 px screen, or a colour lacks its legend" >&2; exit 1; }
echo "report-test: ok ($png)"
