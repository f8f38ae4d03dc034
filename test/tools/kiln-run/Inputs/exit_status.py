"""Runs a command and reports how it ended, for checking an exact exit code.

usage: exit_status.py COMMAND ARG...

Prints the command's stderr, then its stdout, then "exit CODE" (or "killed
by SIGNAME", or "hung" after 60 seconds) on a line of its own. lit's `not`
accepts any non-zero exit code and `kiln-run ... ; echo $?` needs a shell,
so the tests that care about the code itself run kiln-run through this.
"""
import signal
import subprocess
import sys

try:
    run = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=60)
except subprocess.TimeoutExpired:
    print("hung")
    sys.exit(0)
sys.stdout.write(run.stderr.decode(errors="replace"))
sys.stdout.write(run.stdout.decode(errors="replace"))
if run.returncode < 0:
    print(f"killed by {signal.Signals(-run.returncode).name}")
else:
    print(f"exit {run.returncode}")
