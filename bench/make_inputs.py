"""Writes random inputs for a models/ export as .npy files and prints the
matching kiln-run / run_ort.js --input flags.

usage: make_inputs.py MODEL.onnx --out DIR [--batch B] [--sequence S] [--past P]
"""

import argparse
import os

import harness

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("model")
parser.add_argument("--out", required=True)
parser.add_argument("--batch", type=int, default=1)
parser.add_argument("--sequence", type=int, default=16)
parser.add_argument("--past", type=int, default=0)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()
os.makedirs(args.out, exist_ok=True)
inputs = harness.make_inputs(args.model, args.batch, args.sequence, args.past,
                             seed=args.seed)
print(" ".join(harness.save_inputs(inputs, args.out)))
