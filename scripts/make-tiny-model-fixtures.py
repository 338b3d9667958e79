#!/usr/bin/env python3
"""Writes Tests/Fixtures/tiny-models/<name>.json: llama.cpp's greedy tokens and top-5
log-probabilities on each tiny model of TinyModel.catalog (Tests/HearthTestSupport).

The models are random-weight GGUFs of real architectures with real tokenizers, written by the
`tiny-models` executable byte for byte the same on every machine (the fixture records each
file's sha256, and the test checks it). For every model and prompt, llama-server tokenizes the
prompt (special tokens added as the model says) and generates 32 tokens greedily, reporting
the 5 most likely tokens of the first 8 steps with their log-probabilities under the raw
logits (null for a step whose token ends inside a UTF-8 character: the server does not report
those).

llama-server runs with flash attention off (-fa off), the arithmetic Hearth follows, 2 threads,
and a context of 1024 positions per sequence (which matters to models whose RoPE depends on the
context, such as Phi-3's LongRoPE), with no context checkpoints (--ctx-checkpoints 0: otherwise,
for hybrid and sliding-window models, it reads a prompt's last 4 tokens in a pass of their own
to keep a checkpoint before them, and the matrix products of a 4-row pass sum in another order).
For the held-back models (and those named after --swa-full) also with --swa-full, which keeps a sliding-window layer's keys and
values in the order of their positions as Hearth does (otherwise llama.cpp reuses the cells of
positions that left the window, and its sums over the cells run in another order, which the F16
rounding of the attention weights can make visible).

    LLAMA_SERVER=/path/to/llama-server [LLAMA_BUILD="how it was built"] scripts/make-tiny-model-fixtures.py [--held-back] [--swa-full] [NAME ...]

llama-server is not part of Hearth: build it from llama.cpp (these fixtures were made with the
vendor/llama.cpp of the llama-cpp-python 0.3.36 sdist: those whose `reference` names no build
with cmake -DGGML_NATIVE=ON on an AVX-512 host, the others as their `reference` says, LLAMA_BUILD's
words). The tiny models need the vocab GGUFs that scripts/fetch-models brings.
"""
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
fixtures = os.path.join(root, "Tests", "Fixtures", "tiny-models")

PROMPTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Once upon a time, in a village by the sea, there lived",
    "def fibonacci(n):\n    if n < 2:\n        return n\n",
    "Paris, Berlin, Madrid, Rome, Lisbon, Vienna, Prague, Warsaw, Athens, Dublin, Oslo,",
    "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23",
]
GENERATED = 32
TOP = 5
CONTEXT = 1024


def post(port, path, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.load(response)


def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60) as response:
        return json.load(response)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_model(server, path, all_steps=False, swa_full=False):
    port = free_port()
    process = subprocess.Popen([server, "-m", path, "-fa", "off", "-t", "2", "-c", str(CONTEXT), "-np", "1",
                                "--ctx-checkpoints", "0", "--port", str(port)] + (["--swa-full"] if swa_full else []),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while True:
            try:
                if get(port, "/health").get("status") == "ok":
                    break
            except OSError:
                pass
            if time.time() > deadline or process.poll() is not None:
                raise RuntimeError(f"llama-server did not start for {path}")
            time.sleep(0.5)
        build = get(port, "/props").get("build_info", "unknown")
        cases = []
        for prompt in PROMPTS:
            ids = post(port, "/tokenize", {"content": prompt, "add_special": True})["tokens"]
            answer = post(port, "/completion", {"prompt": ids, "n_predict": GENERATED, "temperature": 0,
                                                "n_probs": TOP, "cache_prompt": False, "return_tokens": True})
            tokens = answer["tokens"]
            # The server leaves out the probabilities of a token that ends inside a UTF-8
            # character (it sends them with the token that completes it): such steps get null.
            probabilities, steps = answer["completion_probabilities"], []
            for token in tokens:
                if probabilities and probabilities[0]["id"] == token:
                    steps.append([{"id": t["id"], "logprob": t["logprob"]} for t in probabilities.pop(0)["top_logprobs"]])
                else:
                    steps.append(None)
            cases.append({"prompt": prompt, "prompt_ids": ids, "ids": tokens, "top_logprobs": steps if all_steps else steps[:8]})
        return build, cases
    finally:
        process.terminate()
        process.wait()


def main():
    server = os.environ.get("LLAMA_SERVER")
    if not server:
        sys.exit("Set LLAMA_SERVER to a llama-server binary (see this script's docstring).")
    # --held-back: the held-back models (TinyModel.heldBack) into Tests/Fixtures/tiny-models-avx2.
    held_back = "--held-back" in sys.argv[1:]
    # --swa-full: the main set's models named with it too (a sliding window its prompts cross).
    swa_full = held_back or "--swa-full" in sys.argv[1:]
    wanted = set(a for a in sys.argv[1:] if a not in ("--held-back", "--swa-full"))
    out = fixtures + "-avx2" if held_back else fixtures
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(["swift", "build", "-c", "release", "--product", "tiny-models"], cwd=root, check=True,
                       stdout=subprocess.DEVNULL)
        paths = subprocess.run([os.path.join(root, ".build", "release", "tiny-models")] + (["--held-back"] if held_back else [])
                               + [folder], cwd=root, check=True,
                               capture_output=True, text=True).stdout.split()
        os.makedirs(out, exist_ok=True)
        for path in paths:
            name = os.path.basename(path)[:-len(".gguf")]
            if wanted and name not in wanted:
                continue
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            build, cases = run_model(server, path, all_steps=held_back, swa_full=swa_full)
            if os.environ.get("LLAMA_BUILD"):
                build += f" ({os.environ['LLAMA_BUILD']})"
            fixture = {
                "model": name,
                "sha256": digest,
                "reference": f"llama.cpp {build}: llama-server -fa off -t 2 -c {CONTEXT} --ctx-checkpoints 0"
                             f"{' --swa-full' if swa_full else ''}, "
                             f"/completion with the prompt's "
                             f"token ids, temperature 0, n_probs {TOP}",
                "cases": cases,
            }
            with open(os.path.join(out, name + ".json"), "w") as f:
                json.dump(fixture, f, indent=1, ensure_ascii=False)
                f.write("\n")
            print(f"{name}: {len(cases)} prompts, first continuation {cases[0]['ids'][:8]}")


if __name__ == "__main__":
    main()
