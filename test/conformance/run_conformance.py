"""Runs ONNX's backend node tests through kilnc and kiln-run and checks each
result against the list in node_tests.txt.

Every generated node test is compiled with kilnc, run with kiln-run on its
test_data_set_* inputs (ONNX TensorProto .pb files), and compared with the
expected outputs as ONNX's own backend runner compares them (rtol 1e-3,
atol 1e-7). node_tests.txt records, per test, `pass` or `skip: <reason>`; the
check fails when a listed pass no longer passes, when a listed skip now passes
(so the list stays true), or when a test is missing from the list.

usage: run_conformance.py KILNC KILN_RUN WORK_DIR [--update] [--only SUBSTRING]
                          [--gpu-kernels-on-cpu]
  --update  rewrite node_tests.txt from this run, keeping the written reasons
            of skips that still fail
  --gpu-kernels-on-cpu  compile with kilnc --gpu-kernels-on-cpu (the CUDA
            target's kernels, run on the CPU): every test listed `pass` must
            pass that way too (a listed skip is not checked)
  --ptx PTXAS  compile every test listed `pass` for the GPU (kilnc
            --target=cuda --emit=ptx) and assemble its PTX with PTXAS for
            sm_80. kilnc may refuse a test, with an error that says why
            (what the CUDA target cannot do yet, counted by reason), but
            must not crash, ptxas must accept every PTX it writes, and at
            least MIN_PTX tests must compile (without PTXAS: exit 77, skipped)
"""

import collections
import concurrent.futures
import os
import re
import subprocess
import sys

import numpy as np

# onnx 1.12's test generators use aliases that numpy 1.24 removed.
for alias, value in (("float", float), ("int", int), ("bool", bool),
                     ("object", object)):
    if alias not in np.__dict__:
        setattr(np, alias, value)

import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LIST = os.path.join(HERE, "node_tests.txt")
RTOL, ATOL = 1e-3, 1e-7
# How many of the passing node tests --ptx must see compile for the GPU: a
# floor against regressions that turn kernels into refusals, to raise as
# the CUDA target learns what it refuses today.
MIN_PTX = 604


def generate(data_dir):
    if os.path.isdir(os.path.join(data_dir, "node")):
        return
    from onnx.backend.test.cmd_tools import main as cmd_main
    saved = sys.argv
    sys.argv = ["cmd_tools", "generate-data", "-o", data_dir]
    try:
        cmd_main()
    finally:
        sys.argv = saved


def first_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[0] if lines else "(no message)"


def reason_of(stderr):
    """A one-line reason from a kilnc or kiln-run error message."""
    text = stderr.strip()
    match = re.search(r"unsupported operators?:\s*\n?\s*(.*)", text)
    if match:
        too_old = sorted(set(re.findall(
            r"op '([^']+)' \(opset (\d+)\): kiln reads \S+ from opset (\d+)", text)))
        if too_old:
            return "; ".join(f"{op} at opset {opset} (kiln reads it from opset {since})"
                             for op, opset, since in too_old)
        ops = sorted(set(re.findall(r"op '([^']+)'", text)))
        return "unsupported op " + ", ".join(ops)
    match = re.search(r"uses opset (\d+) of the default ONNX domain", text)
    if match:
        return f"opset {match.group(1)} (kiln reads opsets up to 21)"
    line = first_line(text)
    line = re.sub(r"^(kilnc|kiln-run): error: ", "", line)
    line = re.sub(r"/\S*/(test_\w+)/", r"\1/", line)
    return line[:300]


def compare(expected, actual):
    if expected.shape != actual.shape:
        return f"shape {list(actual.shape)}, expected {list(expected.shape)}"
    if expected.dtype.kind in "biu" or expected.dtype == np.bool_:
        if not np.array_equal(expected, actual):
            return "values differ"
        return None
    if not np.allclose(actual, expected, rtol=RTOL, atol=ATOL, equal_nan=True):
        error = np.max(np.abs(actual.astype(np.float64) - expected))
        return f"values differ (max abs error {error:.3g})"
    return None


