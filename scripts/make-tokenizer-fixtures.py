#!/usr/bin/env python3
"""Writes Tests/Fixtures/tokenizers/*.json: token ids from llama.cpp (through llama-cpp-python
0.3.36) for the test models' vocabularies, including variants whose metadata selects another
BPE pre-tokenizer or SentencePiece space prefix, so every supported setting is checked against
the real implementation.

    pip install llama-cpp-python==0.3.36 gguf
    scripts/make-tokenizer-fixtures.py

The variants are vocabulary-only GGUF files written to a temporary folder (never committed):
the original metadata with one key changed and no tensors.
"""
import json
import os
import sys
import tempfile

import gguf
import llama_cpp

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
models = os.path.join(root, "models")
out_dir = os.path.join(root, "Tests", "Fixtures", "tokenizers")

TEXTS = [
    "Hello world",
    " Hello world",
    "Hello  world\n\nNew paragraph\twith a tab.",
    "I'm sure you'll see they've done it, haven't they? DON'T WE'LL I'D",
    "12345 67 3.14159 1,000,000 2026-11-22 ٣٤٥ ² ½ Ⅻ",
    "   leading spaces and trailing spaces   ",
    "trailing newline spaces  \n  \n",
    "café naïve résumé coöperate Ünïcödé ßtraße Œuvre",
    "日本語のテキストと中文字符 한국어",
    "Emoji: 🤖🔥👍🏽 and flags 🇫🇷 ❤️",
    "Привет, как дела? مرحبا بالعالم नमस्ते दुनिया",
    "def add(a, b):\n    return a + b  # sum\n\tif x:\n\t\treturn [1, 2]\n",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n",
    "<start_of_turn>user\nHi<end_of_turn>\n<b>bold</b> <unused0>",
    "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct?x=1&y=2",
    "$$$ %%% ^^^ &&& *** ((( ))) ~~~ ||| <<< >>> +++ === ``` ___",
    "tabs\t\tand\r\nwindows\r\n\r\nnewlines\u000b\u000cform",
    "no\u00a0break\u2003em\u3000ideographic\u2028line\u0085next",
    "zero\u200bwidth\u200djoiner\ufeffbom \ue000private",
    "a",
    "\n",
    " ",
    "''''' 's 'S 're 'RE ' s",
    "x...\n\ny!?\n z",
    "MixedCASEWords andCamelCase snake_case kebab-case",
    "\u00e9\u0301 e\u0301 \u1e9b\u0323",
]

CHAT_SMOLLM = ("<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\n"
               "Hi <|endoftext|> there<|im_end|>\n<|im_start|>assistant\n")
CHAT_GEMMA = "<bos><start_of_turn>user\nHi <eos> there<end_of_turn>\n<start_of_turn>model\n"


def variant(source, changes, folder):
    """A vocabulary-only copy of `source` with metadata `changes` (key → (value, type))."""
    reader = gguf.GGUFReader(source)
    arch = reader.fields["general.architecture"].contents()
    path = os.path.join(folder, os.path.basename(source) + "." + "-".join(str(v[0]) for v in changes.values()))
    writer = gguf.GGUFWriter(path, arch)
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        if key in changes:
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, field.contents(), vtype, sub_type=sub)
    for key, (value, vtype) in changes.items():
        writer.add_key_value(key, value, vtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def tokenize(path, texts, add_bos, special):
    llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
    return [{"text": t, "ids": llm.tokenize(t.encode("utf-8"), add_bos=add_bos, special=special)} for t in texts]


def main():
    os.makedirs(out_dir, exist_ok=True)
    smollm = os.path.join(models, "SmolLM2-135M-Instruct.Q4_1.gguf")
    gemma = os.path.join(models, "gemma-3-270m-q4_k_m.gguf")
    string = gguf.GGUFValueType.STRING
    boolean = gguf.GGUFValueType.BOOL
    with tempfile.TemporaryDirectory() as folder:
        suites = []
        for pre in ["smollm", "llama-bpe", "qwen2", "default", "gpt-2"]:
            path = variant(smollm, {"tokenizer.ggml.pre": (pre, string)}, folder)
            suites.append({
                "name": f"smollm2-pre-{pre}",
                "model": os.path.basename(smollm),
                "metadata": {"tokenizer.ggml.pre": pre},
                "addSpecial": False,
                "parseSpecial": False,
                "cases": tokenize(path, TEXTS, add_bos=False, special=False),
            })
        suites.append({
            "name": "smollm2-chat",
            "model": os.path.basename(smollm),
            "metadata": {},
            "addSpecial": False,
            "parseSpecial": True,
            "cases": tokenize(smollm, [CHAT_SMOLLM] + TEXTS, add_bos=False, special=True),
        })
        suites.append({
            "name": "gemma3",
            "model": os.path.basename(gemma),
            "metadata": {},
            "addSpecial": True,
            "parseSpecial": False,
            "cases": tokenize(gemma, TEXTS, add_bos=True, special=False),
        })
        suites.append({
            "name": "gemma3-chat",
            "model": os.path.basename(gemma),
            "metadata": {},
            "addSpecial": False,
            "parseSpecial": True,
            "cases": tokenize(gemma, [CHAT_GEMMA] + TEXTS, add_bos=False, special=True),
        })
        path = variant(gemma, {"tokenizer.ggml.add_space_prefix": (True, boolean)}, folder)
        suites.append({
            "name": "gemma3-space-prefix",
            "model": os.path.basename(gemma),
            "metadata": {"tokenizer.ggml.add_space_prefix": True},
            "addSpecial": True,
            "parseSpecial": True,
            "cases": tokenize(path, [CHAT_GEMMA] + TEXTS, add_bos=True, special=True),
        })
        for suite in suites:
            suite["reference"] = f"llama-cpp-python {llama_cpp.__version__} (llama.cpp tokenize)"
            with open(os.path.join(out_dir, suite["name"] + ".json"), "w", encoding="utf-8") as f:
                json.dump(suite, f, ensure_ascii=False, indent=1)
                f.write("\n")
            print(f"{suite['name']}: {len(suite['cases'])} cases")


if __name__ == "__main__":
    sys.exit(main())
