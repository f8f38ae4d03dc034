"""Checks the latencies in kiln-run --benchmark output read from stdin.

Echoes stdin, then checks the one "benchmark: N runs after W warm-up: min A ms,
median B ms, p90 C ms, p99 D ms, mean E ms" line: N and W as given on the
command line (check_benchmark.py N W), min <= median <= p90 <= p99, and
min <= mean <= p99 (p99 is the maximum for fewer than 100 runs). Prints
"latencies ordered" or exits non-zero saying what is wrong.
"""
import re
import sys

runs, warmup = int(sys.argv[1]), int(sys.argv[2])
text = sys.stdin.read()
sys.stdout.write(text)
pattern = (r"^benchmark: (\d+) runs after (\d+) warm-up: min ([0-9.]+) ms, median ([0-9.]+) ms, "
           r"p90 ([0-9.]+) ms, p99 ([0-9.]+) ms, mean ([0-9.]+) ms$")
lines = re.findall(pattern, text, re.MULTILINE)
if len(lines) != 1:
    sys.exit(f"expected one benchmark line, found {len(lines)}")
n, w, *times = lines[0]
lo, median, p90, p99, mean = map(float, times)
if (int(n), int(w)) != (runs, warmup):
    sys.exit(f"expected {runs} runs after {warmup} warm-up, got {n} after {w}")
if not lo <= median <= p90 <= p99:
    sys.exit(f"latencies out of order: min {lo}, median {median}, p90 {p90}, p99 {p99}")
if not lo <= mean <= p99 and runs < 100:
    sys.exit(f"mean {mean} outside [min {lo}, max {p99}]")
print("latencies ordered")
