#!/usr/bin/env python3
"""Writes Tests/Fixtures/quants/<type>.json: llama.cpp's own dequantization, activation
quantization, dot products and matrix products for random blocks of one GGML type.

For each type, rows are made two ways: floats (normal, with a few outliers) quantized by
ggml_quantize_chunk (with a random positive importance matrix for the IQ1, IQ2 and IQ3 types,
which need or take one), and raw random bytes whose f16 scales are set to finite values (every
bit pattern of the quants is then exercised, including ones no quantizer writes). Each case records

- `weights`: the row's blocks (base64);
- `dequantized`: ggml's to_float of them (float32 bit patterns, base64);
- `activations`: a float32 row (base64) and `activationBlocks`, the CPU backend's from_float
  of it into the type's vec_dot_type (Q8_0 or Q8_K);
- `dot`: the CPU backend's vec_dot of the weights with those activation blocks (float32 bits).

`matrices` holds products of a whole matrix (`rows` weight rows) with `columns` float columns
computed by a ggml graph (ggml_mul_mat through ggml_graph_compute_with_ctx, 1 thread): the
kernels llama.cpp picks for that batch size (vec_dot below 8 columns, the tiled K-quant kernel
from 8 on) on weights that are not repacked.

    LIBGGML_DIR=/path/to/build/bin scripts/make-quant-fixtures.py [TYPE ...]

LIBGGML_DIR holds libggml-base.so and libggml-cpu.so of a llama.cpp built with
BUILD_SHARED_LIBS=ON for AVX2 (the arithmetic Hearth follows): these fixtures were made with the
vendor/llama.cpp of the llama-cpp-python 0.3.36 sdist, cmake -DGGML_NATIVE=OFF -DGGML_AVX2=ON
-DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF. llama.cpp is not part of Hearth.
"""
import base64
import ctypes
import json
import os
import sys

import numpy as np

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
out_dir = os.path.join(root, "Tests", "Fixtures", "quants")

# name: (ggml type number, elements per block, bytes per block, byte offsets of f16 scales in a
# block, byte offsets of E8M0 exponents)
TYPES = {
    "Q2_K": (10, 256, 84, [80, 82], []),
    "Q3_K": (11, 256, 110, [108], []),
    "IQ4_NL": (20, 32, 18, [0], []),
    "IQ4_XS": (23, 256, 136, [0], []),
    "MXFP4": (39, 32, 17, [], [0]),
    # Q4_K's matrices here have row counts that are not a multiple of 8, which llama.cpp's models
    # leave unrepacked (those of 8n rows are repacked, and checked on tiny models).
    "Q4_K": (12, 256, 144, [0, 2], []),
    "IQ2_XXS": (16, 256, 66, [0], []),
    "IQ2_XS": (17, 256, 74, [0], []),
    "IQ3_XXS": (18, 256, 98, [0], []),
    "IQ1_S": (19, 256, 50, [0], []),
    "IQ3_S": (21, 256, 110, [0], []),
    "IQ2_S": (22, 256, 82, [0], []),
    # IQ1_M keeps its f16 scale in the top four bits of the four 16-bit words at bytes 48..55.
    "IQ1_M": (29, 256, 56, [], []),
}
# The types quantized with an importance matrix, and where an f16 is spread over the top nibbles
# of four words.
IMATRIX_TYPES = {"IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ3_S", "IQ2_S", "IQ1_M"}
NIBBLE_HALVES = {"IQ1_M": [48]}

libdir = os.environ.get("LIBGGML_DIR")
if not libdir:
    sys.exit("set LIBGGML_DIR to the directory of libggml-base.so and libggml-cpu.so (see the docstring)")
base = ctypes.CDLL(os.path.join(libdir, "libggml-base.so"), mode=ctypes.RTLD_GLOBAL)
cpu = ctypes.CDLL(os.path.join(libdir, "libggml-cpu.so"), mode=ctypes.RTLD_GLOBAL)

FromFloat = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
ToFloat = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
VecDot = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                          ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)


class TypeTraits(ctypes.Structure):
    _fields_ = [("type_name", ctypes.c_char_p), ("blck_size", ctypes.c_int64), ("blck_size_interleave", ctypes.c_int64),
                ("type_size", ctypes.c_size_t), ("is_quantized", ctypes.c_bool), ("to_float", ToFloat),
                ("from_float_ref", FromFloat)]


