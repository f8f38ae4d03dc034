"""Checks kiln-run's outputs for Inputs/mlp.onnxtxt against numpy.

usage: check_outputs.py MODEL.onnxtxt OUTPUT_DIR X.npy B.npy Z.npy

Recomputes y = x @ w + b and s = relu(y + z), with w the model's initializer
read by onnx's own parser, and compares them with OUTPUT_DIR/y.npy and
OUTPUT_DIR/s.npy. Prints one line per output and exits non-zero on any
difference in dtype, shape or value (beyond float32 rounding).
"""
import sys

import numpy as np
import onnx.parser
from onnx import numpy_helper

model_path, output_dir, x_path, b_path, z_path = sys.argv[1:6]
model = onnx.parser.parse_model(open(model_path).read())
(w,) = [numpy_helper.to_array(t) for t in model.graph.initializer if t.name == "w"]
x, b, z = np.load(x_path), np.load(b_path), np.load(z_path)
y = (x.astype(np.float64) @ w.astype(np.float64) + b).astype(np.float32)
expected = {"y": y, "s": np.maximum(y + z, 0).astype(np.float32)}

failed = False
for name, want in expected.items():
    got = np.load(f"{output_dir}/{name}.npy")
    if got.dtype != want.dtype or got.shape != want.shape:
        print(f"{name}: MISMATCH: got {got.dtype}{list(got.shape)}, "
              f"expected {want.dtype}{list(want.shape)}")
        failed = True
        continue
    error = float(np.max(np.abs(got - want))) if got.size else 0.0
    if not np.allclose(got, want, rtol=1e-5, atol=1e-5):
        print(f"{name}: MISMATCH: max abs error {error:g}")
        failed = True
    else:
        print(f"{name}: {got.dtype}{list(got.shape)} matches numpy")
sys.exit(1 if failed else 0)
