// RUN: kiln-opt %s --split-input-file --kiln-lower-to-cpu-kernels --kiln-convert-to-linalg --verify-diagnostics

// Tests that the microkernel-backed ops refuse element types the CPU
// runtime's kernels do not have, naming the op (and the conversion then
// reports the op it could not lower).

func.func @linear_f16(%x: tensor<8x64xf16>, %w: tensor<64x32xf16>) -> tensor<8x32xf16> {
  // expected-error @+2 {{'kiln.linear' op runs on f32 only in the CPU backend}}
  // expected-error @+1 {{failed to legalize operation 'kiln.linear'}}
  %y = kiln.linear %x, %w : (tensor<8x64xf16>, tensor<64x32xf16>) -> tensor<8x32xf16>
  return %y : tensor<8x32xf16>
}

// -----

func.func @attention_f16(%q: tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16> {
  // expected-error @+2 {{'kiln.attention' op runs on f32 only in the CPU backend}}
  // expected-error @+1 {{failed to legalize operation 'kiln.attention'}}
  %o = kiln.attention %q, %q, %q {scale = 1.0 : f32} : (tensor<1x4x8x16xf16>, tensor<1x4x8x16xf16>, tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16>
  return %o : tensor<1x4x8x16xf16>
}
