#!/usr/bin/env python3
"""Writes the Whisper base weights of a faster-whisper folder in the two other layouts Hearth
reads, for the layout tests (there is no network to the Hub in CI, and the files are 70-145 MB,
too big to commit):

  OUT/hf/                  a Hugging Face folder as openai/whisper-base publishes it:
                           model.safetensors (float16, WhisperForConditionalGeneration's names),
                           config.json, generation_config.json (suppressed tokens, alignment
                           heads) and the folder's tokenizer.json
  OUT/ggml-base.bin        a whisper.cpp file as its convert-pt-to-ggml.py writes it: F16
                           matrices, F32 biases, norms and positional embeddings, the text
                           vocabulary as raw bytes in rank order
  OUT/ggml-base-q8_0.bin   the same quantized as whisper.cpp's quantize tool does: every matrix
                           in Q8_0 blocks but the convolutions and positional embeddings

The weights are the CTranslate2 ones unchanged, so every layout must transcribe alike. Needs
numpy and safetensors only: CTranslate2's model.bin is parsed here.

Usage: scripts/make-whisper-layouts.py OUT_DIR [MODEL_DIR]   (MODEL_DIR: models/whisper-base)
"""
import json
import os
import shutil
import struct
import sys

import numpy as np
from safetensors.numpy import save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# CTranslate2's DataType ids.
CT2_DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16}


def read_ctranslate2(path):
    """The variables of a CTranslate2 model.bin (binary version 4 to 6): name -> array."""
    data = open(path, "rb").read()
    offset = 0

    def take(fmt):
        nonlocal offset
        values = struct.unpack_from("<" + fmt, data, offset)
        offset += struct.calcsize("<" + fmt)
        return values[0]

    def string():
        nonlocal offset
        length = take("H")
        text = data[offset:offset + length].rstrip(b"\0").decode()
        offset += length
        return text

    version = take("I")
    if not 4 <= version <= 6:
        sys.exit(f"{path}: CTranslate2 binary version {version}; this script reads 4 to 6")
    spec = string()
    take("I")  # the spec's revision
    if spec != "WhisperSpec":
        sys.exit(f"{path} holds a {spec}, not Whisper")
    variables = {}
    for _ in range(take("I")):
        name = string()
        shape = [take("I") for _ in range(take("B"))]
        dtype = take("B")
        count = take("I")
        if dtype not in CT2_DTYPES:
            sys.exit(f"{name} has CTranslate2 type {dtype}, which this script does not read")
        variables[name] = np.frombuffer(data, CT2_DTYPES[dtype], count // np.dtype(CT2_DTYPES[dtype]).itemsize,
                                        offset).reshape(shape)
        offset += count
    for _ in range(take("I")):
        alias, target = string(), string()
        variables[alias] = variables[target]
    assert offset == len(data), "bytes after the aliases"
    return variables


