#!/usr/bin/env bash
# Installs every dependency of Kiln's build and tests from Debian's packages.
# Idempotent: it installs only what is missing, and does nothing when all is
# there. Runs as root, or through sudo when that is available.
set -euo pipefail

packages=(
  # Toolchain
  cmake ninja-build ccache g++ make
  # LLVM/MLIR 19 (headers, libMLIR.so, mlir-tblgen) and lit/FileCheck/not
  llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools
  # ONNX (ModelProto, checker, shape inference, text parser) and protobuf
  libonnx-dev libprotobuf-dev
  # Unit tests
  libgtest-dev libgmock-dev
  # models/export.py and the export test: Debian's interpreter with torch and onnx
  python3 python3-onnx python3-numpy python3-torch
)

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages are installed"
  exit 0
fi

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then
    as_root=(sudo)
  else
    echo "install-deps: missing packages: ${missing[*]}" >&2
    echo "install-deps: run this script as root to install them" >&2
    exit 1
  fi
fi

echo "install-deps: installing ${missing[*]}"
"${as_root[@]}" apt-get update -q
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
