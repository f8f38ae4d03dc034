"""Checks a kilnc --report's memory plan against the artifact it describes.

usage: check_memory_plan.py REPORT.json ARTIFACT.kiln

Prints, for FileCheck:
  arena A bytes, buffers B bytes, ratio R    (A / B, 2 decimals)
  manifest arena_bytes M
  in place: N                                (pairs the plan marks in place,
                                              in_place_of, at one offset and
                                              meeting at one op)
  overlaps: N                                (other planned buffers live at the
                                              same time whose bytes intersect)
  out of arena: N                            (buffers past the arena's end)
  heap: REASON xN                            (one line per reason, sorted)
"""
import collections
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "..", "bench"))
import harness  # noqa: E402


def main():
    report_path, artifact_path = sys.argv[1:3]
    plan = json.load(open(report_path))["memory_plan"]
    arena, total = plan["arena_bytes"], plan["buffer_bytes"]
    print(f"arena {arena} bytes, buffers {total} bytes, ratio {arena / total:.2f}")

    manifest, _ = harness.read_artifact(artifact_path)
    print(f"manifest arena_bytes {manifest['arena_bytes']}")

    buffers = plan["buffers"]
    in_place = overlaps = 0
    for i, a in enumerate(buffers):
        for j in range(i + 1, len(buffers)):
            b = buffers[j]
            live_together = a["first"] <= b["last"] and b["first"] <= a["last"]
            share_bytes = (a["offset"] < b["offset"] + b["bytes"] and
                           b["offset"] < a["offset"] + a["bytes"])
            if not (live_together and share_bytes):
                continue
            marked = a.get("in_place_of") == j or b.get("in_place_of") == i
            meet = a["last"] == b["first"] or b["last"] == a["first"]
            if marked and meet and a["offset"] == b["offset"]:
                in_place += 1
            else:
                overlaps += 1
    print(f"in place: {in_place}")
    print(f"overlaps: {overlaps}")
    outside = sum(b["offset"] + b["bytes"] > arena for b in buffers)
    print(f"out of arena: {outside}")
    for reason, count in sorted(collections.Counter(
            entry["reason"] for entry in plan["heap"]).items()):
        print(f"heap: {reason} x{count}")


if __name__ == "__main__":
    main()
