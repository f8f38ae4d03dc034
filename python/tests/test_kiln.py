"""The kiln Python package against the tools it wraps: InferenceSession
against kiln-run, LLM against kiln-generate and kiln-tokenize, compile
against kilnc. Run by ctest (python_package) with the paths in the
environment."""
import importlib.util
import json
import os
import subprocess

import numpy as np
import pytest

import kiln

BIN = os.environ["KILN_BIN"]
MODELS = os.environ["KILN_MODELS"]
SERVE_MODEL = os.environ["KILN_SERVE_MODEL"]
TOKENIZER = os.environ["KILN_GPT2_TOKENIZER"]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("kiln")


@pytest.fixture(scope="module")
def bert(work):
    return kiln.compile(os.path.join(MODELS, "exports", "bert_tiny.onnx"), work / "bert.kiln",
                        dims={"batch": (1, 4), "sequence": (1, 32)})


@pytest.fixture(scope="module")
def gpt2_paged(work):
    return kiln.compile(os.path.join(MODELS, "exports", "gpt2_tiny.onnx"), work / "gpt2.kiln",
                        kv_cache="paged", dims={"batch": (1, 8), "sequence": (1, 64),
                                                "total_sequence": (1, 128)})


def test_inference_session_matches_kiln_run(bert, work):
    session = kiln.InferenceSession(bert)
    names = [i.name for i in session.get_inputs()]
    assert names == ["input_ids", "attention_mask", "token_type_ids"]
    assert session.get_inputs()[0].shape == ["batch", "sequence"]
    assert session.get_inputs()[0].type == "tensor(int64)"
    assert session.get_outputs()[0].type == "tensor(float)"
    rng = np.random.default_rng(0)
    feeds = {"input_ids": rng.integers(0, 256, (2, 9), dtype=np.int64),
             "attention_mask": np.ones((2, 9), dtype=np.int64),
             "token_type_ids": np.zeros((2, 9), dtype=np.int64)}
    outputs = session.run(None, feeds)
    flags = []
    for name, value in feeds.items():
        np.save(work / f"{name}.npy", value)
        flags += ["--input", f"{name}={work / (name + '.npy')}"]
    subprocess.run([os.path.join(BIN, "kiln-run"), bert, *flags, "--output-dir", work / "out"],
                   check=True, capture_output=True)
    for output, value in zip(session.get_outputs(), outputs):
        expected = np.load(work / "out" / f"{output.name}.npy")
        assert value.shape == expected.shape and value.dtype == expected.dtype
        np.testing.assert_array_equal(value, expected)
    # Asking for one output by name, as ORT code does.
    (first,) = session.run([session.get_outputs()[0].name], feeds)
    np.testing.assert_array_equal(first, outputs[0])


def test_inference_session_errors(bert):
    session = kiln.InferenceSession(bert)
    with pytest.raises(kiln.KilnError, match="no input 'nope'"):
        session.run(None, {"nope": np.zeros((1, 1), dtype=np.int64)})
    with pytest.raises(kiln.KilnError, match="no output 'nope'"):
        session.run(["nope"], {"input_ids": np.zeros((1, 4), dtype=np.int64),
                               "attention_mask": np.ones((1, 4), dtype=np.int64),
                               "token_type_ids": np.zeros((1, 4), dtype=np.int64)})
    with pytest.raises(kiln.KilnError):
        kiln.InferenceSession("/nonexistent.kiln")


def test_unsigned_tensors(work):
    """uint8..uint64 numpy arrays in and out, with the values numpy gives:
    the model and its reference are kiln-run's unsigned.test's."""
    inputs_dir = os.path.join(os.path.dirname(__file__), "..", "..", "test", "tools",
                              "kiln-run", "Inputs")
    spec = importlib.util.spec_from_file_location(
        "numpy_reference", os.path.join(inputs_dir, "numpy_reference.py"))
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    session = kiln.InferenceSession(
        kiln.compile(os.path.join(inputs_dir, "unsigned.onnxtxt"), work / "unsigned.kiln"))
    assert session.get_inputs()[0].type == "tensor(uint8)"
    feeds = reference.unsigned_inputs()
    outputs = session.run(None, feeds)
    expected = reference.unsigned_outputs(feeds)
    assert [o.name for o in session.get_outputs()] == list(expected)
    for value, want in zip(outputs, expected.values()):
        assert value.dtype == want.dtype and np.array_equal(value, want)


