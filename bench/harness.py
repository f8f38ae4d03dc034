"""Shared by the ONNX Runtime comparison test and the benchmark: random
inputs for the models/ exports, and runners for kiln-run and ONNX Runtime
(bench/ort/run_ort.js). Runs under /usr/bin/python3 (numpy, onnx)."""

import json
import os
import struct
import subprocess
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_ORT = os.path.join(HERE, "ort", "run_ort.js")

ONNX_DTYPES = {
    onnx.TensorProto.FLOAT: np.float32,
    onnx.TensorProto.INT64: np.int64,
    onnx.TensorProto.INT32: np.int32,
    onnx.TensorProto.BOOL: np.bool_,
}


def dim_sizes(batch, sequence, past):
    """The sizes of the symbolic dims the exports use."""
    return {"batch": batch, "sequence": sequence, "past_sequence": past,
            "total_sequence": past + sequence}


def make_inputs(model_path, batch, sequence, past=0, seed=0, vocab=256):
    """Random inputs for every graph input of an export, by its HF name."""
    model = onnx.load(model_path, load_external_data=False)
    sizes = dim_sizes(batch, sequence, past)
    initializers = {i.name for i in model.graph.initializer}
    rng = np.random.default_rng(seed)
    inputs = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        shape = []
        for dim in tensor.shape.dim:
            if dim.HasField("dim_value"):
                shape.append(dim.dim_value)
            elif dim.dim_param in sizes:
                shape.append(sizes[dim.dim_param])
            else:
                raise ValueError(f"{model_path}: input {value.name}: unknown dim "
                                 f"'{dim.dim_param}'")
        dtype = ONNX_DTYPES[tensor.elem_type]
        name = value.name
        if name == "input_ids":
            array = rng.integers(0, vocab, size=shape)
        elif name == "attention_mask":
            array = np.ones(shape)
        elif name == "token_type_ids":
            array = rng.integers(0, 2, size=shape)
        elif name == "position_ids":
            array = np.broadcast_to(np.arange(past, past + sequence), shape)
        elif dtype == np.float32:
            array = rng.standard_normal(shape)
        else:
            raise ValueError(f"{model_path}: no generator for input {name}")
        inputs[name] = np.ascontiguousarray(array.astype(dtype))
    return inputs


def save_inputs(inputs, directory):
    """Writes each input as DIRECTORY/<name>.npy; returns --input flags."""
    flags = []
    for name, array in inputs.items():
        path = os.path.join(directory, name + ".npy")
        np.save(path, array)
        flags += ["--input", f"{name}={path}"]
    return flags


def save_calibration_sets(feeds, directory):
    """Writes a list of input sets as kilnc --calibration reads them:
    DIRECTORY/set<i>/<name>.npy (save_inputs). Returns each set's --input
    flags."""
    flags = []
    for index, inputs in enumerate(feeds):
        set_directory = os.path.join(directory, f"set{index}")
        os.makedirs(set_directory, exist_ok=True)
        flags.append(save_inputs(inputs, set_directory))
    return flags


def load_outputs(directory, names):
    return {name: np.load(os.path.join(directory, name + ".npy")) for name in names}


def symbolic_dims(model_path):
    """The names of the symbolic dims of a model's inputs and outputs."""
    graph = onnx.load(model_path, load_external_data=False).graph
    return {d.dim_param for v in (*graph.input, *graph.output)
            for d in v.type.tensor_type.shape.dim if d.dim_param}


def output_names(model_path):
    model = onnx.load(model_path, load_external_data=False)
    return [value.name for value in model.graph.output]


def run_command(command, usage=None):
    """Runs `command` and returns its stdout, raising on failure. When `usage`
    is a dict, usage["max_rss_mb"] receives the process's peak resident set
    size (MiB), as GNU time reports it.

    Not from this process's own wait4: Linux carries the resident set a
    process had when it was forked into the peak it reports after exec, so a
    child of this Python (which may hold a whole model it read) would report
    at least Python's size. GNU time forks the command from its own small
    process."""
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr, \
            tempfile.NamedTemporaryFile("r") as peak:
        if usage is not None:
            command = ["/usr/bin/time", "-f", "%M", "-o", peak.name, *command]
        process = subprocess.run(command, stdout=stdout, stderr=stderr, text=True)
        stdout.seek(0)
        stderr.seek(0)
        out, err = stdout.read(), stderr.read()
        if process.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed ({process.returncode}):\n"
                               f"{out}{err}")
        if usage is not None:
            usage["max_rss_mb"] = int(peak.read().split()[-1]) / 1024.0  # KiB
    return out