def openai_state_dict(ct2):
    """The CTranslate2 variables under OpenAI's checkpoint names, in its order, with the stacked
    query/key/value (and cross-attention key/value) split again."""
    width = ct2["decoder/embeddings/weight"].shape[1]

    def layers(side):
        n = 0
        while f"{side}/layer_{n}/ffn/linear_0/weight" in ct2:
            n += 1
        return n

    out = {}

    def linear(name, source):
        out[name + ".weight"] = ct2[source + "/weight"]
        out[name + ".bias"] = ct2[source + "/bias"]

    def norm(name, source):
        out[name + ".weight"] = ct2[source + "/gamma"]
        out[name + ".bias"] = ct2[source + "/beta"]

    def split(names, source):
        weight, bias = ct2[source + "/weight"], ct2[source + "/bias"]
        for i, name in enumerate(names):
            part = slice(i * width, (i + 1) * width)
            out[name + ".weight"] = weight[part]
            if name.endswith(".key"):
                # The key has no bias in the other layouts; CTranslate2 stores zeros for it.
                assert not bias[part].any(), f"{source} has a key bias"
            else:
                out[name + ".bias"] = bias[part]

    out["encoder.positional_embedding"] = ct2["encoder/position_encodings/encodings"]
    linear("encoder.conv1", "encoder/conv1")
    linear("encoder.conv2", "encoder/conv2")
    for i in range(layers("encoder")):
        p, s = f"encoder.blocks.{i}.", f"encoder/layer_{i}/"
        split([p + "attn.query", p + "attn.key", p + "attn.value"], s + "self_attention/linear_0")
        linear(p + "attn.out", s + "self_attention/linear_1")
        norm(p + "attn_ln", s + "self_attention/layer_norm")
        linear(p + "mlp.0", s + "ffn/linear_0")
        linear(p + "mlp.2", s + "ffn/linear_1")
        norm(p + "mlp_ln", s + "ffn/layer_norm")
    norm("encoder.ln_post", "encoder/layer_norm")
    out["decoder.positional_embedding"] = ct2["decoder/position_encodings/encodings"]
    out["decoder.token_embedding.weight"] = ct2["decoder/embeddings/weight"]
    for i in range(layers("decoder")):
        p, s = f"decoder.blocks.{i}.", f"decoder/layer_{i}/"
        split([p + "attn.query", p + "attn.key", p + "attn.value"], s + "self_attention/linear_0")
        linear(p + "attn.out", s + "self_attention/linear_1")
        norm(p + "attn_ln", s + "self_attention/layer_norm")
        linear(p + "cross_attn.query", s + "attention/linear_0")
        split([p + "cross_attn.key", p + "cross_attn.value"], s + "attention/linear_1")
        linear(p + "cross_attn.out", s + "attention/linear_2")
        norm(p + "cross_attn_ln", s + "attention/layer_norm")
        linear(p + "mlp.0", s + "ffn/linear_0")
        linear(p + "mlp.2", s + "ffn/linear_1")
        norm(p + "mlp_ln", s + "ffn/layer_norm")
    norm("decoder.ln", "decoder/layer_norm")
    return out


# OpenAI's module names inside a block -> Transformers' (WhisperEncoderLayer, WhisperDecoderLayer).
HF_BLOCK = {
    "attn.query": "self_attn.q_proj", "attn.key": "self_attn.k_proj", "attn.value": "self_attn.v_proj",
    "attn.out": "self_attn.out_proj", "attn_ln": "self_attn_layer_norm",
    "cross_attn.query": "encoder_attn.q_proj", "cross_attn.key": "encoder_attn.k_proj",
    "cross_attn.value": "encoder_attn.v_proj", "cross_attn.out": "encoder_attn.out_proj",
    "cross_attn_ln": "encoder_attn_layer_norm", "mlp.0": "fc1", "mlp.2": "fc2", "mlp_ln": "final_layer_norm",
}
HF_OTHER = {
    "encoder.positional_embedding": "encoder.embed_positions.weight",
    "decoder.positional_embedding": "decoder.embed_positions.weight",
    "decoder.token_embedding.weight": "decoder.embed_tokens.weight",
    "encoder.ln_post.weight": "encoder.layer_norm.weight", "encoder.ln_post.bias": "encoder.layer_norm.bias",
    "decoder.ln.weight": "decoder.layer_norm.weight", "decoder.ln.bias": "decoder.layer_norm.bias",
}


def hf_name(name):
    parts = name.split(".")
    if parts[1] == "blocks":
        return f"model.{parts[0]}.layers.{parts[2]}.{HF_BLOCK['.'.join(parts[3:-1])]}.{parts[-1]}"
    return "model." + HF_OTHER.get(name, name)


