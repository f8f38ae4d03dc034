"""Compiles every export for the GPU (kilnc --target=cuda --emit=ptx) for
each architecture kilnc is asked to support first (sm_80, the default, and
sm_90), and assembles each PTX with CUDA's ptxas for that architecture:
the check, without a GPU, that the kernels kilnc emits are PTX a driver
accepts. Each PTX must target its architecture, hold at least one kernel
(.entry) and declare no external function (kiln links no libdevice).

ptxas comes from $KILN_PTXAS, else /usr/local/cuda/bin/ptxas, else PATH.
Without one the test is skipped (exit 77) and says why.

usage: cuda_ptx.py KILNC WORK_DIR MODELS_DIR...
"""

import os
import re
import shutil
import subprocess
import sys
import time

ARCHS = ["sm_80", "sm_90"]


def find_ptxas():
    for candidate in (os.environ.get("KILN_PTXAS"), "/usr/local/cuda/bin/ptxas",
                      shutil.which("ptxas")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def check(kilnc, ptxas, model, arch, work_dir):
    """Returns (kernels, PTX bytes, ptxas seconds) or raises with the cause."""
    name = os.path.splitext(os.path.basename(model))[0]
    ptx = os.path.join(work_dir, f"{name}.{arch}.ptx")
    compiled = subprocess.run([kilnc, model, "--target=cuda", f"--gpu={arch}",
                               "--emit=ptx", "-o", ptx],
                              capture_output=True, text=True)
    if compiled.returncode != 0:
        raise RuntimeError(f"kilnc failed:\n{compiled.stderr.strip()}")
    with open(ptx) as f:
        text = f.read()
    if not re.search(rf"^\.target {arch}\b", text, re.M):
        raise RuntimeError(f"the PTX does not target {arch}")
    kernels = len(re.findall(r"^\.visible \.entry ", text, re.M))
    if kernels == 0:
        raise RuntimeError("the PTX has no kernel")
    externs = re.findall(r"^\.extern \.func .*?(\w+)\(", text, re.M)
    if externs:
        raise RuntimeError(f"the PTX calls functions it does not define: {externs}")
    start = time.monotonic()
    assembled = subprocess.run([ptxas, f"-arch={arch}", ptx, "-o", os.devnull],
                               capture_output=True, text=True)
    seconds = time.monotonic() - start
    if assembled.returncode != 0:
        raise RuntimeError(f"ptxas -arch={arch} failed:\n{assembled.stderr.strip()}")
    return kernels, len(text), seconds


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    kilnc, work_dir, model_dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
    ptxas = find_ptxas()
    if not ptxas:
        print("SKIPPED: no ptxas (CUDA's PTX assembler) in $KILN_PTXAS, "
              "/usr/local/cuda/bin or PATH, so the PTX cannot be checked")
        sys.exit(77)
    os.makedirs(work_dir, exist_ok=True)
    models = sorted(os.path.join(d, f) for d in model_dirs
                    for f in os.listdir(d) if f.endswith(".onnx"))
    failures = 0
    print(f"ptxas: {ptxas}")
    for model in models:
        for arch in ARCHS:
            label = f"{os.path.basename(model)} {arch}"
            try:
                kernels, size, seconds = check(kilnc, ptxas, model, arch, work_dir)
                print(f"PASS {label}: {kernels} kernels, {size / 1024:.0f} KiB of PTX, "
                      f"ptxas {seconds:.1f} s")
            except RuntimeError as error:
                failures += 1
                print(f"FAIL {label}: {error}")
    print(f"{len(models) * len(ARCHS) - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
