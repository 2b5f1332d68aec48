#!/usr/bin/env python3
"""reach_gate.py SUMMARY.json — the reach table of a fuzzing session
(scripts/fuzzkit.py's summary.json) must have no row at zero: a row no
input reached is a blind spot of the generator.  Prints the count and the
rows; exits 1 when any row is at zero, 2 when the summary has no table."""
import json
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: reach_gate.py SUMMARY.json")
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    if not doc.get("reach"):
        print(f"reach: {sys.argv[1]} has no reach table")
        return 2
    zero = doc.get("reach_zero") or []
    rows = len({r for t in doc["reach"].values() for r in t.get("rows", {})})
    print(f"reach: {rows} rows, {len(zero)} never reached" + (": " + ", ".join(zero) if zero else ""))
    return 1 if zero else 0


if __name__ == "__main__":
    sys.exit(main())
