"""Writes damaged variants of a good .kiln artifact, one file per kind of damage.

usage: corrupt_artifact.py GOOD.kiln OUT_DIR [--set=damaged|inconsistent|reserved]

The layout (runtime/include/kiln/abi/artifact_format.h) is an 80-byte little-endian header

    0  magic[8] "KILNART\\0"     8  formatVersion u32   12 headerSize u32
    16 fileSize u64             24 manifestOffset u64  32 manifestSize u64
    40 codeOffset u64           48 codeSize u64        56 weightsOffset u64
    64 weightsSize u64          72 checksum u32        76 reserved u32

followed by the manifest JSON, the code (an ELF shared object) and the weights.
The checksum is zlib's CRC-32 of the whole file with the checksum field read as
zero. Variants that must get past the checksum to reach the check they test
(bounds, manifest contents, CPU features, code) have it recomputed; the others
keep the original checksum so that the first check that notices them fires.

Each variant is OUT_DIR/NAME.kiln. The script prints the good artifact's
layout, "header: file SIZE, manifest OFFSET +SIZE, code OFFSET +SIZE, weights
OFFSET +SIZE", then "NAME: SIZE bytes" for each variant in the order main()
makes them, then "missing feature: FEATURE", the CPU feature that
missing-cpu-feature.kiln requires (one this host lacks per /proc/cpuinfo, or a
made-up name on a host that has them all), so that a test can check messages
that quote these numbers without hard-coding them.

--set=damaged (the default) writes the damaged variants main() lists. The
other sets are for tests of known bugs, kept apart so that they do not change
the damaged set: --set=inconsistent writes well-formed manifests (checksum
recomputed) that disagree with the code: no weights, an input or an output
dropped, an output's rank cut by one, an arena 64 bytes smaller than
the code's; --set=reserved writes
reserved-nonzero.kiln, whose header's reserved field (documented as zero) is
1, checksum recomputed.
"""
import json
import os
import struct
import sys
import zlib

HEADER = struct.Struct("<8sIIQQQQQQQII")
FIELDS = ("magic", "formatVersion", "headerSize", "fileSize", "manifestOffset",
          "manifestSize", "codeOffset", "codeSize", "weightsOffset", "weightsSize",
          "checksum", "reserved")
CHECKSUM_OFFSET = 72
# The version this script's layout is written for (kiln/abi/artifact_format.h).
FORMAT_VERSION = 10

# kiln/abi/cpu_features.h's kCheckableCpuFeatures, each with its name in
# /proc/cpuinfo's flags; the newest first, so the one picked is one this host
# is least likely to have.
CPU_FEATURES = [
    ("avx512fp16", "avx512_fp16"), ("avx512bf16", "avx512_bf16"),
    ("avx512vnni", "avx512_vnni"), ("avx512vbmi", "avx512vbmi"),
    ("avx512ifma", "avx512ifma"), ("avx512vl", "avx512vl"), ("avx512bw", "avx512bw"),
    ("avx512cd", "avx512cd"), ("avx512dq", "avx512dq"), ("avx512f", "avx512f"),
    ("movbe", "movbe"), ("lzcnt", "abm"), ("bmi2", "bmi2"), ("bmi", "bmi1"),
    ("f16c", "f16c"), ("fma", "fma"), ("avx2", "avx2"), ("avx", "avx"),
    ("popcnt", "popcnt"), ("sse4.2", "sse4_2"),
]


def host_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def read_header(data):
    return dict(zip(FIELDS, HEADER.unpack_from(data, 0)))


def write_header(data, header):
    HEADER.pack_into(data, 0, *(header[name] for name in FIELDS))


def set_field(data, name, value):
    header = read_header(data)
    header[name] = value
    write_header(data, header)


def fix_checksum(data):
    zeroed = bytes(data[:CHECKSUM_OFFSET]) + b"\0\0\0\0" + bytes(data[CHECKSUM_OFFSET + 4:])
    struct.pack_into("<I", data, CHECKSUM_OFFSET, zlib.crc32(zeroed) & 0xFFFFFFFF)


def flip(data, offset):
    data[offset] ^= 0x5A


