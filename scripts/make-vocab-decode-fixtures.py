#!/usr/bin/env python3
"""Writes Tests/Fixtures/llama-cpp-vocab/decoded.json: for every vocabulary in
models/llama-cpp-vocab (from scripts/fetch-models) that has a .inp/.out pair, the text llama.cpp's
detokenizer (llama_detokenize, as test-tokenizer-0 calls it: specials kept and rendered) gives
for the ids of each input in the .out file. The tests check Hearth's decoding against it: where
llama.cpp gives the input back, Hearth must too.

    pip install llama-cpp-python==0.3.36
    scripts/make-vocab-decode-fixtures.py
"""
import ctypes
import glob
import json
import os

import llama_cpp

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
vocab_dir = os.path.join(root, "models", "llama-cpp-vocab")
out_path = os.path.join(root, "Tests", "Fixtures", "llama-cpp-vocab", "decoded.json")
SEPARATOR = b"\n__ggml_vocab_test__\n"


def inputs(path):
    """The .inp cases, split as test-tokenizer-0 splits them."""
    raw = open(path, "rb").read()
    parts = raw.split(SEPARATOR)
    return parts[:-1] if parts and parts[-1] == b"" else parts


def detokenize(vocab, ids):
    tokens = (llama_cpp.llama_token * max(len(ids), 1))(*ids)
    size = 64 + 16 * len(ids)
    while True:
        buffer = ctypes.create_string_buffer(size)
        n = llama_cpp.llama_detokenize(vocab, tokens, len(ids), buffer, size, False, True)
        if n >= 0:
            return buffer.raw[:n]
        size = -n


def main():
    result = {"reference": f"llama-cpp-python {llama_cpp.__version__} (llama_detokenize)", "vocabularies": {}}
    for path in sorted(glob.glob(os.path.join(vocab_dir, "ggml-vocab-*.gguf"))):
        if not (os.path.exists(path + ".inp") and os.path.exists(path + ".out")):
            continue
        name = os.path.basename(path)[len("ggml-vocab-"):-len(".gguf")]
        llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
        vocab = llm._model.vocab
        texts = inputs(path + ".inp")
        outs = [line.split() for line in open(path + ".out", encoding="utf-8").read().splitlines()]
        assert len(texts) == len(outs), name
        decoded = []
        for text, out in zip(texts, outs):
            ids = [int(x) for x in out]
            assert llm.tokenize(text, add_bos=False, special=False) == ids, (name, text)
            decoded.append(detokenize(vocab, ids).decode("utf-8"))
        result["vocabularies"][name] = decoded
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