def read_artifact(artifact):
    """A .kiln artifact's manifest (parsed JSON) and the size of its weights
    section."""
    with open(artifact, "rb") as f:
        header = f.read(80)
        # docs/artifact-format.md: magic, version, header size, file size,
        # then (offset, size) of the manifest, the code and the weights.
        manifest_offset, manifest_size = struct.unpack_from("<QQ", header, 24)
        weights_size = struct.unpack_from("<Q", header, 64)[0]
        f.seek(manifest_offset)
        manifest = json.loads(f.read(manifest_size))
    return manifest, weights_size


def artifact_memory(artifact):
    """The bytes a .kiln artifact asks for besides the process: its arena (per
    session) and its weights section (mapped from the file)."""
    manifest, weights_size = read_artifact(artifact)
    return {"arena_bytes": manifest["arena_bytes"], "weights_bytes": weights_size}


def run_kiln(kiln_run, artifact, flags, output_dir=None, threads=0, benchmark=0):
    """Runs kiln-run; returns the benchmark statistics (ms) and the peak RSS
    when asked."""
    command = [kiln_run, artifact, *flags, "--threads", str(threads)]
    if output_dir:
        command += ["--output-dir", output_dir]
    if benchmark:
        command += ["--benchmark", str(benchmark)]
    stats = {}
    stdout = run_command(command, stats)
    if not benchmark:
        return None
    line = next(l for l in stdout.splitlines() if l.startswith("benchmark:"))
    for part in line.split(":", 2)[2].split(","):
        key, value, _ = part.split()
        stats[key + "_ms"] = float(value)
    load = next(l for l in stdout.splitlines() if l.startswith("load:"))
    stats["load_ms"] = float(load.split()[1])
    return stats


def run_ort(model, flags, output_dir=None, threads=0, benchmark=0):
    """Runs ONNX Runtime through run_ort.js; returns statistics and the peak
    RSS of the Node.js process when asked."""
    command = ["node", RUN_ORT, model, *flags, "--threads", str(threads)]
    if output_dir:
        command += ["--output-dir", output_dir]
    if benchmark:
        command += ["--benchmark", str(benchmark)]
    usage = {}
    stdout = run_command(command, usage)
    if not benchmark:
        return None
    return {**json.loads(stdout.strip().splitlines()[-1]), **usage}


def max_relative_error(actual, expected):
    """max |actual - expected| / max |expected| (0 when both are all zero)."""
    if actual.shape != expected.shape:
        return float("inf")
    if expected.dtype.kind in "biu":
        return 0.0 if np.array_equal(actual, expected) else float("inf")
    scale = float(np.max(np.abs(expected))) if expected.size else 0.0
    difference = float(np.max(np.abs(actual.astype(np.float64) - expected))) \
        if expected.size else 0.0
    if not np.all(np.isfinite(actual)) or not np.all(np.isfinite(expected)):
        return float("inf")
    return difference / scale if scale > 0 else difference


def relative_rms_error(actual, expected):
    """RMS(actual - expected) / RMS(expected) (0 when both are all zero):
    how far a quantized model's outputs are from the f32 ones, on average."""
    if actual.shape != expected.shape:
        return float("inf")
    if expected.dtype.kind in "biu":
        return 0.0 if np.array_equal(actual, expected) else float("inf")
    if not np.all(np.isfinite(actual)) or not np.all(np.isfinite(expected)):
        return float("inf")
    difference = actual.astype(np.float64) - expected
    scale = float(np.sqrt(np.mean(np.square(expected.astype(np.float64))))) if expected.size else 0.0
    error = float(np.sqrt(np.mean(np.square(difference)))) if expected.size else 0.0
    return error / scale if scale > 0 else error