def run_test(kilnc, kiln_run, test_dir, work_dir, kilnc_options):
    """Returns None when the test passes, else a one-line reason."""
    name = os.path.basename(test_dir)
    model_path = os.path.join(test_dir, "model.onnx")
    artifact = os.path.join(work_dir, name + ".kiln")
    result = subprocess.run([kilnc, model_path, "-o", artifact, *kilnc_options],
                            capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        return reason_of(result.stderr)
    model = onnx.load(model_path)
    initializers = {i.name for i in model.graph.initializer}
    input_names = [i.name for i in model.graph.input if i.name not in initializers]
    output_names = [o.name for o in model.graph.output]
    data_sets = sorted(d for d in os.listdir(test_dir) if d.startswith("test_data_set"))
    for data_set in data_sets:
        data_dir = os.path.join(test_dir, data_set)
        out_dir = os.path.join(work_dir, name, data_set)
        os.makedirs(out_dir, exist_ok=True)
        command = [kiln_run, artifact, "--threads", "1", "--output-dir", out_dir]
        for i, input_name in enumerate(input_names):
            command += ["--input", f"{input_name}={data_dir}/input_{i}.pb"]
        result = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            return (reason_of(result.stderr) if result.returncode == 1
                    else f"kiln-run exited with {result.returncode}")
        for i, output_name in enumerate(output_names):
            tensor = onnx.TensorProto()
            with open(os.path.join(data_dir, f"output_{i}.pb"), "rb") as f:
                tensor.ParseFromString(f.read())
            expected = numpy_helper.to_array(tensor)
            actual = np.load(os.path.join(out_dir, output_name.replace("/", "_") + ".npy"))
            problem = compare(expected, actual)
            if problem:
                return f"output '{output_name}' ({data_set}): {problem}"
    return None


def compile_ptx(kilnc, ptxas, test_dir, work_dir):
    """Returns ("ptx", None), ("refused", reason) or ("broken", reason)."""
    name = os.path.basename(test_dir)
    ptx = os.path.join(work_dir, name + ".ptx")
    result = subprocess.run([kilnc, os.path.join(test_dir, "model.onnx"), "--target=cuda",
                             "--emit=ptx", "-o", ptx],
                            capture_output=True, text=True, timeout=300)
    if result.returncode == 1 and result.stderr.startswith("kilnc: error: "):
        reason = re.sub(r'loc\(.*?\)\)?: ', "", first_line(result.stderr))
        return "refused", re.sub(r"^kilnc: error: compilation failed: ", "", reason)[:120]
    if result.returncode != 0:
        return "broken", f"kilnc exited with {result.returncode}: {first_line(result.stderr)}"
    result = subprocess.run([ptxas, "-arch=sm_80", ptx, "-o", os.devnull],
                            capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        return "broken", f"ptxas: {first_line(result.stderr)}"
    return "ptx", None


def check_ptx(kilnc, ptxas, node_dir, tests, work_dir):
    """The --ptx mode: returns the exit status."""
    passing = [t for t in tests if read_list().get(t) == "pass"]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(passing, pool.map(
            lambda t: compile_ptx(kilnc, ptxas, os.path.join(node_dir, t), work_dir), passing)))
    by_reason = collections.Counter(r for kind, r in results.values() if kind == "refused")
    broken = sorted((t, r) for t, (kind, r) in results.items() if kind == "broken")
    ptx = sum(1 for kind, _ in results.values() if kind == "ptx")
    print(f"{ptx} of the {len(passing)} node tests that pass compile to PTX that "
          f"ptxas accepts (at least {MIN_PTX} must); {sum(by_reason.values())} "
          f"refused, {len(broken)} broken")
    for reason, count in by_reason.most_common():
        print(f"refused {count}: {reason}")
    for name, reason in broken:
        print(f"BROKEN: {name}: {reason}")
    return 1 if broken or ptx < MIN_PTX else 0


def read_list():
    entries = {}
    if not os.path.exists(LIST):
        return entries
    with open(LIST) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, status = line.split(" ", 1)
            entries[name] = status
    return entries


def write_list(results, previous):
    passed = sum(1 for r in results.values() if r is None)
    with open(LIST, "w") as f:
        f.write("# ONNX backend node tests (onnx 1.12) through kilnc + kiln-run.\n"
                "# `pass`, or `skip: <reason>`. Checked by run_conformance.py;\n"
                "# regenerate with --update, then review every new skip.\n"
                f"# {passed} pass, {len(results) - passed} skip.\n")
        for name in sorted(results):
            reason = results[name]
            if reason is None:
                f.write(f"{name} pass\n")
                continue
            old = previous.get(name, "")
            # A reason written by hand (marked "known:") is kept while the
            # test still fails.
            if old.startswith("skip: known:"):
                f.write(f"{name} {old}\n")
            else:
                f.write(f"{name} skip: {reason}\n")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    update = "--update" in sys.argv
    gpu_kernels = "--gpu-kernels-on-cpu" in sys.argv
    if update and gpu_kernels:
        sys.exit("--update records the CPU build's results; drop --gpu-kernels-on-cpu")
    kilnc_options = ["--gpu-kernels-on-cpu"] if gpu_kernels else []
    ptxas = None
    if "--ptx" in sys.argv:
        ptxas = sys.argv[sys.argv.index("--ptx") + 1]
        args.remove(ptxas)
        if not os.access(ptxas, os.X_OK):
            print(f"SKIPPED: no ptxas at {ptxas} (CUDA's PTX assembler), so the "
                  "PTX cannot be checked")
            return 77
    only = None
    if "--only" in sys.argv:
        only = sys.argv[sys.argv.index("--only") + 1]
        args.remove(only)
    kilnc, kiln_run, work_dir = args[:3]
    data_dir = os.path.join(work_dir, "onnx-node-tests")
    generate(data_dir)
    node_dir = os.path.join(data_dir, "node")
    tests = sorted(t for t in os.listdir(node_dir) if not only or only in t)
    artifacts = os.path.join(work_dir, "gpu_kernels" if gpu_kernels else
                             "ptx" if ptxas else "artifacts")
    os.makedirs(artifacts, exist_ok=True)
    if ptxas:
        return check_ptx(kilnc, ptxas, node_dir, tests, artifacts)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {t: pool.submit(run_test, kilnc, kiln_run, os.path.join(node_dir, t),
                                  artifacts, kilnc_options) for t in tests}
        results = {t: f.result() for t, f in futures.items()}

    previous = read_list()
    if update:
        write_list(results, previous)
    problems = []
    for name, reason in sorted(results.items()):
        listed = previous.get(name)
        if listed is None:
            problems.append(f"{name}: not in node_tests.txt "
                            f"({'passes' if reason is None else reason})")
        elif listed == "pass" and reason is not None:
            problems.append(f"{name}: listed as pass, now fails: {reason}")
        elif listed != "pass" and reason is None and not gpu_kernels:
            problems.append(f"{name}: listed as skip, now passes: update the list")
    passed = sum(1 for r in results.values() if r is None)
    print(f"{passed} of {len(results)} node tests pass")
    for problem in problems:
        print("MISMATCH:", problem)
    if update:
        print(f"wrote {LIST}")
        return 0
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
