"""Writes the inputs and expected outputs of run-checks.test.

usage: make_check_inputs.py OUT_DIR

The models (in run-checks.test) take their sizes from symbolic dims, so the
runtime's manifest checks accept every input here; the inconsistent ones are
left to the generated code's run-time checks.
  add:     a3 b4 (N=3, M=4), a4 b3 (N=4, M=3); good a3 b3   -> add_y.npy
  matmul:  x (M=2, K=4), w5 (L=5, K would be 5); good w4      -> matmul_y.npy
  gather:  data [5, 2]; ids_past_end [1, 5], ids_before_start [-6];
           good ids_negative [-2, 0, 4, -5]                   -> gather_y.npy
           (and gather_clamped_y.npy, negative indices read as 0)
  concat:  ca [2, 2] (R=2), cb3 [3, 3] (S=3); good cb2 [2, 3] -> concat_y.npy
  named:   named_add.onnx, a binary model whose Add node is named 'Add_named'
  static_concat: c5 [5, 4], c2 [2, 4] (N = 5 and 2; the output is float[3, 8]);
                 good c3 [3, 4]                               -> static_concat_y.npy
  static_split:  s3 [3, 6] (N = 3; output a is float[4, 2]);
                 good s4 [4, 6]                   -> static_split_a.npy, _b.npy
  reshape:       r8 [8]; shape_neg [-4, -1], shape_negs [-2, -4],
                 shape_neg_last [-1, -4]; good shape_good [2, -1]
                                                              -> reshape_y.npy
  batch_matmul:  bx3 [3, 2, 4] (B = 3), bw2 [2, 4, 3] (C = 2);
                 good bw3 [3, 4, 3]                           -> batch_matmul_y.npy
The expected outputs are numpy's. Values are seeded.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(20261203)


def f32(*shape):
    return rng.uniform(-2, 2, size=shape).astype(np.float32)


def save(name, array):
    np.save(os.path.join(out, name + ".npy"), array)


a3, a4, b3, b4 = f32(3), f32(4), f32(3), f32(4)
for name, array in {"a3": a3, "a4": a4, "b3": b3, "b4": b4}.items():
    save(name, array)
save("add_y", a3 + b3)

x, w4, w5 = f32(2, 4), f32(4, 3), f32(5, 3)
save("x", x)
save("w4", w4)
save("w5", w5)
save("matmul_y", (x.astype(np.float64) @ w4.astype(np.float64)).astype(np.float32))

data = f32(5, 2)
save("data", data)
save("ids_past_end", np.array([1, 5], dtype=np.int64))
save("ids_before_start", np.array([-6], dtype=np.int64))
ids = np.array([-2, 0, 4, -5], dtype=np.int64)
save("ids_negative", ids)
save("gather_y", np.take(data, ids, axis=0))
# What clamping the indices into [0, 4] instead of wrapping them would give.
save("gather_clamped_y", np.take(data, np.clip(ids, 0, 4), axis=0))

ca, cb2, cb3 = f32(2, 2), f32(2, 3), f32(3, 3)
save("ca", ca)
save("cb2", cb2)
save("cb3", cb3)
save("concat_y", np.concatenate([ca, cb2], axis=1))

save("c5", f32(5, 4))
save("c2", f32(2, 4))
save("s3", f32(3, 6))
save("r8", f32(8))
save("shape_neg", np.array([-4, -1], dtype=np.int64))
save("shape_negs", np.array([-2, -4], dtype=np.int64))
bx3 = f32(3, 2, 4)
save("bx3", bx3)
save("bw2", f32(2, 4, 3))

c3 = f32(3, 4)
save("c3", c3)
save("static_concat_y", np.concatenate([c3, c3], axis=1))
s4 = f32(4, 6)
save("s4", s4)
save("static_split_a", s4[:, :2])
save("static_split_b", s4[:, 2:])
# Split of s4 [4, 6] along axis 1 by sizes given at run time.
save("split_sizes_good", np.array([1, 5], dtype=np.int64))
save("split_sizes_short", np.array([2, 3], dtype=np.int64))
save("split_sizes_negative", np.array([-1, 7], dtype=np.int64))
save("computed_split_a", s4[:, :1])
save("computed_split_b", s4[:, 1:])
# CumSum of c3 [3, 4] along an axis given at run time.
save("axis_neg1", np.array(-1, dtype=np.int64))
save("axis_2", np.array(2, dtype=np.int64))
save("cumsum_y", np.cumsum(c3, axis=-1, dtype=np.float32))
# Squeeze and Unsqueeze by axes given at run time.
q = f32(3, 1, 4, 1)
save("q", q)
save("axes_1_neg1", np.array([1, -1], dtype=np.int64))
save("axes_0_2", np.array([0, 2], dtype=np.int64))
save("axes_1_1", np.array([1, 1], dtype=np.int64))
save("axes_neg1_0", np.array([-1, 0], dtype=np.int64))
save("squeeze_y", q.reshape(3, 4))
save("unsqueeze_y", np.expand_dims(c3, axis=(0, 3)))
# Slice of q [3, 1, 4, 1] along axes given at run time: dim 2 from 3 down
# to 0 by -2, dim 0 from 1 on.
save("slice_starts", np.array([3, 1], dtype=np.int64))
save("slice_ends", np.array([-5, 100], dtype=np.int64))
save("slice_steps", np.array([-2, 1], dtype=np.int64))
save("slice_axes", np.array([-2, 0], dtype=np.int64))
save("slice_axes_twice", np.array([2, -2], dtype=np.int64))
save("slice_y", q[1:100, :, 3:-5:-2, :])
# ReduceMean of q [3, 1, 4, 1] along axes given at run time, keepdims 0.
save("reduce_axes", np.array([-2, 0], dtype=np.int64))
save("reduce_y", q.astype(np.float64).mean(axis=(0, 2)).astype(np.float32))
r8 = np.load(os.path.join(out, "r8.npy"))
save("shape_neg_last", np.array([-1, -4], dtype=np.int64))
save("shape_good", np.array([2, -1], dtype=np.int64))
save("reshape_y", r8.reshape(2, -1))
bw3 = f32(3, 4, 3)
save("bw3", bw3)
save("batch_matmul_y",
     (bx3.astype(np.float64) @ bw3.astype(np.float64)).astype(np.float32))

# The ONNX text parser of the onnx in use has no syntax for node names, so
# the model that shows a named node is built with onnx.helper.
graph = helper.make_graph(
    [helper.make_node("Add", ["a", "b"], ["y"], name="Add_named")], "named_add",
    [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N"]),
     helper.make_tensor_value_info("b", TensorProto.FLOAT, ["M"])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save(model, os.path.join(out, "named_add.onnx"))
