"""Kiln from Python: run compiled artifacts, generate text, compile models.

    import kiln
    session = kiln.InferenceSession("model.kiln")       # as onnxruntime's
    outputs = session.run(None, {"input_ids": ids, "attention_mask": mask})

    llm = kiln.LLM("decoder.kiln", tokenizer="tokenizer_dir")   # as vLLM's
    for output in llm.generate(["Hello"], kiln.SamplingParams(max_tokens=16)):
        print(output.outputs[0].text)

    kiln.compile("model.onnx", "model.kiln", dims={"batch": (1, 8)})

Everything runs in this process through libkiln_runtime (the compiled
extension kiln._kiln), except compile(), which runs the kilnc executable.
"""
import contextlib
import dataclasses
import json
import os
import shutil
import subprocess
import tempfile
from typing import Dict, List, Optional, Sequence, Union

import numpy as np

from . import _kiln
from ._kiln import KilnError, Tokenizer

__all__ = ["InferenceSession", "NodeArg", "LLM", "SamplingParams", "RequestOutput",
           "CompletionOutput", "Tokenizer", "KilnError", "compile"]

# Kiln's dtype names (kiln_dtype_name) as ONNX Runtime's NodeArg types.
_ONNX_TYPES = {"f32": "tensor(float)", "f64": "tensor(double)", "f16": "tensor(float16)",
               "bf16": "tensor(bfloat16)", "i64": "tensor(int64)", "i32": "tensor(int32)",
               "i16": "tensor(int16)", "i8": "tensor(int8)", "u64": "tensor(uint64)",
               "u32": "tensor(uint32)", "u16": "tensor(uint16)", "u8": "tensor(uint8)",
               "bool": "tensor(bool)"}


@dataclasses.dataclass(frozen=True)
class NodeArg:
    """An input or output, as onnxruntime.NodeArg shows it."""
    name: str
    shape: list  # ints, and dim names where the size is symbolic
    type: str    # "tensor(float)", ...