def test_compile_reports_kilnc_errors(work):
    bad = work / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(kiln.KilnError, match="bad.onnx"):
        kiln.compile(bad, work / "bad.kiln")


@pytest.mark.parametrize("mode, group_size, tolerance", [("int8-weight", 32, 0.02),
                                                       ("int4-weight", 32, 0.1),
                                                       ("int8-dynamic", None, 0.03)])
def test_compile_quantized(bert, work, mode, group_size, tolerance):
    # The quantized build runs through the same session API, its weights a
    # fraction of the f32 build's, its outputs close to them (4-bit values
    # further than int8; W8A8 scales whole columns and its inputs too); a
    # bad option is kilnc's refusal.
    quantized = kiln.compile(os.path.join(MODELS, "exports", "bert_tiny.onnx"),
                             work / f"bert_{mode}.kiln", dims={"batch": (1, 8), "sequence": (1, 128)},
                             quantize=mode, quant_group_size=group_size)
    assert os.path.getsize(quantized) < os.path.getsize(bert)
    feeds = {"input_ids": np.arange(8, dtype=np.int64).reshape(1, 8),
             "attention_mask": np.ones((1, 8), dtype=np.int64),
             "token_type_ids": np.zeros((1, 8), dtype=np.int64)}
    f32 = kiln.InferenceSession(bert).run(None, feeds)[0]
    outputs = kiln.InferenceSession(quantized).run(None, feeds)[0]
    assert not np.array_equal(f32, outputs)
    assert np.max(np.abs(outputs - f32)) <= tolerance * np.max(np.abs(f32))
    with pytest.raises(kiln.KilnError, match="quant-group-size must be positive"):
        kiln.compile(os.path.join(MODELS, "exports", "bert_tiny.onnx"), work / "bad.kiln",
                     quantize=mode, quant_group_size=0)


def test_compile_calibrated(bert, work):
    # Static W8A8 from feeds: kilnc runs the f32 build on them for the
    # input ranges and reports the quantized build's accuracy against f32
    # on them; a budget it cannot keep is kilnc's refusal.
    rng = np.random.default_rng(0)
    feeds = [{"input_ids": rng.integers(0, 256, size=(2, 16), dtype=np.int64),
              "attention_mask": np.ones((2, 16), dtype=np.int64),
              "token_type_ids": np.zeros((2, 16), dtype=np.int64)} for _ in range(2)]
    model = os.path.join(MODELS, "exports", "bert_tiny.onnx")
    dims = {"batch": (1, 8), "sequence": (1, 128)}
    report = work / "calibrated.json"
    quantized = kiln.compile(model, work / "bert_int8.kiln", dims=dims, quantize="int8",
                             calibration=feeds, calibration_method="percentile",
                             report=report)
    with open(report) as f:
        calibration = json.load(f)["calibration"]
    assert calibration["method"] == "percentile" and calibration["sets"] == 2
    assert calibration["accuracy"]["positions"] == 2 * 2 * 16
    f32 = kiln.InferenceSession(bert).run(None, feeds[0])[0]
    outputs = kiln.InferenceSession(quantized).run(None, feeds[0])[0]
    assert not np.array_equal(f32, outputs)
    assert np.max(np.abs(outputs - f32)) <= 0.05 * np.max(np.abs(f32))
    with pytest.raises(kiln.KilnError, match="max relative error .* exceeds 0"):
        kiln.compile(model, work / "over.kiln", dims=dims, quantize="int8",
                     calibration=feeds, accuracy_budget="max-rel<=0")


