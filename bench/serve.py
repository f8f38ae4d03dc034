#!/usr/bin/env python3
"""kiln-serve under load, like vLLM's benchmark_serving, in one run:

1. Consistency: --concurrency seeded requests at once, streamed and then
   answered whole, against kiln-generate's tokens for the same prompts and
   seed; every answer's text against the decode of its own ids; and where
   tokens part, how far the two runs' logprobs were apart before.
2. Server overhead: the same fixed-seed requests through HTTP (closed loop,
   --concurrency streams) against kiln-bench-throughput running them
   in-process (--requests): output tokens/s, and their ratio.
3. Rates: Poisson arrivals at each --rates request rate (fixed seed), then
   a burst of all requests at once: request throughput, output tokens/s,
   and TTFT, TPOT and ITL at P50/P90/P99.
4. Overload: --overload-factor times the burst's request throughput for
   --overload-seconds: every request gets an answer (a completion, or 429
   or 503), the server lives, and /metrics shows every KV block free after.

Prompts are random token ids (below the vocabulary's special tokens), new
for each phase so that the prefix cache serves none from an earlier one;
outputs a fixed length each (ignore_eos), so every contender does the same
work. Writes WORK/serve.json and, where matplotlib is installed,
WORK/serve.png (throughput and P99 TTFT against the request rate).

    /usr/bin/python3 bench/serve.py --model llama_medium.kiln --tokenizer build/tokenizers/llama
"""
import argparse
import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")  # --bin