def main():
    good_path, out_dir = sys.argv[1], sys.argv[2]
    which = sys.argv[3] if len(sys.argv) > 3 else "--set=damaged"
    assert which in ("--set=damaged", "--set=inconsistent", "--set=reserved"), which
    good = bytearray(open(good_path, "rb").read())
    h = read_header(good)
    assert h["magic"] == b"KILNART\0" and h["formatVersion"] == FORMAT_VERSION, "not a good artifact"
    fixed = bytearray(good)
    fix_checksum(fixed)
    assert fixed == good, "the checksum recipe does not reproduce the artifact's checksum"
    manifest = json.loads(bytes(good[h["manifestOffset"]:h["manifestOffset"] + h["manifestSize"]]))
    assert manifest["weights"], "the model must have an outlined weight"
    os.makedirs(out_dir, exist_ok=True)
    variants = {}

    def variant(name, data, recompute=False):
        if recompute:
            fix_checksum(data)
        variants[name] = data

    def with_fields(name, **fields):
        data = bytearray(good)
        for key, value in fields.items():
            set_field(data, key, value)
        variant(name, data, recompute=True)

    def with_manifest(name, edit):
        """A variant whose manifest is `edit`ed and rewritten in its section,
        checksum recomputed. `edit` changes the manifest in place (what it
        returns is ignored), or returns the bytes to write instead."""
        edited = json.loads(json.dumps(manifest))
        result = edit(edited)
        text = result if isinstance(result, bytes) else \
            json.dumps(edited, indent=2, sort_keys=True).encode()
        room = h["codeOffset"] - h["manifestOffset"]
        assert len(text) <= room, "the edited manifest does not fit before the code"
        data = bytearray(good)
        data[h["manifestOffset"]:h["codeOffset"]] = text + b"\0" * (room - len(text))
        set_field(data, "manifestSize", len(text))
        variant(name, data, recompute=True)

    if which == "--set=inconsistent":
        with_manifest("inconsistent-no-weights", lambda m: m.update(weights=[]))
        with_manifest("inconsistent-drop-input", lambda m: m["inputs"].pop())
        with_manifest("inconsistent-drop-output", lambda m: m["outputs"].pop())
        with_manifest("inconsistent-output-rank", lambda m: m["outputs"][0]["dims"].pop())
        # The code would write past a smaller arena.
        with_manifest("inconsistent-arena",
                      lambda m: m.update(arena_bytes=max(m["arena_bytes"] - 64, 0)))
        return write(out_dir, h, variants, None)
    if which == "--set=reserved":
        with_fields("reserved-nonzero", reserved=1)
        return write(out_dir, h, variants, None)

    # Header identity.
    data = bytearray(good)
    data[0:8] = b"NOTKILN\0"
    variant("bad-magic", data)
    data = bytearray(good)
    # An older artifact's code calls older microkernels.
    set_field(data, "formatVersion", FORMAT_VERSION - 1)
    variant("older-version", data)
    data = bytearray(good)
    set_field(data, "headerSize", 64)
    variant("header-size", data)

    # Truncated at several points, and grown.
    variant("empty", bytearray())
    variant("truncated-header", good[:40])
    for section in ("manifest", "code", "weights"):
        cut = h[section + "Offset"] + h[section + "Size"] // 2
        variant("truncated-" + section, good[:cut])
    variant("trailing-bytes", good + b"\0" * 16)

    # One flipped byte anywhere: only the checksum notices.
    data = bytearray(good)
    flip(data, CHECKSUM_OFFSET + 1)
    variant("flipped-checksum", data)
    data = bytearray(good)
    flip(data, 76)  # the reserved field
    variant("flipped-header", data)
    data = bytearray(good)
    flip(data, h["manifestOffset"] + h["manifestSize"] + 1)  # the padding after it
    variant("flipped-padding", data)
    for section in ("manifest", "code", "weights"):
        data = bytearray(good)
        flip(data, h[section + "Offset"] + h[section + "Size"] // 3)
        variant("flipped-" + section, data)

    # Header fields pointing outside the file (checksum recomputed).
    size = h["fileSize"]
    with_fields("manifest-outside", manifestOffset=size + 4096)
    with_fields("manifest-in-header", manifestOffset=8)
    with_fields("code-outside", codeSize=size)
    with_fields("weights-outside", weightsOffset=size - 512)
    with_fields("weights-size-overflow", weightsSize=2**64 - 1)
    with_fields("weights-unaligned", weightsOffset=h["weightsOffset"] + 64,
                weightsSize=h["weightsSize"] - 64)

    # Manifest contents (checksum recomputed).
    def not_json(m):
        text = json.dumps(m, indent=2, sort_keys=True).encode()
        return text[:len(text) // 2]
    with_manifest("manifest-not-json", not_json)
    with_manifest("manifest-not-object", lambda m: json.dumps([m]).encode())
    with_manifest("manifest-missing-inputs", lambda m: m.pop("inputs"))
    with_manifest("manifest-missing-dtype", lambda m: m["inputs"][0].pop("dtype"))
    with_manifest("manifest-unknown-dtype", lambda m: m["outputs"][1].update(dtype="f33"))
    with_manifest("manifest-dims-not-array", lambda m: m["inputs"][1].update(dims=16))
    with_manifest("manifest-negative-dim", lambda m: m["inputs"][1]["dims"].__setitem__(0, -16))
    with_manifest("manifest-bad-bounds",
                  lambda m: m["inputs"][0]["dims"][0].update(min=9, max=8))
    with_manifest("manifest-weight-size", lambda m: m["weights"][0].update(size=512))
    with_manifest("manifest-weight-outside",
                  lambda m: m["weights"][0].update(offset=h["weightsSize"]))
    with_manifest("manifest-weight-unaligned", lambda m: m["weights"][0].update(offset=32))
    with_manifest("manifest-weight-shape",
                  lambda m: m["weights"][0].update(shape=[16, "16"]))
    with_manifest("manifest-gpu-api", lambda m: m.update(
        gpu={"api": "vulkan", "arch": "sm_80", "kernel_checks": []}))
    with_manifest("manifest-gpu-check", lambda m: m.update(
        gpu={"api": "cuda", "arch": "sm_80", "kernel_checks": [3]}))

    # CPU features (checksum recomputed).
    flags = host_flags()
    lacking = [name for name, flag in CPU_FEATURES if flag not in flags]
    if lacking:
        missing = lacking[0]
    else:
        # A host with every checkable feature: fall back to a name no CPU has,
        # which the runtime also reports as lacking.
        missing = "kiln-test-feature"
        print("note: this host has every CPU feature the runtime checks; "
              "missing-cpu-feature.kiln requires " + missing, file=sys.stderr)
    with_manifest("missing-cpu-feature", lambda m: m["target"]["features"].append(missing))
    with_manifest("unknown-cpu-feature",
                  lambda m: m["target"]["features"].append("kiln-test-feature"))
    with_manifest("cpu-feature-not-string", lambda m: m["target"]["features"].insert(0, 42))
    with_manifest("missing-target", lambda m: m.pop("target"))

    # Code that does not load (checksum recomputed).
    data = bytearray(good)
    data[h["codeOffset"]:h["codeOffset"] + h["codeSize"]] = b"\0" * h["codeSize"]
    variant("code-zeroed", data, recompute=True)
    data = bytearray(good)
    code = bytes(data[h["codeOffset"]:h["codeOffset"] + h["codeSize"]])
    assert b"kiln_entry\0" in code, "the code has no kiln_entry symbol name"
    code = code.replace(b"kiln_entry\0", b"kiln_entrx\0")
    data[h["codeOffset"]:h["codeOffset"] + h["codeSize"]] = code
    variant("code-no-entry", data, recompute=True)

    write(out_dir, h, variants, missing)


def write(out_dir, h, variants, missing):
    print(f"header: file {h['fileSize']}, manifest {h['manifestOffset']} +{h['manifestSize']}, "
          f"code {h['codeOffset']} +{h['codeSize']}, weights {h['weightsOffset']} +{h['weightsSize']}")
    for name, data in variants.items():
        with open(os.path.join(out_dir, name + ".kiln"), "wb") as f:
            f.write(data)
        print(f"{name}: {len(data)} bytes")
    if missing:
        print("missing feature: " + missing)


if __name__ == "__main__":
    main()