class CPUTraits(ctypes.Structure):
    _fields_ = [("from_float", FromFloat), ("vec_dot", VecDot), ("vec_dot_type", ctypes.c_int), ("nrows", ctypes.c_int64)]


class InitParams(ctypes.Structure):
    _fields_ = [("mem_size", ctypes.c_size_t), ("mem_buffer", ctypes.c_void_p), ("no_alloc", ctypes.c_bool)]


base.ggml_get_type_traits.restype = ctypes.POINTER(TypeTraits)
base.ggml_get_type_traits.argtypes = [ctypes.c_int]
cpu.ggml_get_type_traits_cpu.restype = ctypes.POINTER(CPUTraits)
cpu.ggml_get_type_traits_cpu.argtypes = [ctypes.c_int]
base.ggml_quantize_chunk.restype = ctypes.c_size_t
base.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                                     ctypes.c_int64, ctypes.c_void_p]
base.ggml_init.restype = ctypes.c_void_p
base.ggml_init.argtypes = [InitParams]
base.ggml_free.argtypes = [ctypes.c_void_p]
base.ggml_new_tensor_2d.restype = ctypes.c_void_p
base.ggml_new_tensor_2d.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
base.ggml_get_data.restype = ctypes.c_void_p
base.ggml_get_data.argtypes = [ctypes.c_void_p]
base.ggml_mul_mat.restype = ctypes.c_void_p
base.ggml_mul_mat.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
base.ggml_new_graph.restype = ctypes.c_void_p
base.ggml_new_graph.argtypes = [ctypes.c_void_p]
base.ggml_build_forward_expand.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
cpu.ggml_graph_compute_with_ctx.restype = ctypes.c_int
cpu.ggml_graph_compute_with_ctx.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
cpu.ggml_cpu_init()

F32 = 0


def b64(data: bytes) -> str:
    return base64.b64encode(bytes(data)).decode()


def random_half(rng) -> int:
    # A finite scale of either sign, 2^-10 .. 2^-3 in size.
    return int(np.float16(rng.choice([-1.0, 1.0]) * 2.0 ** rng.uniform(-10, -3)).view(np.uint16))


def random_blocks(rng, nblocks: int, block_bytes: int, half_offsets, exponent_offsets=(), nibble_offsets=()) -> bytes:
    raw = bytearray(rng.integers(0, 256, size=nblocks * block_bytes, dtype=np.uint8).tobytes())
    for b in range(nblocks):
        for off in nibble_offsets:
            half = random_half(rng)
            for k in range(4):
                top = b * block_bytes + off + 2 * k + 1
                raw[top] = (raw[top] & 0x0F) | (((half >> (4 * k)) & 0xF) << 4)
        for off in exponent_offsets:
            # 2^-12 .. 2^-1 once halved.
            raw[b * block_bytes + off] = int(rng.integers(116, 128))
        for off in half_offsets:
            raw[b * block_bytes + off:b * block_bytes + off + 2] = random_half(rng).to_bytes(2, "little")
    return bytes(raw)


