#!/usr/bin/python3
"""Trains the small byte-level Llama whose weights measure what quantization
costs in accuracy (test/e2e/quantized_accuracy.py).

Random weights give nearly flat logits, where any noise flips the top-1 and
a perplexity says nothing, so the quantized builds are judged on a model
that has learned something: models/export.py's Llama architecture
(TRAINED_LM_CONFIG there: 256 byte tokens, hidden 192, 4 layers, 1.9M
parameters), trained on the English text Debian ships under /usr/share/doc
(copyright files, READMEs, .txt files and the gzipped ones, each distinct
text once). Files are split by a hash of their contents: one in ten is
held out, and the first HELDOUT_BYTES of those are written next to the
weights, so the test measures perplexity on text the model never saw.

The weights are written as float16 (models/trained/trained_lm.npz, small
enough to check in); the export and every build use exactly those values.
It runs on the CPU's cores for --minutes (default 8) and prints the loss as
it goes.

Debian's torch multiplies through the reference BLAS, about ten times
slower than OpenBLAS; the checked-in weights were trained with Debian's
libopenblas0-pthread put first for this process only:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread \
        /usr/bin/python3 models/train_lm.py --minutes 9

usage: /usr/bin/python3 models/train_lm.py [--out-dir models/trained] [--minutes 8]
"""

import argparse
import gzip
import hashlib
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export  # noqa: E402

CORPUS_ROOT = "/usr/share/doc"
HELDOUT_BYTES = 48 * 1024
SEQUENCE = 128
BATCH = 32
LEARNING_RATE = 3e-3


def read_texts():
    """Every distinct text file under CORPUS_ROOT, as bytes, sorted by path."""
    texts, seen = [], set()
    for directory, _, files in sorted(os.walk(CORPUS_ROOT)):
        for name in sorted(files):
            path = os.path.join(directory, name)
            if os.path.islink(path):
                continue
            try:
                if name.endswith(".gz"):
                    with gzip.open(path, "rb") as f:
                        data = f.read()
                elif name == "copyright" or name.startswith("README") or name.endswith(".txt"):
                    with open(path, "rb") as f:
                        data = f.read()
                else:
                    continue
            except (OSError, EOFError):
                continue
            digest = hashlib.sha256(data).digest()
            # Text only: a NUL byte marks a binary file.
            if data and b"\0" not in data and digest not in seen:
                seen.add(digest)
                texts.append((digest, data))
    return texts


def split_corpus(texts):
    """(training bytes, held-out bytes): one file in ten, by content hash."""
    train, heldout = [], []
    for digest, data in texts:
        (heldout if digest[0] % 10 == 0 else train).append(data)
    return b"\n".join(train), b"\n".join(heldout)


def batches(corpus, generator):
    """Random windows of SEQUENCE + 1 bytes, forever."""
    data = torch.from_numpy(np.frombuffer(corpus, dtype=np.uint8).astype(np.int64))
    while True:
        starts = torch.randint(0, len(data) - SEQUENCE - 1, (BATCH,), generator=generator)
        yield torch.stack([data[s:s + SEQUENCE + 1] for s in starts.tolist()])


def loss_of(model, windows):
    cfg = export.TRAINED_LM_CONFIG
    inputs, targets = windows[:, :-1], windows[:, 1:]
    batch = inputs.shape[0]
    empty = torch.zeros(batch, cfg.num_kv_heads, 0, cfg.head_dim)
    logits, _ = model(inputs, torch.ones(batch, SEQUENCE, dtype=torch.int64),
                      torch.arange(SEQUENCE).expand(batch, -1),
                      [(empty, empty)] * cfg.num_layers)
    return F.cross_entropy(logits.reshape(-1, cfg.vocab_size), targets.reshape(-1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default=os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "trained"))
    parser.add_argument("--minutes", type=float, default=8)
    args = parser.parse_args()
    torch.manual_seed(export.SEED)
    torch.set_num_threads(os.cpu_count())
    generator = torch.Generator().manual_seed(export.SEED)
    train, heldout = split_corpus(read_texts())
    print(f"corpus: {len(train)} bytes to train on, {len(heldout)} held out", flush=True)

    model = export.LlamaForCausalLM(export.TRAINED_LM_CONFIG)
    parameters = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=0.01)
    deadline = time.monotonic() + 60 * args.minutes
    step, recent = 0, []
    for windows in batches(train, generator):
        # Cosine decay over the time budget.
        progress = min(1.0, 1 - (deadline - time.monotonic()) / (60 * args.minutes))
        for group in optimizer.param_groups:
            group["lr"] = LEARNING_RATE * 0.5 * (1 + math.cos(math.pi * progress))
        loss = loss_of(model, windows)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        recent.append(loss.item())
        step += 1
        if step % 50 == 0:
            print(f"step {step}: loss {sum(recent) / len(recent):.3f} nats/byte", flush=True)
            recent = []
        if time.monotonic() >= deadline:
            break

    model.eval()
    with torch.no_grad():
        eval_windows = torch.from_numpy(np.frombuffer(
            heldout[:HELDOUT_BYTES], dtype=np.uint8).astype(np.int64))
        count = (len(eval_windows) - 1) // SEQUENCE
        windows = torch.stack([eval_windows[i * SEQUENCE:(i + 1) * SEQUENCE + 1]
                               for i in range(count)])
        heldout_loss = loss_of(model, windows).item()
    print(f"{parameters} parameters, {step} steps; held-out loss {heldout_loss:.3f} "
          f"nats/byte, perplexity {math.exp(heldout_loss):.3f}")
    os.makedirs(args.out_dir, exist_ok=True)
    np.savez_compressed(os.path.join(args.out_dir, "trained_lm.npz"),
                        **{name: tensor.detach().numpy().astype(np.float16)
                           for name, tensor in model.state_dict().items()})
    with open(os.path.join(args.out_dir, "heldout.txt"), "wb") as f:
        f.write(heldout[:HELDOUT_BYTES])
    return 0


if __name__ == "__main__":
    sys.exit(main())