def write_hf(state, heads, ct2_dir, out):
    os.makedirs(out, exist_ok=True)
    tensors = {hf_name(name): np.ascontiguousarray(value, dtype=np.float16) for name, value in state.items()}
    save_file(tensors, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    tokenizer = json.load(open(os.path.join(ct2_dir, "tokenizer.json"), encoding="utf-8"))
    special = {t["content"]: t["id"] for t in tokenizer["added_tokens"]}
    embedding = state["decoder.token_embedding.weight"]
    encoder_layers = sum(1 for n in state if n.startswith("encoder.blocks.") and n.endswith(".attn.query.weight"))
    decoder_layers = sum(1 for n in state if n.startswith("decoder.blocks.") and n.endswith(".attn.query.weight"))
    config = {
        "architectures": ["WhisperForConditionalGeneration"],
        "model_type": "whisper",
        "vocab_size": embedding.shape[0],
        "num_mel_bins": state["encoder.conv1.weight"].shape[1],
        "d_model": embedding.shape[1],
        "encoder_layers": encoder_layers,
        "encoder_attention_heads": heads,
        "encoder_ffn_dim": state["encoder.blocks.0.mlp.0.weight"].shape[0],
        "decoder_layers": decoder_layers,
        "decoder_attention_heads": heads,
        "decoder_ffn_dim": state["decoder.blocks.0.mlp.0.weight"].shape[0],
        "max_source_positions": state["encoder.positional_embedding"].shape[0],
        "max_target_positions": state["decoder.positional_embedding"].shape[0],
        "activation_function": "gelu",
        "scale_embedding": False,
        "tie_word_embeddings": True,
        "torch_dtype": "float16",
        "bos_token_id": special["<|endoftext|>"],
        "eos_token_id": special["<|endoftext|>"],
        "pad_token_id": special["<|endoftext|>"],
        "decoder_start_token_id": special["<|startoftranscript|>"],
    }
    json.dump(config, open(os.path.join(out, "config.json"), "w"), indent=2)
    ct2_config = json.load(open(os.path.join(ct2_dir, "config.json")))
    generation = {
        "suppress_tokens": ct2_config["suppress_ids"],
        "begin_suppress_tokens": ct2_config["suppress_ids_begin"],
        "alignment_heads": ct2_config["alignment_heads"],
        "decoder_start_token_id": special["<|startoftranscript|>"],
        "eos_token_id": special["<|endoftext|>"],
        "no_timestamps_token_id": special["<|notimestamps|>"],
        "is_multilingual": embedding.shape[0] >= 51865,
        "max_length": state["decoder.positional_embedding"].shape[0],
        # The language tokens lie between <|startoftranscript|> and <|translate|>.
        "lang_to_id": {t: i for t, i in special.items() if special["<|startoftranscript|>"] < i < special["<|translate|>"]},
        "task_to_id": {"translate": special["<|translate|>"], "transcribe": special["<|transcribe|>"]},
    }
    json.dump(generation, open(os.path.join(out, "generation_config.json"), "w"), indent=2)
    shutil.copyfile(os.path.join(ct2_dir, "tokenizer.json"), os.path.join(out, "tokenizer.json"))


def byte_level_decoder():
    """GPT-2's byte-level alphabet reversed: printable Latin-1 bytes stand for themselves, the
    other bytes for the characters from U+0100 up, in byte order."""
    printable = set(range(0x21, 0x7F)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    decoder, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            decoder[chr(byte)] = byte
        else:
            decoder[chr(256 + extra)] = byte
            extra += 1
    return decoder


def slaney_mel_filters(bands, rate=16000, fft=400):
    """Triangular filters on the Slaney mel scale with Slaney's area normalisation (OpenAI's
    mel_filters.npz, librosa's filters.mel defaults), bands x (fft / 2 + 1)."""
    step = 200.0 / 3
    log_hz, log_mel, log_step = 1000.0, 1000.0 / step, np.log(6.4) / 27.0

    def to_mel(hz):
        hz = np.asarray(hz, dtype=np.float64)
        return np.where(hz >= log_hz, log_mel + np.log(np.maximum(hz, log_hz) / log_hz) / log_step, hz / step)

    def to_hz(mel):
        return np.where(mel >= log_mel, log_hz * np.exp(log_step * (mel - log_mel)), step * mel)

    bins = np.linspace(0, rate / 2, fft // 2 + 1)
    edges = to_hz(np.linspace(to_mel(0), to_mel(rate / 2), bands + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - bins[None, :]
    weights = np.maximum(0, np.minimum(-ramps[:-2] / widths[:-1, None], ramps[2:] / widths[1:, None]))
    weights *= (2.0 / (edges[2:] - edges[:-2]))[:, None]
    return weights.astype(np.float32)


GGML_F32, GGML_F16, GGML_Q8_0 = 0, 1, 8
# whisper.cpp keeps these in float (convert-pt-to-ggml.py) and never quantizes them (quantize.cpp).
GGML_FLOAT = {"encoder.conv1.bias", "encoder.conv2.bias", "encoder.positional_embedding", "decoder.positional_embedding"}


def q8_0_blocks(matrix):
    """ggml's Q8_0: blocks of 32 along a row, each an f16 scale d = max|x| / 127 and 32 int8
    round(x / d), rounded half away from zero as C's roundf; in float32 as ggml computes."""
    blocks = np.ascontiguousarray(matrix, dtype=np.float32).reshape(-1, 32)
    d = np.abs(blocks).max(axis=1) / np.float32(127)
    inverse = np.divide(np.float32(1), d, out=np.zeros_like(d), where=d != 0)
    scaled = blocks * inverse[:, None]
    q = np.sign(scaled) * np.floor(np.abs(scaled) + np.float32(0.5))
    out = np.empty(len(blocks), dtype=[("d", "<f2"), ("q", "i1", 32)])
    out["d"] = d.astype(np.float16)
    out["q"] = q.astype(np.int8)
    return out.tobytes()


def write_ggml(state, heads, ct2_dir, path, quantize):
    tokenizer = json.load(open(os.path.join(ct2_dir, "tokenizer.json"), encoding="utf-8"))
    end_of_text = next(t["id"] for t in tokenizer["added_tokens"] if t["content"] == "<|endoftext|>")
    by_id = {i: text for text, i in tokenizer["model"]["vocab"].items()}
    decoder = byte_level_decoder()
    # The text tokens as tiktoken ranks them (id = rank): the ids before <|endoftext|>.
    vocabulary = [bytes(decoder[c] for c in by_id[i]) for i in range(end_of_text)]
    embedding = state["decoder.token_embedding.weight"]
    encoder_layers = sum(1 for n in state if n.startswith("encoder.blocks.") and n.endswith(".attn.query.weight"))
    decoder_layers = sum(1 for n in state if n.startswith("decoder.blocks.") and n.endswith(".attn.query.weight"))
    width, mels = embedding.shape[1], state["encoder.conv1.weight"].shape[1]
    # ftype: 1 for mostly F16; quantized files add GGML_QNT_VERSION (2) * 1000 to 7, Q8_0's.
    ftype = 2 * 1000 + 7 if quantize else 1
    with open(path, "wb") as out:
        out.write(struct.pack("<I", 0x67676D6C))
        out.write(struct.pack("<11i", embedding.shape[0], state["encoder.positional_embedding"].shape[0], width, heads,
                              encoder_layers, state["decoder.positional_embedding"].shape[0], width, heads,
                              decoder_layers, mels, ftype))
        filters = slaney_mel_filters(mels)
        out.write(struct.pack("<2i", *filters.shape))
        out.write(filters.astype("<f4").tobytes())
        out.write(struct.pack("<i", len(vocabulary)))
        for token in vocabulary:
            out.write(struct.pack("<I", len(token)))
            out.write(token)
        for name, value in state.items():
            data = np.asarray(value)
            if name in ("encoder.conv1.bias", "encoder.conv2.bias"):
                data = data.reshape(data.shape[0], 1)
            if quantize and data.ndim == 2 and name not in GGML_FLOAT:
                kind, payload = GGML_Q8_0, q8_0_blocks(data)
            elif data.ndim >= 2 and name not in GGML_FLOAT:
                kind, payload = GGML_F16, data.astype("<f2").tobytes()
            else:
                kind, payload = GGML_F32, data.astype("<f4").tobytes()
            encoded = name.encode()
            out.write(struct.pack("<3i", data.ndim, len(encoded), kind))
            out.write(struct.pack(f"<{data.ndim}i", *reversed(data.shape)))
            out.write(encoded)
            out.write(payload)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    out = sys.argv[1]
    ct2_dir = sys.argv[2] if len(sys.argv) == 3 else os.path.join(ROOT, "models", "whisper-base")
    model = os.path.join(ct2_dir, "model.bin")
    if not os.path.exists(model):
        sys.exit(f"{model} is missing: run scripts/fetch-models first")
    ct2 = read_ctranslate2(model)
    state = openai_state_dict(ct2)
    heads = int(ct2["encoder/num_heads"])
    os.makedirs(out, exist_ok=True)
    write_hf(state, heads, ct2_dir, os.path.join(out, "hf"))
    write_ggml(state, heads, ct2_dir, os.path.join(out, "ggml-base.bin"), quantize=False)
    write_ggml(state, heads, ct2_dir, os.path.join(out, "ggml-base-q8_0.bin"), quantize=True)


if __name__ == "__main__":
    main()
