#!/usr/bin/env python3
"""Writes Tests/Fixtures/references/kv-cache.json: how far llama.cpp's quantized KV caches (Q8_0 and
Q4_0 for both keys and values) move its top log-probabilities from those of its half-precision
cache, on the real test models (scripts/fetch-models brings them to models/), which bounds how far
Hearth's quantized caches may move its own.

It comes from llama-cpp-python and the llama.cpp it bundles, with 2 threads and n_ctx 512. The
sequences are those of the greedy references in smollm2.json and gemma3.json (written by
make-reference-fixtures.py): each prompt tokenized with tokenize(text, add_bos=True, special=False)
followed by 224 tokens chosen greedily with a half-precision cache and flash attention off (or
fewer, up to an end-of-generation token), the first 32 regenerated as the reference has them and
checked against its continuation (and, for Gemma 3, its ids). Each
sequence is evaluated whole in one batch, keeping every position's logits, with keys and values
kept as
  f16          half precision, flash attention on (the baseline of the quantized caches);
  q8_0, q4_0   quantized, flash attention on (llama.cpp refuses a quantized value cache without
               it), as llama.cpp does by default: keys, queries and values turned by a Hadamard
               rotation before the cache quantizes them (its `attn_rot_k`/`attn_rot_v`);
  q8_0_no_rot, q4_0_no_rot
               the same without the rotation (LLAMA_ATTN_ROT_DISABLE=1): the plain block
               quantization of the cache;
  f16_fa_off   half precision, flash attention off, against the f16 run: what flash attention
               alone moves, as a scale.
At every position p (each row of logits, the last one included), with the log-softmax over the
whole vocabulary in float64: T(p) is the 5 tokens of highest log-probability under the baseline,
drift(p) the largest |logprob(t) - baseline logprob(t)| over t in T(p), and the position agrees
when both pick the same highest token. For each model and cache, over all its sequences, the
fixture keeps the mean and the largest drift, the share of positions that agree and the number
of positions (rounded to 6 significant digits), and `kv_cache_mib` the size of the n_ctx 512 cache
llama.cpp reports for each type (the sum of its "llama_kv_cache: size = ..." lines, in MiB to two
decimals). It keeps no log-probabilities.

llama.cpp sums some products in another order when it is built for AVX-512; Hearth follows its
AVX2 order, so build llama-cpp-python for AVX2 only (the script refuses an AVX-512 build):

    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF" \\
        pip install numpy llama-cpp-python==0.3.36

Then

    scripts/make-kv-cache-fixtures.py [--out DIR] [smollm2|gemma3 ...]

writes kv-cache.json to Tests/Fixtures/references (or DIR), with the named models (both by
default; the others are kept from the file already there). The committed one was made with
llama-cpp-python 0.3.36 (AVX2 build) and numpy 2.4.6.
"""
import argparse
import ctypes
import importlib.util
import json
import os
import re
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
models = os.path.join(root, "models")
fixtures = os.path.join(root, "Tests", "Fixtures", "references")
FIXTURE = "kv-cache.json"
# Tokens each sequence continues its prompt by: the reference's 32, then on greedily, so that
# the positions are many (the drift of one position is noisy) and reach past a short prompt.
CONTINUATION = 224

MODELS = {
    "smollm2": ("SmolLM2-135M-Instruct.Q4_1.gguf", "smollm2.json"),
    "gemma3": ("gemma-3-270m-q4_k_m.gguf", "gemma3.json"),
}
THREADS = 2
N_CTX = 512
TOP = 5

# GGML type ids, as llama.cpp's type_k/type_v take them.
F16, Q4_0, Q8_0 = 1, 2, 8
TYPE_NAMES = {F16: "f16", Q4_0: "q4_0", Q8_0: "q8_0"}

# name: (type of keys and values, flash attention, rotation of quantized caches)
RUNS = {
    "f16": (F16, True, True),
    "q8_0": (Q8_0, True, True),
    "q4_0": (Q4_0, True, True),
    "q8_0_no_rot": (Q8_0, True, False),
    "q4_0_no_rot": (Q4_0, True, False),
    "f16_fa_off": (F16, False, True),
}
# compared run: baseline run
COMPARISONS = {
    "q8_0": "f16",
    "q4_0": "f16",
    "q8_0_no_rot": "f16",
    "q4_0_no_rot": "f16",
    "f16_fa_off": "f16",
}
ROTATION_OFF = "LLAMA_ATTN_ROT_DISABLE"

# The reference script's file helpers (its name is not a module name, so it is loaded by path).
_spec = importlib.util.spec_from_file_location("make_reference_fixtures", os.path.join(root, "scripts", "make-reference-fixtures.py"))
_references = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_references)
sha256, model_path = _references.sha256, _references.model_path


