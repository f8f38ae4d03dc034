# -*- Python -*-
# lit configuration for Kiln's regression tests.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "Kiln"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt", "unit"]

config.substitutions.append(("%models", config.kiln_models_dir))
config.substitutions.append(("%tokenizers", config.kiln_tokenizers_dir))
config.substitutions.append(("%python", config.python_with_torch))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.kiln_tools_dir, append_path=True)

tools = ["kiln-opt", "kilnc", "kiln-run", "kiln-generate", "kiln-serve", "kiln-tokenize", "FileCheck", "not", "count", "split-file"]
llvm_config.add_tool_substitutions(tools, [config.kiln_tools_dir, config.llvm_tools_dir])

# A CUDA driver without a GPU (test/runtime/FakeCudaDriver.cpp).
config.substitutions.append(
    ("%fake_cuda_driver", os.path.join(config.kiln_obj_root, "lib", "libkiln_fake_cuda_driver.so")))

# CUDA's PTX assembler, where the CUDA toolkit is installed: the GPU
# target's tests assemble what kilnc emits with it.
ptxas = "/usr/local/cuda/bin/ptxas"
if os.access("/usr/local/cuda/lib64/stubs/libcuda.so", os.R_OK):
    config.available_features.add("cuda-stub")
if os.access(ptxas, os.X_OK):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

if os.path.exists(config.python_with_torch):
    config.available_features.add("torch")
