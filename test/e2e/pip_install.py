"""Checks `pip install .` from the checkout (setup.py, pyproject.toml):
pip installs the package into a fresh virtual environment (Debian's way:
--system-site-packages for numpy, offline with the system's setuptools,
the native parts from KILN_BUILD_DIR's build), and that environment's
Python, in another directory and without PYTHONPATH, imports it from the
environment, loads the runtime library installed with it, compiles
bert_tiny with the kilnc installed with it and runs it, matching ONNX
Runtime within 1e-4.

usage: pip_install.py SOURCE_DIR BUILD_DIR WORK_DIR
"""
import os
import shutil
import subprocess
import sys

CHECK = r'''
import os, sys
import numpy as np
import kiln
environment, model, artifact, feeds_dir = sys.argv[1:5]
package = os.path.dirname(os.path.abspath(kiln.__file__))
assert package.startswith(environment), f"kiln imported from {package}, not {environment}"
assert kiln._kilnc() == os.path.join(package, "bin", "kilnc"), kiln._kilnc()
kiln.compile(model, artifact, dims={"batch": (1, 2), "sequence": (1, 16)})
with open("/proc/self/maps") as maps:
    runtimes = {line.split()[-1] for line in maps if "libkiln_runtime" in line}
assert runtimes and all(path.startswith(package) for path in runtimes), runtimes
feeds = {name[:-4]: np.load(os.path.join(feeds_dir, name)) for name in os.listdir(feeds_dir)}
session = kiln.InferenceSession(artifact)
for output, value in zip(session.get_outputs(), session.run(None, feeds)):
    np.save(os.path.join(feeds_dir, "..", "kiln", output.name + ".npy"), value)
print("installed package ran from", package)
'''


def main():
    source, build, work = sys.argv[1:4]
    sys.path.insert(0, os.path.join(source, "bench"))
    import harness
    shutil.rmtree(work, ignore_errors=True)
    environment = os.path.join(work, "venv")
    subprocess.check_call([sys.executable, "-m", "venv", "--system-site-packages", environment])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "KILN_"))}
    subprocess.check_call([os.path.join(environment, "bin", "pip"), "install", "--quiet",
                           "--no-build-isolation", "--no-deps", "--no-index", source],
                          env={**env, "KILN_BUILD_DIR": build}, cwd=work)
    model = os.path.join(source, "models", "exports", "bert_tiny.onnx")
    for sub in ("inputs", "kiln", "ort"):
        os.makedirs(os.path.join(work, "run", sub))
    flags = harness.save_inputs(harness.make_inputs(model, 2, 16),
                                os.path.join(work, "run", "inputs"))
    subprocess.check_call([os.path.join(environment, "bin", "python"), "-c", CHECK,
                           environment, model, os.path.join(work, "bert_tiny.kiln"),
                           os.path.join(work, "run", "inputs")], env=env, cwd=work)
    harness.run_ort(model, flags, os.path.join(work, "run", "ort"))
    names = harness.output_names(model)
    kiln_outputs = harness.load_outputs(os.path.join(work, "run", "kiln"), names)
    ort_outputs = harness.load_outputs(os.path.join(work, "run", "ort"), names)
    failures = 0
    for name in names:
        error = harness.max_relative_error(kiln_outputs[name], ort_outputs[name])
        ok = error <= 1e-4
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'}: the installed package's {name}: max relative "
              f"error {error:.3g} against ONNX Runtime")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