def kiln_generate(model, prompts, *flags):
    command = [os.path.join(BIN, "kiln-generate"), model, "--json", *flags]
    for prompt in prompts:
        command += ["--prompt-ids", ",".join(map(str, prompt))]
    lines = subprocess.run(command, check=True, capture_output=True, text=True).stdout.splitlines()
    return [json.loads(line)["output_ids"] for line in lines]


def test_llm_token_ids_match_kiln_generate(gpt2_paged):
    llm = kiln.LLM(gpt2_paged)
    prompts = [[1, 2, 3], [9, 8, 7, 6, 5], [200]]
    params = kiln.SamplingParams(temperature=0, max_tokens=6)
    outputs = llm.generate(prompts, params)
    assert [o.prompt_token_ids for o in outputs] == prompts
    expected = kiln_generate(gpt2_paged, prompts, "--max-tokens", "6", "--temperature", "0")
    assert [o.outputs[0].token_ids for o in outputs] == expected
    assert all(o.outputs[0].finish_reason == "length" for o in outputs)
    # Seeded samples: reproducible, and as kiln-generate draws them.
    seeded = kiln.SamplingParams(temperature=1.0, top_p=0.9, seed=5, max_tokens=8)
    first = [o.outputs[0].token_ids for o in llm.generate(prompts, seeded)]
    assert first == [o.outputs[0].token_ids for o in llm.generate(prompts, seeded)]
    assert first == kiln_generate(gpt2_paged, prompts, "--max-tokens", "8", "--seed", "5",
                                  "--top-p", "0.9")


def test_llm_text(tmp_path):
    llm = kiln.LLM(SERVE_MODEL, tokenizer=TOKENIZER)
    params = kiln.SamplingParams(temperature=1.0, repetition_penalty=5.0, seed=3, max_tokens=12,
                                 n=2, logprobs=1)
    (output,) = llm.generate("The quick brown fox", params)
    assert output.prompt == "The quick brown fox"
    assert output.prompt_token_ids == llm.tokenizer.encode("The quick brown fox")
    assert len(output.outputs) == 2 and output.outputs[0].token_ids != output.outputs[1].token_ids
    for completion in output.outputs:
        assert completion.text == llm.tokenizer.decode(completion.token_ids, True)
        assert len(completion.logprobs) == 12 and completion.cumulative_logprob < 0
    # A stop string ends the text before it.
    text = output.outputs[0].text
    stop = text[len(text) // 2:len(text) // 2 + 3]
    (cut,) = llm.generate("The quick brown fox",
                          kiln.SamplingParams(temperature=1.0, repetition_penalty=5.0, seed=3,
                                              max_tokens=12, stop=stop))
    assert cut.outputs[0].text == text[:text.index(stop)]
    assert cut.outputs[0].finish_reason == "stop"


def test_llm_refuses_text_without_a_tokenizer(gpt2_paged):
    with pytest.raises(kiln.KilnError, match="needs a tokenizer"):
        kiln.LLM(gpt2_paged).generate("hello")
    with pytest.raises(TypeError, match="unknown engine option"):
        kiln.LLM(gpt2_paged, max_seqs=3)


def test_tokenizer():
    tokenizer = kiln.Tokenizer(TOKENIZER)
    assert tokenizer.encode("Hello world") == [15496, 995]
    assert tokenizer.decode([15496, 995]) == "Hello world"
    assert tokenizer.vocab_size == 50257 and tokenizer.eos_token_id == 50256


def test_tokenizer_pairs():
    # GPT-2's ByteLevel post-processor adds nothing: the two encodings in
    # turn, the pair's of type 1 (the C++ tests pin each post-processor).
    tokenizer = kiln.Tokenizer(TOKENIZER)
    ids, type_ids = tokenizer.encode_pair("Hello", " world")
    assert ids == [15496, 995] and type_ids == [0, 1]
    assert tokenizer.encode_pair("Hello") == ([15496], [0])
