// RUN: kiln-opt %s --split-input-file --kiln-page-kv-cache --verify-diagnostics

// Where kiln-page-kv-cache does not fire, it says why, naming the culprit.

// Does not fire when the past is read by anything but its attention and
// reads of its batch and length: the past would have to exist as a tensor.

// expected-error @below {{kiln-page-kv-cache: past_key_values.0.key is read by 'kiln.neg': only its layer's fused attention and reads of its batch and length can take a paged cache}}
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids"}, %mask: tensor<?x?xi64> {kiln.name = "attention_mask"},
                %q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>,
                %pk: tensor<?x2x?x16xf32> {kiln.name = "past_key_values.0.key"},
                %pv: tensor<?x2x?x16xf32> {kiln.name = "past_key_values.0.value"})
    -> (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>) {
  %o, %presents:2 = kiln.attention %q, %k, %v past %pk, %pv {scale = 2.500000e-01 : f32}
      : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>)
      -> (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>)
  %n = kiln.neg %pk : tensor<?x2x?x16xf32>
  return %o, %n : tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>
}

// -----

// Does not fire when a present feeds more than the outputs: the paged
// interface returns only the new rows.

// expected-error @below {{kiln-page-kv-cache: the present of layer 0 is read by 'kiln.neg', not only returned}}
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids"}, %mask: tensor<?x?xi64> {kiln.name = "attention_mask"},
                %q: tensor<?x4x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>,
                %pk: tensor<?x2x?x16xf32> {kiln.name = "past_key_values.0.key"},
                %pv: tensor<?x2x?x16xf32> {kiln.name = "past_key_values.0.value"})
    -> (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>) {
  %o, %presents:2 = kiln.attention %q, %k, %v past %pk, %pv {scale = 2.500000e-01 : f32}
      : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>)
      -> (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>)
  %n = kiln.neg %presents#0 : tensor<?x2x?x16xf32>
  return %o, %n : tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>
}

// -----

// Does not fire without the inputs that give the padded past's width, nor
// without a past.

// expected-error @below {{kiln-page-kv-cache: the model needs inputs input_ids and attention_mask}}
func.func @main(%q: tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32> {
  return %q : tensor<?x4x?x16xf32>
}

// -----



// expected-error @below {{kiln-page-kv-cache: the model has no past_key_values.N.key/.value inputs}}
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids"}, %mask: tensor<?x?xi64> {kiln.name = "attention_mask"}) -> tensor<?x?xi64> {
  return %ids : tensor<?x?xi64>
}
