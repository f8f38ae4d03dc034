"""Runs a command once per .kiln file in a folder and reports how each run ended.

usage: exit_codes.py DIR COMMAND ARG... ({} in an ARG is replaced by the file)

Prints "NAME: exit CODE" or "NAME: killed by SIGNAME" (or "NAME: hung") for
each DIR/*.kiln in name order, then "N runs: M exited with 1, K did not",
where a run counts as exiting with 1 only if it also printed
"kiln-run: error: " on stderr. A crash is a signal (lit's `not` would treat it as a failure too); this
also catches exit codes other than 1, which `not` accepts.
"""
import glob
import os
import signal
import subprocess
import sys

folder, command = sys.argv[1], sys.argv[2:]
paths = sorted(glob.glob(os.path.join(folder, "*.kiln")))
ones = 0
for path in paths:
    name = os.path.basename(path)
    try:
        run = subprocess.run([arg.replace("{}", path) for arg in command],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
    except subprocess.TimeoutExpired:
        print(f"{name}: hung")
        continue
    if run.returncode < 0:
        print(f"{name}: killed by {signal.Signals(-run.returncode).name}")
    else:
        print(f"{name}: exit {run.returncode}")
        ones += run.returncode == 1 and b"kiln-run: error: " in run.stderr
print(f"{len(paths)} runs: {ones} exited with 1, {len(paths) - ones} did not")