class Server:
    def __init__(self, model, tokenizer, flags):
        command = [os.path.join(BIN, "kiln-serve"), model, "--port", "0", *flags]
        if tokenizer:
            command += ["--tokenizer", tokenizer]
        self.process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
        line = self.process.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not match:
            sys.exit(f"kiln-serve did not start: {line}{self.process.stderr.read()}")
        self.port = int(match.group(1))
        threading.Thread(target=self.process.stderr.read, daemon=True).start()

    def get(self, path):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        connection.request("GET", path)
        return connection.getresponse().read().decode()

    def post(self, body, timeout=600):
        """A whole answer: (status, body, seconds)."""
        start = time.perf_counter()
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            connection.request("POST", "/v1/completions", body=json.dumps(body),
                               headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            data = response.read()
            return response.status, json.loads(data) if data else None, time.perf_counter() - start
        except (OSError, http.client.HTTPException) as error:
            return None, str(error), time.perf_counter() - start
        finally:
            connection.close()

    def stream(self, body):
        """A streamed answer: {"start", "times" (one per chunk with text or
        ids), "ids", "text", "status"}."""
        record = {"start": time.perf_counter(), "times": [], "ids": [], "text": "", "status": None}
        body = dict(body, stream=True)
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        try:
            connection.request("POST", "/v1/completions", body=json.dumps(body),
                               headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            record["status"] = response.status
            if response.status != 200:
                response.read()
                return record
            buffer = b""
            while True:
                chunk = response.read1(65536)
                if not chunk:
                    break
                buffer += chunk
                while b"\n\n" in buffer:
                    event, buffer = buffer.split(b"\n\n", 1)
                    data = event[len(b"data: "):]
                    if data == b"[DONE]":
                        continue
                    message = json.loads(data)
                    for choice in message.get("choices", []):
                        if choice.get("token_ids") or choice.get("text"):
                            record["times"].append(time.perf_counter())
                            record["ids"] += choice.get("token_ids", [])
                            record["text"] += choice.get("text", "")
        finally:
            connection.close()
        return record

    def metric(self, name):
        match = re.search(r"^" + re.escape(name) + r" (\S+)$", self.get("/metrics"), re.M)
        return float(match.group(1)) if match else None

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return None


def make_requests(count, input_len, output_len, vocab, seed):
    rng = random.Random(seed)
    return [{"prompt_ids": [rng.randrange(3, vocab) for _ in range(rng.randint(*input_len))],
             "max_tokens": rng.randint(*output_len)} for _ in range(count)]


def body_of(request, **extra):
    return {"prompt": request["prompt_ids"], "max_tokens": request["max_tokens"],
            "temperature": 0, "ignore_eos": True, "return_token_ids": True, **extra}


def percentiles(values):
    if not values:
        return {"p50": None, "p90": None, "p99": None}
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000
    return {"p50": pick(0.50), "p90": pick(0.90), "p99": pick(0.99)}


def run_load(server, requests, arrivals):
    """Streams each request at its arrival time (seconds from now)."""
    records = [None] * len(requests)
    begin = time.perf_counter()

    def one(index):
        delay = begin + arrivals[index] - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        records[index] = server.stream(body_of(requests[index]))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - begin
    done = [r for r in records if r["status"] == 200 and r["times"]]
    ttft = [r["times"][0] - r["start"] for r in done]
    tpot = [(r["times"][-1] - r["times"][0]) / (len(r["ids"]) - 1) for r in done if len(r["ids"]) > 1]
    itl = [b - a for r in done for a, b in zip(r["times"], r["times"][1:])]
    tokens = sum(len(r["ids"]) for r in done)
    return {"requests": len(requests), "completed": len(done), "seconds": elapsed,
            "request_throughput": len(done) / elapsed, "output_tokens_per_s": tokens / elapsed,
            "ttft_ms": percentiles(ttft), "tpot_ms": percentiles(tpot), "itl_ms": percentiles(itl)}


def closed_loop(server, requests, concurrency):
    """concurrency streams, each taking the next request when its last ends."""
    queue = list(range(len(requests)))
    lock = threading.Lock()
    tokens = [0]

    def worker():
        while True:
            with lock:
                if not queue:
                    return
                index = queue.pop(0)
            record = server.stream(body_of(requests[index]))
            with lock:
                tokens[0] += len(record["ids"])

    begin = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return tokens[0] / (time.perf_counter() - begin)


def check_consistency(server, args, requests):
    """Seeded sampling through the server, streamed and whole (each set at
    once), against kiln-generate running the same prompts with the same
    seed; and each answer's text against the decode of its own ids."""
    batch = [dict(r, max_tokens=args.consistency_tokens)
             for r in requests[:args.consistency_requests]]
    seeded = lambda r: dict(body_of(r), temperature=0.8, top_p=0.95, seed=args.seed, logprobs=0)

    def concurrently(call):
        results = [None] * len(batch)
        threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, call(batch[i])))
                   for i in range(len(batch))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return results

    streams = concurrently(lambda r: server.stream(seeded(r)))
    wholes = concurrently(lambda r: server.post(seeded(r))[1]["choices"][0])
    command = [os.path.join(BIN, "kiln-generate"), args.model, "--json", "--temperature", "0.8",
               "--top-p", "0.95", "--seed", str(args.seed), "--logprobs", "0", "--max-tokens",
               str(args.consistency_tokens), *args.engine_flags]
    for request in batch:
        command += ["--prompt-ids", ",".join(map(str, request["prompt_ids"]))]
    expected = [json.loads(line) for line in subprocess.run(
        command, check=True, capture_output=True, text=True).stdout.splitlines()]
    def answer_texts(answers):
        """What each answer's text must be: the decode of prompt and answer,
        less the prompt's (a SentencePiece token keeps its leading space
        after the prompt, which it would lose decoded alone). One
        kiln-tokenize run decodes them all."""
        lists = []
        for request, ids in zip(batch, answers):
            lists += [request["prompt_ids"] + ids, request["prompt_ids"]]
        out = subprocess.run(
            [os.path.join(BIN, "kiln-tokenize"), args.tokenizer, "--decode", "--lines",
             "--skip-special-tokens"], input="".join(json.dumps(ids) + "\n" for ids in lists),
            check=True, capture_output=True, text=True).stdout
        decoded = [json.loads(line) for line in out.split("\n") if line]
        return [whole[len(prefix):] if whole.startswith(prefix) else None
                for whole, prefix in zip(decoded[::2], decoded[1::2])]

    if args.tokenizer:
        stream_texts = answer_texts([stream["ids"] for stream in streams])
        whole_texts = answer_texts([whole["token_ids"] for whole in wholes])
    result = {"requests": len(batch),
              "stream_tokens_match_kiln_generate": 0, "whole_tokens_match_kiln_generate": 0,
              "stream_text_is_decode_of_its_ids": 0, "whole_text_is_decode_of_its_ids": 0,
              "divergences": []}
    for i, (stream, whole, reference) in enumerate(zip(streams, wholes, expected)):
        want = reference["output_ids"]
        result["stream_tokens_match_kiln_generate"] += stream["ids"] == want
        result["whole_tokens_match_kiln_generate"] += whole["token_ids"] == want
        if args.tokenizer:
            result["stream_text_is_decode_of_its_ids"] += stream["text"] == stream_texts[i]
            result["whole_text_is_decode_of_its_ids"] += whole["text"] == whole_texts[i]
        if whole["token_ids"] != want:
            # Where the draws part, and how far apart the two runs' logprobs
            # of the tokens they shared were: float rounding, or a bug.
            got = whole["token_ids"]
            at = next(k for k in range(min(len(got), len(want)) + 1)
                      if k == min(len(got), len(want)) or got[k] != want[k])
            ours = whole["logprobs"]["token_logprobs"]
            theirs = [entry["logprob"] for entry in reference["logprobs"]]
            shared = [abs(a - b) for a, b in zip(ours[:at], theirs[:at])]
            result["divergences"].append({
                "request": i, "at_token": at,
                "max_logprob_difference_before": max(shared) if shared else 0.0,
                "logprob_here": [ours[at] if at < len(ours) else None,
                                 theirs[at] if at < len(theirs) else None]})
    return result


