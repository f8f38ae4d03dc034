"""Feeds kilnc corrupted copies of a model and fails if any run crashes.

Each copy has random bytes overwritten (anywhere, or in the graph structure
at the front of the file) or is truncated at a random offset. kilnc must
either import it (exit 0) or refuse it with a message (exit 1); a signal,
another exit code, a hang, or an exit 1 without 'error:' fails the test.
The seed is fixed, so a failure reproduces.
"""
import random
import subprocess
import sys

kilnc, model, workdir, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
original = open(model, "rb").read()
rng = random.Random(20261202)
outcomes = {0: 0, 1: 0}
for i in range(count):
    data = bytearray(original)
    kind = i % 3
    if kind == 0:
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif kind == 1:
        data = data[: rng.randrange(len(data))]
    else:
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(min(len(data), 40000))] = rng.randrange(256)
    path = f"{workdir}/corrupt{i}.onnx"
    open(path, "wb").write(data)
    try:
        run = subprocess.run([kilnc, path, "-o", "/dev/null"], capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        sys.exit(f"FAIL: kilnc hung on {path}")
    stderr = run.stderr.decode(errors="replace")
    if run.returncode not in outcomes or (run.returncode == 1 and "error:" not in stderr):
        sys.exit(f"FAIL: kilnc exited {run.returncode} on {path}:\n{stderr[-2000:]}")
    outcomes[run.returncode] += 1
print(f"corrupted models: {count}, imported: {outcomes[0]}, refused: {outcomes[1]}, crashed: 0")
