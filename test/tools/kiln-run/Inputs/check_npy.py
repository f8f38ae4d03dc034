"""Compares a tensor kiln-run wrote with the one numpy computed.

usage: check_npy.py GOT.npy EXPECTED.npy

Prints "NAME: DTYPE[SHAPE] matches numpy" (NAME is GOT's file name without
.npy), or "NAME: MISMATCH: ..." and exits 1 on any difference in dtype,
shape or value (beyond float32 rounding).
"""
import os
import sys

import numpy as np

got_path, want_path = sys.argv[1:3]
name = os.path.basename(got_path)[:-len(".npy")]
got, want = np.load(got_path), np.load(want_path)
if got.dtype != want.dtype or got.shape != want.shape:
    print(f"{name}: MISMATCH: got {got.dtype}{list(got.shape)}, "
          f"expected {want.dtype}{list(want.shape)}")
    sys.exit(1)
if not np.allclose(got, want, rtol=1e-5, atol=1e-5):
    error = float(np.max(np.abs(got - want))) if got.size else 0.0
    print(f"{name}: MISMATCH: max abs error {error:g}")
    sys.exit(1)
print(f"{name}: {got.dtype}{list(got.shape)} matches numpy")