def rounded(x):
    return float(f"{float(x):.6g}")


class Log:
    """llama.cpp's log, kept rather than printed, to check what a context really does."""

    def __init__(self, llama_cpp):
        self.lines = []

        @llama_cpp.llama_log_callback
        def callback(level, text, user_data):
            self.lines.append(text.decode("utf-8", "replace"))

        self.callback = callback  # kept alive as long as llama.cpp may call it
        llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))

    def take(self):
        text = "".join(self.lines)
        self.lines.clear()
        return text


def open_context(llama_cpp, log, path, type_kv, flash_attn, rotate, logits_all):
    """A Llama over `path` with keys and values of `type_kv`, checked against llama.cpp's log;
    returns it and the MiB of KV cache the log reports."""
    if rotate:
        os.environ.pop(ROTATION_OFF, None)
    else:
        os.environ[ROTATION_OFF] = "1"
    log.take()
    llm = llama_cpp.Llama(model_path=path, n_ctx=N_CTX, n_batch=N_CTX, n_ubatch=N_CTX, n_threads=THREADS,
                          n_threads_batch=THREADS, logits_all=logits_all, flash_attn=flash_attn,
                          type_k=type_kv, type_v=type_kv, verbose=False)
    os.environ.pop(ROTATION_OFF, None)
    text = log.take()
    name = TYPE_NAMES[type_kv]

    fa = re.findall(r"llama_context: flash_attn\s*=\s*(\w+)", text)
    if fa != ["enabled" if flash_attn else "disabled"]:
        sys.exit(f"asked for flash_attn={flash_attn} but llama.cpp says {fa}")
    sizes = re.findall(r"llama_kv_cache: size =\s*([\d.]+) MiB .*K \((\w+)\):.*V \((\w+)\):", text)
    if not sizes or any(k != name or v != name for _, k, v in sizes):
        sys.exit(f"asked for a {name} KV cache but llama.cpp made {[(k, v) for _, k, v in sizes]}")
    quantized = type_kv != F16
    for which in ("k", "v"):
        rot = re.findall(rf"attn_rot_{which} = (\d)", text)
        if not rot or any(int(r) != int(quantized and rotate) for r in rot):
            sys.exit(f"expected attn_rot_{which} = {int(quantized and rotate)}, llama.cpp says {rot}")
    for line in text.splitlines():
        if line.startswith("llama_kv_cache: size ="):
            print(f"  {line}", file=sys.stderr)
    return llm, round(sum(float(mib) for mib, _, _ in sizes), 2)


def sequences(llama_cpp, log, path, reference):
    """The greedy references' prompts and continuations as ids, regenerated as
    make-reference-fixtures.py made them and checked against `reference`."""
    llm, _ = open_context(llama_cpp, log, path, F16, False, True, logits_all=False)
    vocab = llm._model.vocab
    result = []
    for entry in reference["greedy"]:
        prompt_ids = llm.tokenize(entry["prompt"].encode("utf-8"), add_bos=True, special=False)
        if "prompt_ids" in entry and entry["prompt_ids"] != prompt_ids:
            sys.exit(f"{entry['prompt']!r} tokenizes to {prompt_ids}, the reference to {entry['prompt_ids']}")
        llm.reset()
        ids = []
        for token in llm.generate(prompt_ids, top_k=1, top_p=1.0, min_p=0.0, typical_p=1.0, temp=0.0,
                                  repeat_penalty=1.0, frequency_penalty=0.0, presence_penalty=0.0):
            if llama_cpp.llama_vocab_is_eog(vocab, token):
                break
            ids.append(token)
            if len(ids) == max(entry["n"], CONTINUATION):
                break
        text = llm.detokenize(ids[:entry["n"]], special=True).decode("utf-8")
        if text != entry["continuation"]:
            sys.exit(f"{entry['prompt']!r} continues as {text!r}, the reference as {entry['continuation']!r}")
        if "ids" in entry and entry["ids"] != ids[:entry["n"]]:
            sys.exit(f"{entry['prompt']!r} continues with {ids[:entry['n']]}, the reference with {entry['ids']}")
        result.append(prompt_ids + ids)
    llm.close()
    return result


