#!/usr/bin/env python3
"""Prints the reference values SafetensorsTests compares against, read with the Python
`safetensors` and `numpy` packages (pip install safetensors numpy).

Usage: scripts/safetensors-fixtures.py [models/all-MiniLM-L6-v2/model.safetensors]
"""
import json
import struct
import sys

import numpy as np
from safetensors import safe_open

path = sys.argv[1] if len(sys.argv) > 1 else "models/all-MiniLM-L6-v2/model.safetensors"

with open(path, "rb") as f:
    header_length = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(header_length))
order = sorted((k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"])

with safe_open(path, framework="numpy") as st:
    metadata = st.metadata()
    print(f"header length: {header_length}")
    print(f"metadata: {json.dumps(metadata)}")
    print(f"tensor count: {len(order)}")
    print(f"first five in data order: {json.dumps(order[:5])}")
    print(f"last in data order: {order[-1]}")
    picks = {
        "embeddings.position_ids": [0, 1, 511],
        "embeddings.word_embeddings.weight": [0, 1, 383, 384, 101 * 384 + 7, 30522 * 384 - 1],
        "embeddings.LayerNorm.weight": [0, 191, 383],
        "encoder.layer.3.attention.self.query.weight": [0, 384 * 100 + 50, 384 * 384 - 1],
        "encoder.layer.5.output.LayerNorm.bias": [0, 1, 2, 383],
        "pooler.dense.bias": [0, 383],
    }
    for name, indices in picks.items():
        if name not in header:
            continue
        t = st.get_tensor(name)
        flat = t.reshape(-1)
        values = [flat[i].item() for i in indices]
        total = float(np.sum(t.astype(np.float64)))
        print(f"{name}: dtype {header[name]['dtype']} shape {list(t.shape)} "
              f"offsets {header[name]['data_offsets']} values at {indices} = {values!r} sum {total!r}")