def overload(server, args, requests, rate):
    """Non-streamed requests at `rate` for the given seconds; counts answers."""
    statuses, errors = {}, {}
    lock = threading.Lock()
    rng = random.Random(args.seed + 1)
    threads = []
    begin = time.perf_counter()
    at = 0.0
    index = 0
    while at < args.overload_seconds:
        def one(request=requests[index % len(requests)], when=at):
            delay = begin + when - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            status, body, _ = server.post(body_of(request))
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
                if status is None:
                    errors[body] = errors.get(body, 0) + 1
        thread = threading.Thread(target=one)
        thread.start()
        threads.append(thread)
        index += 1
        at += rng.expovariate(rate)
    for thread in threads:
        thread.join()
    alive = server.process.poll() is None
    blocks_free = alive and wait_for_free(server)
    return {"rate": rate, "seconds": args.overload_seconds, "sent": index,
            "statuses": {str(k): v for k, v in statuses.items()},
            "unanswered": statuses.get(None, 0), "client_errors": errors, "server_alive": alive,
            "kv_blocks_used_after": server.metric("kiln_kv_blocks_used") if alive else None,
            "all_blocks_free_after": blocks_free}


def wait_for_free(server, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if server.metric("kiln_kv_blocks_used") == 0 and server.metric("kiln_num_requests_running") == 0:
            return True
        time.sleep(0.2)
    return False


def plot(results, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return
    rates = [r["rate"] for r in results["rates"]]
    figure, left = plt.subplots(figsize=(7, 4))
    left.plot(rates, [r["output_tokens_per_s"] for r in results["rates"]], "o-", color="tab:blue")
    left.set_xlabel("request rate (requests/s)")
    left.set_ylabel("output tokens/s", color="tab:blue")
    right = left.twinx()
    right.plot(rates, [r["ttft_ms"]["p99"] for r in results["rates"]], "s--", color="tab:red")
    right.set_ylabel("P99 time to first token (ms)", color="tab:red")
    left.set_title(f"kiln-serve, {os.path.basename(results['model'])}")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"wrote {path}")


def main():
    global BIN
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a decoder artifact (kilnc --kv-cache=paged)")
    parser.add_argument("--tokenizer", help="its tokenizer (text and stop strings are checked with it)")
    parser.add_argument("--vocab", type=int, default=32000, help="prompt ids are drawn below this")
    parser.add_argument("--num-prompts", type=int, default=64)
    parser.add_argument("--input-len", default="32:256")
    parser.add_argument("--output-len", default="16:128")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--consistency-requests", type=int, default=64,
                        help="seeded requests sent at once in the consistency phase")
    parser.add_argument("--consistency-tokens", type=int, default=32,
                        help="each consistency request's output length")
    parser.add_argument("--phases", default="consistency,overhead,rates,overload",
                        help="which phases to run (the overload phase runs after the burst)")
    parser.add_argument("--rates", default="0.5,1,2,4")
    parser.add_argument("--overload-factor", type=float, default=10.0)
    parser.add_argument("--overload-seconds", type=float, default=60.0)
    parser.add_argument("--max-active-requests", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--engine-flags", default="", help="engine options for every contender")
    parser.add_argument("--bin", default=BIN, help="where kiln-serve and its kin are")
    parser.add_argument("--work-dir", default=os.path.join(ROOT, "build", "bench_serve"))
    parser.add_argument("--smoke", action="store_true", help="a few requests, short phases")
    args = parser.parse_args()
    BIN = args.bin
    args.engine_flags = args.engine_flags.split()
    if args.smoke:
        args.num_prompts, args.concurrency, args.rates = 6, 3, "2"
        args.consistency_tokens, args.consistency_requests = 8, 3
        # A smoke check, not a stress test of the machine running the suite.
        args.overload_seconds, args.overload_factor = 3.0, 3.0
    span = lambda text: tuple(int(v) for v in text.split(":"))
    # Each phase gets prompts of its own: the server's prefix cache would
    # otherwise serve a repeated prompt from the blocks of an earlier phase.
    phase_seed = iter(range(args.seed, args.seed + 1000))
    fresh = lambda: make_requests(args.num_prompts, span(args.input_len), span(args.output_len),
                                  args.vocab, next(phase_seed))
    os.makedirs(args.work_dir, exist_ok=True)

    results = {"model": args.model, "num_prompts": args.num_prompts,
               "concurrency": args.concurrency}
    phases = set(args.phases.split(","))
    server = Server(args.model, args.tokenizer,
                    ["--max-active-requests", str(args.max_active_requests), *args.engine_flags])
    try:
        if "consistency" in phases:
            results["consistency"] = check_consistency(server, args, fresh())
            print("consistency:", results["consistency"])
        if "overhead" in phases:
            # The same fresh requests, at the same concurrency, through HTTP
            # and in-process.
            requests = fresh()
            requests_file = os.path.join(args.work_dir, "requests.json")
            with open(requests_file, "w") as out:
                json.dump({"requests": requests}, out)
            http_rate = closed_loop(server, requests, args.concurrency)
            offline = json.loads(subprocess.run(
                [os.path.join(BIN, "kiln-bench-throughput"), args.model, "--requests", requests_file,
                 "--max-num-seqs", str(args.concurrency), "--json", *args.engine_flags],
                check=True, capture_output=True, text=True).stdout)
            results["overhead"] = {"http_output_tokens_per_s": http_rate,
                                   "offline_output_tokens_per_s": offline["output_tokens_per_s"],
                                   "http_over_offline": http_rate / offline["output_tokens_per_s"]}
            print("overhead:", results["overhead"])
        if "rates" in phases:
            results["rates"] = []
            for rate in [float(r) for r in args.rates.split(",")]:
                requests = fresh()
                rng = random.Random(args.seed)
                arrivals, at = [], 0.0
                for _ in requests:
                    arrivals.append(at)
                    at += rng.expovariate(rate)
                results["rates"].append(dict(run_load(server, requests, arrivals), rate=rate))
                print(f"rate {rate}:", results["rates"][-1])
        if "overload" in phases:
            requests = fresh()
            results["burst"] = run_load(server, requests, [0.0] * len(requests))
            print("burst:", results["burst"])
            sustainable = results["burst"]["request_throughput"]
            results["overload"] = overload(server, args, fresh(),
                                           sustainable * args.overload_factor)
            print("overload:", results["overload"])
    finally:
        results["exit_status"] = server.stop()
    with open(os.path.join(args.work_dir, "serve.json"), "w") as out:
        json.dump(results, out, indent=2)
    if "rates" in results:
        plot(results, os.path.join(args.work_dir, "serve.png"))
    # The kernels are batch-invariant (docs/architecture.md), so a seeded
    # request's tokens are kiln-generate's however the server batched it;
    # and the text of every answer must be its ids'.
    failures = []
    consistency = results.get("consistency")
    if consistency and (consistency["stream_tokens_match_kiln_generate"] != consistency["requests"]
                        or consistency["whole_tokens_match_kiln_generate"] != consistency["requests"]):
        failures.append("a seeded answer's tokens are not kiln-generate's for the same seed")
    if consistency and args.tokenizer and (
            consistency["stream_text_is_decode_of_its_ids"] != consistency["requests"]
            or consistency["whole_text_is_decode_of_its_ids"] != consistency["requests"]):
        failures.append("an answer's text is not the decode of its ids")
    overloaded = results.get("overload")
    if overloaded and (overloaded["unanswered"] or not overloaded["all_blocks_free_after"]):
        failures.append("an overloaded request went unanswered, or blocks stayed held")
    if results["exit_status"] != 0:
        failures.append(f"kiln-serve exited with {results['exit_status']} after SIGTERM")
    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