def logprobs(llama_cpp, llm, ids):
    """Every position's log-softmax (float64) of `ids` evaluated whole in one batch from an empty
    cache."""
    import numpy as np

    if len(ids) > N_CTX:
        sys.exit(f"a sequence of {len(ids)} tokens does not fit one batch of {N_CTX}")
    llm.reset()
    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llm._ctx.ctx), True)
    llm.eval(ids)
    logits = np.array(llm.scores[:len(ids)], dtype=np.float64)
    shifted = logits - logits.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def model_fixture(key, llama_cpp):
    import numpy as np

    name, reference_name = MODELS[key]
    path = model_path(name)
    with open(os.path.join(fixtures, reference_name), encoding="utf-8") as f:
        reference = json.load(f)
    log = Log(llama_cpp)
    print(f"{key}: {name}", file=sys.stderr)
    seqs = sequences(llama_cpp, log, path, reference)

    results = {}
    kv_mib = {}
    for run, (type_kv, flash_attn, rotate) in RUNS.items():
        print(f" {run}", file=sys.stderr)
        llm, mib = open_context(llama_cpp, log, path, type_kv, flash_attn, rotate, logits_all=True)
        if rotate:
            kv_mib[TYPE_NAMES[type_kv]] = mib
        results[run] = [logprobs(llama_cpp, llm, ids) for ids in seqs]
        llm.close()

    drift = {}
    for run, base in COMPARISONS.items():
        drifts, agrees = [], []
        for quant, baseline in zip(results[run], results[base]):
            top = np.argsort(-baseline, axis=1, kind="stable")[:, :TOP]
            rows = np.arange(len(baseline))[:, None]
            drifts.append(np.abs(quant[rows, top] - baseline[rows, top]).max(axis=1))
            agrees.append(quant.argmax(axis=1) == baseline.argmax(axis=1))
        drifts = np.concatenate(drifts)
        agrees = np.concatenate(agrees)
        drift[run] = {"mean": rounded(drifts.mean()), "max": rounded(drifts.max()),
                      "agree": rounded(agrees.mean()), "positions": int(len(drifts))}
        print(f" {run} vs {base}: {drift[run]}", file=sys.stderr)
        if run != "f16_fa_off" and not (drifts > 0).any():
            sys.exit(f"{run} moved nothing: the cache type cannot have taken effect")
    return {"model": name, "sha256": sha256(path), "sequences": seqs, "drift": drift, "kv_cache_mib": kv_mib}


def dump(fixture):
    """JSON with one line a sequence of ids, not one line an id."""
    text = json.dumps(fixture, indent=1, ensure_ascii=False)
    return re.sub(r"\[\s+(-?\d+(?:,\s+-?\d+)*)\s+\]",
                  lambda m: "[" + ", ".join(m.group(1).replace(",", " ").split()) + "]", text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=fixtures, help="folder to write kv-cache.json to")
    parser.add_argument("names", nargs="*", help=f"models to measure: {', '.join(MODELS)} (default: all)")
    args = parser.parse_args()
    unknown = [name for name in args.names if name not in MODELS]
    if unknown:
        parser.error(f"unknown model {', '.join(unknown)}; choose from {', '.join(MODELS)}")

    import llama_cpp
    import numpy

    info = llama_cpp.llama_print_system_info().decode()
    if "AVX512 = 1" in info:
        sys.exit("llama-cpp-python was built with AVX-512, whose sums differ from the AVX2 order Hearth "
                 "follows: reinstall it as this script's docstring says.")

    out = os.path.join(args.out, FIXTURE)
    previous = {}
    if args.names and os.path.exists(out):
        with open(out, encoding="utf-8") as f:
            previous = json.load(f).get("models", {})
    built = {key: model_fixture(key, llama_cpp) for key in (args.names or MODELS)}
    fixture = {
        "reference": f"llama-cpp-python {llama_cpp.__version__} (its bundled llama.cpp, built for AVX2 without "
                     f"AVX-512), numpy {numpy.__version__}, n_ctx {N_CTX}, {THREADS} threads; each sequence (greedy "
                     f"reference prompt + continuation) evaluated whole in one batch, all positions' logits; "
                     f"type_k = type_v; f16 (baseline), q8_0 and q4_0 with flash_attn=True, q8_0/q4_0 with llama.cpp's "
                     f"default Hadamard rotation of quantized K/V, *_no_rot with {ROTATION_OFF}=1; f16_fa_off is f16 "
                     f"with flash_attn=False against the f16 run; drift(p) = max over the baseline's top {TOP} of "
                     f"|logprob - baseline logprob| (float64 log-softmax over the whole vocabulary), agree = share of "
                     f"positions with the same argmax; pooled over a model's sequences",
        "top": TOP,
        "models": {key: built.get(key) or previous[key] for key in MODELS if key in built or key in previous},
    }
    os.makedirs(args.out, exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write(dump(fixture))
        f.write("\n")
    print(f"{FIXTURE}: {fixture['reference']}")


if __name__ == "__main__":
    main()
