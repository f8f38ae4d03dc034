"""Writes the input tensors the kiln-run tests feed Inputs/mlp.onnxtxt.

usage: make_inputs.py OUT_DIR

Good inputs (batch 3), as .npy and as ONNX TensorProto .pb:
  x.npy z.npy b.npy  x.pb z.pb b.pb
  x5.npy z5.npy      batch 5, for a second run with another batch size
Bad ones, each wrong in one way:
  x_f64.npy      f64 instead of f32          x_rank3.npy  shape (3, 16, 1)
  b8.npy         static dim 16 given as 8    x9.npy       batch 9 (> max 8)
  x0.npy         batch 0 (< min 1)           z2.npy       batch 2 (x has 3)
  garbage.npy    not a .npy file             short.npy    data cut short
  fortran.npy    fortran_order True          x.txt        unknown extension
  garbage.pb     not a TensorProto
Values are seeded, so they are the same on every run.
"""
import os
import sys

import numpy as np
from onnx import numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(20261202)


def f32(*shape):
    return rng.uniform(-2, 2, size=shape).astype(np.float32)


def save(name, array):
    np.save(os.path.join(out, name), array)


def save_pb(name, array, tensor_name):
    with open(os.path.join(out, name), "wb") as f:
        f.write(numpy_helper.from_array(array, tensor_name).SerializeToString())


good = {"x": f32(3, 16), "z": f32(3, 16), "b": f32(16)}
for name, array in good.items():
    save(name + ".npy", array)
    save_pb(name + ".pb", array, name)
save("x5.npy", f32(5, 16))
save("z5.npy", f32(5, 16))

save("x_f64.npy", good["x"].astype(np.float64))
save("x_rank3.npy", good["x"].reshape(3, 16, 1))
save("b8.npy", f32(8))
save("x9.npy", f32(9, 16))
save("x0.npy", f32(0, 16))
save("z2.npy", f32(2, 16))
with open(os.path.join(out, "garbage.npy"), "wb") as f:
    f.write(b"this is not a numpy file\n")
save("short.npy", good["x"])
with open(os.path.join(out, "short.npy"), "r+b") as f:
    f.truncate(os.path.getsize(os.path.join(out, "short.npy")) - 4)
save("fortran.npy", np.asfortranarray(f32(3, 16)))
with open(os.path.join(out, "x.txt"), "w") as f:
    f.write("1 2 3\n")
with open(os.path.join(out, "garbage.pb"), "wb") as f:
    f.write(b"\xff\xff\xff\xff not a protobuf")
