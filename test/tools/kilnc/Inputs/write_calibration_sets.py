"""Writes calibration sets for kilnc --calibration (bench/harness's
save_calibration_sets): random inputs of an export (make_inputs), one seed
a set.

usage: write_calibration_sets.py MODEL.onnx OUT SETS BATCH SEQUENCE
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "..", "bench"))
import harness  # noqa: E402

model, out, sets, batch, sequence = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
harness.save_calibration_sets(
    [harness.make_inputs(model, batch, sequence, seed=index) for index in range(sets)], out)
