"""Loads PTX files with the CUDA driver, as the runtime will: the first check
of kilnc's GPU kernels on a machine with a GPU, in seconds and without the
rest of Kiln (a device machine cannot build it). Build the PTX here, carry
the folder over, and run this there:

    for m in models/exports/*.onnx models/hf/*.onnx; do
      build/bin/kilnc $m --target=cuda --gpu=sm_90 --emit=ptx \\
          -o ptx/$(basename $m .onnx).ptx
    done
    python3 bench/cuda_load_ptx.py ptx/*.ptx

For each file it prints the time the driver takes to compile the PTX for
the GPU (cuModuleLoadData: the JIT that an sm_80 PTX needs on a later GPU,
and a share of an artifact's load time), and checks that every kernel the
PTX declares (.entry) can be found in the loaded module. Without a driver
or a GPU it says why and exits 77; a PTX the driver refuses, or a kernel it
cannot find, fails the run (exit 1). The driver is libcuda.so.1, or the
library $KILN_CUDA_DRIVER names.

It has not yet run on a GPU: no session that wrote it had one.
"""

import ctypes
import os
import re
import sys
import time


def check(cuda, call, *args):
    result = getattr(cuda, call)(*args)
    if result != 0:
        name = ctypes.c_char_p()
        cuda.cuGetErrorName(result, ctypes.byref(name))
        raise RuntimeError(f"{call}: {name.value.decode() if name.value else result}")


def main():
    paths = sys.argv[1:]
    if not paths:
        sys.exit(__doc__)
    library = os.environ.get("KILN_CUDA_DRIVER") or "libcuda.so.1"
    try:
        cuda = ctypes.CDLL(library)
        check(cuda, "cuInit", 0)
        device = ctypes.c_int()
        check(cuda, "cuDeviceGet", ctypes.byref(device), 0)
        context = ctypes.c_void_p()
        check(cuda, "cuDevicePrimaryCtxRetain", ctypes.byref(context), device)
        check(cuda, "cuCtxSetCurrent", context)
    except (OSError, AttributeError, RuntimeError) as error:
        print(f"SKIPPED: no CUDA device: {error}")
        sys.exit(77)
    name = ctypes.create_string_buffer(256)
    cuda.cuDeviceGetName(name, 255, device)
    print(f"device 0: {name.value.decode()}")
    failures = 0
    for path in paths:
        with open(path, "rb") as f:
            ptx = f.read()
        kernels = re.findall(rb"^\.visible \.entry (\w+)\(", ptx, re.M)
        module = ctypes.c_void_p()
        start = time.perf_counter()
        try:
            check(cuda, "cuModuleLoadData", ctypes.byref(module), ctypes.c_char_p(ptx + b"\0"))
            seconds = time.perf_counter() - start
            for kernel in kernels:
                function = ctypes.c_void_p()
                check(cuda, "cuModuleGetFunction", ctypes.byref(function), module, kernel)
            check(cuda, "cuModuleUnload", module)
            print(f"PASS {os.path.basename(path)}: {len(kernels)} kernels, "
                  f"loaded in {seconds * 1000:.1f} ms")
        except RuntimeError as error:
            failures += 1
            print(f"FAIL {os.path.basename(path)}: {error}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