def quantized_rows(type_id: int, rows: np.ndarray, imatrix: bool = False) -> bytes:
    nrows, n = rows.shape
    traits = base.ggml_get_type_traits(type_id).contents
    out = ctypes.create_string_buffer(nrows * n // traits.blck_size * traits.type_size)
    src = np.ascontiguousarray(rows, dtype=np.float32)
    # Importance from a generator of its own, so that the other draws stay as they were.
    weights = np.random.default_rng(n).uniform(0.1, 2.0, n).astype(np.float32) if imatrix else None
    base.ggml_quantize_chunk(type_id, src.ctypes.data, out, 0, nrows, n, weights.ctypes.data if imatrix else None)
    return out.raw


def float_rows(rng, nrows: int, n: int) -> np.ndarray:
    x = rng.standard_normal((nrows, n)).astype(np.float32)
    spikes = rng.random((nrows, n)) < 0.01
    return np.where(spikes, x * 8, x).astype(np.float32)


def case(type_id: int, weights: bytes, n: int, rng) -> dict:
    traits = base.ggml_get_type_traits(type_id).contents
    cpu_traits = cpu.ggml_get_type_traits_cpu(type_id).contents
    deq = np.zeros(n, dtype=np.float32)
    wbuf = ctypes.create_string_buffer(weights, len(weights))
    traits.to_float(wbuf, deq.ctypes.data, n)
    act = float_rows(rng, 1, n)[0]
    atraits = base.ggml_get_type_traits(cpu_traits.vec_dot_type).contents
    abuf = ctypes.create_string_buffer(n // atraits.blck_size * atraits.type_size)
    cpu.ggml_get_type_traits_cpu(cpu_traits.vec_dot_type).contents.from_float(act.ctypes.data, abuf, n)
    result = ctypes.c_float(0)
    cpu_traits.vec_dot(n, ctypes.byref(result), 0, wbuf, 0, abuf, 0, 1)
    return {
        "count": n,
        "weights": b64(weights),
        "dequantized": b64(deq.tobytes()),
        "activations": b64(act.tobytes()),
        "activationType": cpu_traits.vec_dot_type,
        "activationBlocks": b64(abuf.raw),
        "dot": int(np.array([result.value], dtype=np.float32).view(np.uint32)[0]),
    }


def matrix_product(type_id: int, weights: bytes, rows: int, n: int, columns: np.ndarray) -> np.ndarray:
    cols = columns.shape[0]
    ctx = base.ggml_init(InitParams(64 << 20, None, False))
    w = base.ggml_new_tensor_2d(ctx, type_id, n, rows)
    ctypes.memmove(base.ggml_get_data(w), weights, len(weights))
    x = base.ggml_new_tensor_2d(ctx, F32, n, cols)
    src = np.ascontiguousarray(columns, dtype=np.float32)
    ctypes.memmove(base.ggml_get_data(x), src.ctypes.data, src.nbytes)
    y = base.ggml_mul_mat(ctx, w, x)
    graph = base.ggml_new_graph(ctx)
    base.ggml_build_forward_expand(graph, y)
    if cpu.ggml_graph_compute_with_ctx(ctx, graph, 1) != 0:
        sys.exit("ggml_graph_compute_with_ctx failed")
    out = np.frombuffer(ctypes.string_at(base.ggml_get_data(y), rows * cols * 4), dtype=np.float32).copy()
    base.ggml_free(ctx)
    return out  # column c's rows at out[c * rows ...]


def fixture(name: str) -> dict:
    type_id, block, block_bytes, halves, exponents = TYPES[name]
    imatrix, nibbles = name in IMATRIX_TYPES, NIBBLE_HALVES.get(name, [])
    rng = np.random.default_rng(0x5EED + type_id)
    cases = []
    for n in ([256, 512, 1024] if block == 256 else [32, 96, 256, 288]):
        cases.append(case(type_id, quantized_rows(type_id, float_rows(rng, 1, n), imatrix), n, rng))
        cases.append(case(type_id, random_blocks(rng, n // block, block_bytes, halves, exponents, nibbles), n, rng))
    # Matrices of IQ4_NL and MXFP4 whose rows are a multiple of 8 are repacked in llama.cpp's models
    # (their products are checked on tiny models against llama-server); these have other row
    # counts, which a graph sums as a model would.
    matrices = []
    shapes = ([(12, 256, 1, False), (12, 256, 2, True), (20, 288, 5, False), (12, 512, 9, True)] if block == 32 else
              [(4, 512, 1, False), (4, 512, 7, True), (12, 512, 8, False), (4, 256, 13, True), (20, 768, 16, False),
               (36, 1024, 32, True)] if name == "Q4_K" else
              [(16, 512, 1, False), (16, 512, 4, True), (16, 512, 7, False), (16, 512, 8, True), (24, 768, 13, False),
               (16, 1024, 32, True)])
    for rows, n, cols, random_bytes in shapes:
        weights = (random_blocks(rng, rows * n // block, block_bytes, halves, exponents, nibbles) if random_bytes
                   else quantized_rows(type_id, float_rows(rng, rows, n), imatrix))
        columns = float_rows(rng, cols, n)
        product = matrix_product(type_id, weights, rows, n, columns)
        matrices.append({
            "rows": rows, "count": n, "columns": cols,
            "weights": b64(weights), "inputs": b64(columns.tobytes()),
            "products": b64(product.tobytes()),
        })
    return {"type": name, "ggmlType": type_id, "cases": cases, "matrices": matrices}


def main():
    names = sys.argv[1:] or list(TYPES)
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        if name not in TYPES:
            sys.exit(f"unknown type {name}; known: {', '.join(TYPES)}")
        path = os.path.join(out_dir, f"{name.lower()}.json")
        with open(path + ".tmp", "w") as f:
            json.dump(fixture(name), f, indent=1)
            f.write("\n")
        os.replace(path + ".tmp", path)
        print(f"wrote {os.path.relpath(path, root)}")


if __name__ == "__main__":
    main()