class InferenceSession:
    """onnxruntime.InferenceSession's interface over a Kiln artifact, so that
    code written for ORT ports by changing its import."""

    def __init__(self, path: str, threads: int = 0):
        self._instance = _kiln.Instance(threads)
        self._model = _kiln.Model(self._instance, os.fspath(path))
        self._inputs = [self._node_arg(info) for info in self._model.inputs()]
        self._outputs = [self._node_arg(info) for info in self._model.outputs()]

    @staticmethod
    def _node_arg(info):
        return NodeArg(info["name"], list(info["shape"]), _ONNX_TYPES[info["dtype"]])

    def get_inputs(self) -> List[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        return list(self._outputs)

    def run(self, output_names: Optional[Sequence[str]], input_feed: Dict[str, np.ndarray],
            run_options=None) -> List[np.ndarray]:
        """The outputs named (all, in the model's order, for None), as numpy
        arrays. Inputs are numpy arrays (or anything np.asarray takes)."""
        results = self._model.run({name: np.asarray(value) for name, value in input_feed.items()})
        names = [o.name for o in self._outputs] if output_names is None else list(output_names)
        missing = [name for name in names if name not in results]
        if missing:
            raise KilnError(f"the model has no output {missing[0]!r}")
        return [results[name] for name in names]


@dataclasses.dataclass
class SamplingParams:
    """vLLM's SamplingParams, the fields Kiln's engine implements."""
    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    seed: Optional[int] = None
    max_tokens: int = 16
    stop: Union[str, List[str], None] = None
    stop_token_ids: Optional[List[int]] = None
    ignore_eos: bool = False
    logprobs: Optional[int] = None
    skip_special_tokens: bool = True

    def _engine_params(self, index: int) -> "_kiln.EngineSamplingParams":
        params = _kiln.EngineSamplingParams()
        params.temperature = self.temperature
        params.top_p = self.top_p
        params.top_k = self.top_k
        params.min_p = self.min_p
        params.repetition_penalty = self.repetition_penalty
        params.presence_penalty = self.presence_penalty
        params.frequency_penalty = self.frequency_penalty
        params.max_tokens = self.max_tokens
        params.logprobs = -1 if self.logprobs is None else self.logprobs
        if self.seed is not None:
            # n samples of one seeded request differ, and each is reproducible.
            params.seed = (self.seed + index) % (1 << 64)
            params.has_seed = 1
        return params


@dataclasses.dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: List[int]
    cumulative_logprob: Optional[float]
    logprobs: Optional[List[Dict[int, float]]]
    finish_reason: Optional[str]


@dataclasses.dataclass
class RequestOutput:
    request_id: str
    prompt: Optional[str]
    prompt_token_ids: List[int]
    outputs: List[CompletionOutput]
    finished: bool = True


class LLM:
    """vLLM's offline LLM over a Kiln decoder artifact (compiled with
    kilnc --kv-cache=paged, or as exported) and, for text, its tokenizer
    (a tokenizer.json or its directory). Engine options (block_size,
    kv_cache_bytes, max_num_seqs, max_num_batched_tokens,
    enable_prefix_caching) go to the engine."""

    def __init__(self, model: str, tokenizer: Optional[str] = None, threads: int = 0,
                 **engine_options):
        self._instance = _kiln.Instance(threads)
        self._model = _kiln.Model(self._instance, os.fspath(model))
        options = _kiln.EngineOptions()
        for name, value in engine_options.items():
            if not hasattr(options, name):
                raise TypeError(f"LLM() got an unknown engine option {name!r}")
            setattr(options, name, int(value))
        self._engine = _kiln.Engine(self._model, options)
        self.tokenizer = Tokenizer(os.fspath(tokenizer)) if tokenizer else None
        self._next_id = 0

    def _prompt_ids(self, prompt):
        if isinstance(prompt, dict):
            prompt = prompt["prompt_token_ids"]
        if isinstance(prompt, str):
            if self.tokenizer is None:
                raise KilnError("a text prompt needs a tokenizer: LLM(model, tokenizer=...)")
            return prompt, self.tokenizer.encode(prompt)
        return None, [int(token) for token in prompt]

    def generate(self, prompts, sampling_params: Optional[SamplingParams] = None
                 ) -> List[RequestOutput]:
        """Generates for every prompt (a string, a list of token ids, or
        {"prompt_token_ids": [...]}) at once, through continuous batching;
        the outputs come back in the prompts' order."""
        params = sampling_params or SamplingParams()
        if isinstance(prompts, (str, dict)) or (prompts and isinstance(prompts[0], int)):
            prompts = [prompts]
        stops = [params.stop] if isinstance(params.stop, str) else list(params.stop or [])
        if stops and self.tokenizer is None:
            raise KilnError("stop strings need a tokenizer: LLM(model, tokenizer=...)")
        stop_ids = list(params.stop_token_ids or [])
        if self.tokenizer is not None and not params.ignore_eos and self.tokenizer.eos_token_id is not None:
            stop_ids.append(self.tokenizer.eos_token_id)

        requests = []
        for prompt in prompts:
            text, ids = self._prompt_ids(prompt)
            outputs = [_Sequence(self, index, ids, params, stops) for index in range(params.n)]
            requests.append((text, ids, outputs))
            for sequence in outputs:
                sequence.engine_id = self._engine.add_request(
                    ids, params._engine_params(sequence.index), stop_ids, sequence.on_event)
        while self._engine.has_unfinished():
            self._engine.step()

        results = []
        for text, ids, outputs in requests:
            self._next_id += 1
            if any(s.error for s in outputs):
                raise KilnError(next(s.error for s in outputs if s.error))
            results.append(RequestOutput(str(self._next_id), text, ids,
                                         [s.output() for s in outputs]))
        return results


class _Sequence:
    """One sample of a request: its tokens, text so far and stop strings."""

    def __init__(self, llm, index, prompt_ids, params, stops):
        self.llm, self.index, self.params, self.stops = llm, index, params, stops
        self.engine_id = None
        self.ids, self.logprobs = [], []
        self.text = ""
        self.searched = 0  # how much of the text was searched for stop strings
        self.longest_stop = max((len(stop) for stop in stops), default=0)
        self.finish_reason = None
        self.error = None
        self.detokenizer = (_kiln.Detokenizer(llm.tokenizer, prompt_ids, params.skip_special_tokens)
                            if llm.tokenizer is not None else None)

    def on_event(self, token, logprob, top, finish_reason, error):
        if self.finish_reason is not None:
            return  # stopped at a stop string; the abort is on its way
        if token >= 0:
            self.ids.append(token)
            if self.params.logprobs is not None:
                entry = {token: logprob}
                entry.update({t: lp for t, lp in top})
                self.logprobs.append(entry)
            if self.detokenizer is not None:
                self.text += self.detokenizer.push(token)
        if finish_reason is not None and self.detokenizer is not None:
            self.text += self.detokenizer.finish()
        # A stop string ending in the new text begins at most its length
        # minus one before it; the text before that was searched already.
        start = max(0, self.searched - self.longest_stop + 1)
        self.searched = len(self.text)
        hits = [at for at in (self.text.find(stop, start) for stop in self.stops) if at >= 0]
        if hits:
            self.text = self.text[:min(hits)]
            self.finish_reason = "stop"
            self.llm._engine.abort(self.engine_id)
            return
        if finish_reason is not None:
            self.finish_reason = finish_reason
            self.error = error

    def output(self):
        cumulative = (sum(entry[token] for entry, token in zip(self.logprobs, self.ids))
                      if self.logprobs else None)
        return CompletionOutput(self.index, self.text, self.ids, cumulative,
                                self.logprobs if self.params.logprobs is not None else None,
                                self.finish_reason)


def _kilnc() -> str:
    """kilnc: $KILN_KILNC, the one installed with this package (pip), the
    build tree this package sits in, or PATH."""
    package = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.environ.get("KILN_KILNC"),
                  os.path.join(package, "bin", "kilnc"),
                  os.path.join(os.path.dirname(os.path.dirname(package)), "bin", "kilnc"),
                  shutil.which("kilnc")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise KilnError("kilnc not found: set KILN_KILNC, or put kilnc on PATH")


def save_calibration_sets(directory, feeds: Sequence[Dict[str, np.ndarray]]) -> str:
    """Writes input sets as kilnc --calibration reads them: one subdirectory
    per set, with NAME.npy for each input ("/" in a name written as "_").
    Returns directory."""
    for index, inputs in enumerate(feeds):
        set_directory = os.path.join(directory, f"set{index:04d}")
        os.makedirs(set_directory, exist_ok=True)
        for name, array in inputs.items():
            np.save(os.path.join(set_directory, name.replace("/", "_") + ".npy"),
                    np.ascontiguousarray(array))
    return os.fspath(directory)


def compile(onnx_path: str, output_path: str, *, dims: Optional[Dict[str, tuple]] = None,
            kv_cache: Optional[str] = None, kv_block_size: Optional[int] = None,
            kv_dtype: Optional[str] = None,
            cpu: Optional[str] = None, disable: Sequence[str] = (),
            quantize: Optional[str] = None, quant_group_size: Optional[int] = None,
            quantize_lm_head: bool = False,
            calibration: Union[None, str, os.PathLike, Sequence[Dict[str, np.ndarray]]] = None,
            calibration_method: Optional[str] = None, accuracy_budget: Optional[str] = None,
            report: Optional[str] = None, extra_args: Sequence[str] = ()) -> str:
    """Compiles an ONNX model into a Kiln artifact with kilnc. dims bounds
    symbolic dims ({"batch": (1, 8)}); kv_cache="paged" gives a decoder the
    engine's paged KV interface, whose pool kv_dtype="f16" or "bf16" stores
    in 16 bits; quantize="int8-weight" ("int4-weight")
    stores the products' weights as int8 (4-bit values with zero points),
    quant_group_size rows per scale, the LM head too with
    quantize_lm_head; quantize="int8-dynamic" (W8A8) also quantizes each
    product's input per row at run time, and quantize="int8" with one scale
    per product fixed from calibration. calibration is kilnc's directory of
    input sets, or a list of {input name: array} feeds (written to a
    temporary one): quantize="int8" takes its input ranges from them
    (calibration_method "minmax" or "percentile"), and every mode is
    measured on them against f32, in the report (a JSON file path) and
    against accuracy_budget ("top1>=0.99,max-rel<=0.05"). Returns
    output_path; a refusal raises KilnError with kilnc's message."""
    with contextlib.ExitStack() as cleanup:
        if calibration is not None and not isinstance(calibration, (str, os.PathLike)):
            calibration = save_calibration_sets(
                cleanup.enter_context(tempfile.TemporaryDirectory(prefix="kiln_calibration_")),
                calibration)
        command = [_kilnc(), os.fspath(onnx_path), "-o", os.fspath(output_path)]
        for name, (low, high) in (dims or {}).items():
            command.append(f"--dim={name}={low}:{high}")
        valued = {"--kv-cache": kv_cache, "--kv-block-size": kv_block_size,
                  "--kv-dtype": kv_dtype, "--cpu": cpu,
                  "--quantize": quantize, "--quant-group-size": quant_group_size,
                  "--calibration": calibration, "--calibration-method": calibration_method,
                  "--accuracy-budget": accuracy_budget, "--report": report}
        command += [f"{flag}={os.fspath(value) if isinstance(value, os.PathLike) else value}"
                    for flag, value in valued.items() if value is not None]
        if disable:
            command.append("--disable=" + ",".join(disable))
        if quantize_lm_head:
            command.append("--quantize-lm-head")
        command += list(extra_args)
        run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        raise KilnError(run.stderr.strip() or f"kilnc exited with {run.returncode}")
    return os.fspath(output_path)
