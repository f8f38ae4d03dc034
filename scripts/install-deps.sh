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
  # Artifacts: the manifest (JSON) and the checksum (zlib's CRC-32)
  nlohmann-json3-dev zlib1g-dev
  # The tokenizer: tokenizer.json patterns and Unicode normalization
  libpcre2-dev libutf8proc-dev pkg-config
  # kiln-serve's HTTP server
  libcpp-httplib-dev
  # The Python package: pybind11, Python's headers, pytest
  pybind11-dev python3-dev python3-pytest
  # Linking the generated code into a shared object (ld; lld is used if present)
  binutils
  # Unit tests
  libgtest-dev libgmock-dev
  # The importer's fuzzer: clang with libFuzzer and the sanitizer runtimes
  clang-19 libclang-rt-19-dev
  # models/export.py and the export test: Debian's interpreter with torch and onnx
  python3 python3-onnx python3-numpy python3-torch
  # bench/: the peak resident set of each process (GNU time), and
  # bench/serve.py's plot
  time python3-matplotlib
)
# Node.js runs ONNX Runtime from npm (bench/ort), the correctness oracle and
# peer. The machine image may carry its own; apt is asked only when it has none.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  packages+=(nodejs npm)
fi

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

# npm packages, each folder pinned by its package-lock.json:
#   bench/ort            ONNX Runtime's CPU build, the correctness oracle and peer
#   scripts/tokenizers   the tokenizer and chat-template references, and the
#                        vocabularies the tokenizer tests convert
# --ignore-scripts: onnxruntime-node's install script would try to download a
# GPU add-on.
install_npm_folder() {
  local dir="$ROOT/$1"
  shift
  local package
  for package in "$@"; do
    if [ ! -f "$dir/node_modules/$package/package.json" ]; then
      echo "install-deps: installing the npm packages of $dir"
      (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund)
      return
    fi
  done
  echo "install-deps: the npm packages of $dir are installed"
}
install_npm() {
  install_npm_folder bench/ort onnxruntime-node
  install_npm_folder scripts/tokenizers @huggingface/tokenizers @huggingface/jinja \
    gpt3-tokenizer llama-tokenizer-js @anthropic-ai/tokenizer
}
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages are installed"
  install_npm
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
install_npm
