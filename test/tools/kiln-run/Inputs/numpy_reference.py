"""Inputs for, and numpy's answers to, the models that unsigned.test and
pad-axes.test run through kiln-run.

usage: numpy_reference.py inputs CASE DIR
       numpy_reference.py check CASE INPUT_DIR OUTPUT_DIR

CASE is `unsigned` (Inputs/unsigned.onnxtxt) or `pad_axes` (Inputs/pad_axes.onnxtxt;
`pad_axes_repeated` and `pad_axes_out_of_range` are inputs only, with axes
kiln must refuse at run time). `check` recomputes every output from the
inputs with numpy, prints one line per output, and exits non-zero on any
difference in dtype, shape or value.
"""
import os
import sys

import numpy as np


def unsigned_inputs():
    # Values where a signed reading gives another answer: 200 and 255 are
    # negative as int8, 65535 as int16, 3e9 as int32, 2^63 + 5 as int64.
    return {
        "a": np.array([200, 3, 255, 0, 128, 7], np.uint8),
        "b": np.array([3, 200, 1, 9, 127, 7], np.uint8),
        "h": np.array([1, 65535, 32768, 7, 0, 32767], np.uint16),
        "u": np.array([0, 3_000_000_000, 5, 2_000_000_000, 4_294_967_295, 10], np.uint32),
        "w": np.array([1, 2**63 + 5, 2**63 - 1, 0, 9, 2**62], np.uint64),
        "f": np.array([0.0, 1.9, 127.5, 128.0, 200.25, 254.9], np.float32),
        "x": np.array([-10.0, -5.0, 0.0, 3.3, 7.76, 20.0], np.float32),
    }


def unsigned_outputs(i):
    a, b = i["a"], i["b"]
    return {
        "q": a // b,
        "r": a % b,
        "mx": np.maximum(a, b),
        "lt": a < b,
        "af": a.astype(np.float32),
        "fa": i["f"].astype(np.uint8),
        "hmax": i["h"].max(keepdims=True),
        "wmax": np.array([np.argmax(i["w"])], np.int64),
        "uc": np.clip(i["u"], np.uint32(5), np.uint32(3_500_000_000)),
        "ws": i["w"] - np.uint64(1),
        # QuantizeLinear: saturate(round_half_even(x / 0.05) + 100).
        "xq": np.clip(np.rint(i["x"] / np.float32(0.05)) + 100, 0, 255).astype(np.uint8),
    }


def pad_inputs(axes):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    return {"x": x, "pads": np.array([1, 2, 0, 3], np.int64),
            "axes": np.array(axes, np.int64)}


def pad_outputs(i):
    # pads = [begin of axes[0], begin of axes[1], end of axes[0], end of axes[1]].
    widths = [(0, 0)] * 3
    (a0, a1), p = i["axes"] % 3, i["pads"]
    widths[a0] = (p[0], p[2])
    widths[a1] = (p[1], p[3])
    return {"y": np.pad(i["x"], widths, constant_values=np.float32(1.5))}


CASES = {
    "unsigned": (unsigned_inputs, unsigned_outputs),
    "pad_axes": (lambda: pad_inputs([-1, 0]), pad_outputs),
    "pad_axes_repeated": (lambda: pad_inputs([2, -1]), None),
    "pad_axes_out_of_range": (lambda: pad_inputs([3, 0]), None),
}


def main():
    mode, case = sys.argv[1], sys.argv[2]
    make_inputs, outputs = CASES[case]
    if mode == "inputs":
        out = sys.argv[3]
        os.makedirs(out, exist_ok=True)
        for name, value in make_inputs().items():
            np.save(os.path.join(out, name + ".npy"), value)
        return 0
    input_dir, output_dir = sys.argv[3], sys.argv[4]
    inputs = {name: np.load(os.path.join(input_dir, name + ".npy"))
              for name in make_inputs()}
    failed = False
    for name, want in outputs(inputs).items():
        got = np.load(os.path.join(output_dir, name + ".npy"))
        if got.dtype != want.dtype or got.shape != want.shape:
            print(f"{name}: MISMATCH: got {got.dtype}{list(got.shape)}, "
                  f"expected {want.dtype}{list(want.shape)}")
            failed = True
        elif not np.array_equal(got, want):
            print(f"{name}: MISMATCH: got {got.tolist()}, expected {want.tolist()}")
            failed = True
        else:
            print(f"{name}: {got.dtype}{list(got.shape)} matches numpy")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
