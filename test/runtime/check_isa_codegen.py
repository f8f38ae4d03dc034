#!/usr/bin/env python3
"""Checks that the runtime's wide-vector kernels are compiled for their ISA.

The kernels are written once on GCC vector extensions of W floats and
instantiated inside functions marked target("avx512f") or target("avx2,fma").
Code the compiler puts out of line from such a function (a lambda, a helper
not forced inline) does not inherit the target and is built for baseline
x86-64, where a 16-float vector becomes spilled SSE pairs: correct, and 4x
slower, so no correctness test notices. A function of kiln::rt whose name says
it is a W = 8 or 16 instantiation or an AVX2/AVX-512 entry must therefore hold
no legacy (non-VEX) SSE arithmetic on packed floats.

usage: check_isa_codegen.py OBJDUMP LIBRARY
"""
import re
import subprocess
import sys

# Legacy SSE packed-float instructions: what baseline code uses for vectors.
# VEX and EVEX forms start with "v", so they never match.
LEGACY_SSE = re.compile(r"^(mul|add|sub|div|max|min|and|or|xor|shuf|unpck[lh])ps\b|^mov[au]ps\b")
WIDE = re.compile(r"<(8|16)>|avx512|avx2", re.IGNORECASE)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    objdump, library = sys.argv[1:]
    listing = subprocess.run([objdump, "-d", "-C", "--no-show-raw-insn", library],
                             check=True, capture_output=True, text=True).stdout
    checked, bad = 0, {}
    name = None
    for line in listing.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if header:
            symbol = header.group(1)
            wide = "kiln::rt::" in symbol and WIDE.search(symbol)
            name = symbol if wide else None
            checked += bool(wide)
            continue
        if name is None:
            continue
        parts = line.split("\t")
        if len(parts) >= 2 and LEGACY_SSE.match(parts[1].strip()):
            bad[name] = bad.get(name, 0) + 1
    if checked == 0:
        sys.exit(f"check_isa_codegen: no wide kernels found in {library}: "
                 "the naming this check relies on changed")
    for symbol, count in sorted(bad.items()):
        print(f"{count:6d} legacy SSE instructions in {symbol}")
    if bad:
        sys.exit(f"check_isa_codegen: {len(bad)} of {checked} wide kernels are "
                 "built for baseline x86-64 (see above)")
    print(f"check_isa_codegen: {checked} wide kernels, all built for their ISA")


if __name__ == "__main__":
    main()
