#!/usr/bin/env python3
"""Writes Tests/Fixtures/rerank/<model>.json: sentence-transformers' CrossEncoder scores for
query-document pairs on small BertForSequenceClassification models, which Hearth's reranker
must reproduce.

The models are made here, not downloaded: random weights drawn from SplitMix64 (the generator
of Tests/HearthTestSupport, so the Swift tests write the very same weights: CrossEncoderModels
there mirrors MODELS below), the WordPiece tokenizer of all-MiniLM-L6-v2 (scripts/fetch-models).
"minilm-cross-encoder" keeps all-MiniLM-L6-v2's trained encoder and pooler and draws only the
classifier: the size and arithmetic of cross-encoder/ms-marco-MiniLM-L6-v2, not its ranking
quality. Each fixture records a sha256 over the weights, which the tests check first, so a
drifting generator is told apart from wrong arithmetic.

For each pair the fixture holds the token ids and token type ids CrossEncoder feeds the model
(its own truncation, `longest_first`, at the model's maximum length), the raw logits
(predict with an identity activation) and the scores predict returns by default.

    pip install sentence-transformers transformers torch safetensors numpy
    scripts/make-rerank-fixtures.py [MODELS_DIR]

Writes the model folders to a temporary directory (or --keep DIR) and the fixtures to
Tests/Fixtures/rerank. Made with sentence-transformers 6.2.0, transformers 5.24.0 and
torch 2.13.0+cpu.
"""
import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile

import numpy as np

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
fixtures = os.path.join(root, "Tests", "Fixtures", "rerank")

GAMMA = np.uint64(0x9E3779B97F4A7C15)


def splitmix(seed, start, count):
    """Outputs start+1 … start+count of SplitMix64 seeded with `seed`: its state is a counter,
    so any stretch of the stream can be computed at once."""
    with np.errstate(over="ignore"):
        k = np.arange(start + 1, start + count + 1, dtype=np.uint64)
        z = np.uint64(seed) + k * GAMMA
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def uniform(seed, start, count, scale, offset):
    """offset + scale · u, u uniform in [-1, 1) from the top 24 bits, computed in double and
    rounded once to float: the steps CrossEncoderModels.swift takes."""
    u = (splitmix(seed, start, count) >> np.uint64(40)).astype(np.float64) / 16777216.0
    return ((2.0 * u - 1.0) * scale + offset).astype(np.float32)


def tensor_plan(spec):
    """(name, shape, scale, offset) of every tensor, in the order the stream fills them."""
    h, i, labels = spec["hidden"], spec["intermediate"], len(spec["labels"])
    plan = [
        ("bert.embeddings.word_embeddings.weight", [30522, h], 0.5, 0.0),
        ("bert.embeddings.position_embeddings.weight", [spec["positions"], h], 0.5, 0.0),
        ("bert.embeddings.token_type_embeddings.weight", [2, h], 0.5, 0.0),
        ("bert.embeddings.LayerNorm.weight", [h], 0.25, 1.0),
        ("bert.embeddings.LayerNorm.bias", [h], 0.125, 0.0),
    ]
    for layer in range(spec["layers"]):
        p = f"bert.encoder.layer.{layer}."
        for part in ["query", "key", "value"]:
            plan += [(p + f"attention.self.{part}.weight", [h, h], 0.25, 0.0),
                     (p + f"attention.self.{part}.bias", [h], 0.125, 0.0)]
        plan += [(p + "attention.output.dense.weight", [h, h], 0.25, 0.0),
                 (p + "attention.output.dense.bias", [h], 0.125, 0.0),
                 (p + "attention.output.LayerNorm.weight", [h], 0.25, 1.0),
                 (p + "attention.output.LayerNorm.bias", [h], 0.125, 0.0),
                 (p + "intermediate.dense.weight", [i, h], 0.25, 0.0),
                 (p + "intermediate.dense.bias", [i], 0.125, 0.0),
                 (p + "output.dense.weight", [h, i], 0.125, 0.0),
                 (p + "output.dense.bias", [h], 0.125, 0.0),
                 (p + "output.LayerNorm.weight", [h], 0.25, 1.0),
                 (p + "output.LayerNorm.bias", [h], 0.125, 0.0)]
    plan += [("bert.pooler.dense.weight", [h, h], 0.25, 0.0),
             ("bert.pooler.dense.bias", [h], 0.125, 0.0),
             ("classifier.weight", [labels, h], 0.5, 0.0),
             ("classifier.bias", [labels], 0.5, 0.0)]
    return plan


def random_weights(spec):
    tensors = {}
    start = 0
    for name, shape, scale, offset in tensor_plan(spec):
        count = int(np.prod(shape))
        tensors[name] = uniform(spec["seed"], start, count, scale, offset).reshape(shape)
        start += count
    return tensors


def minilm_weights(spec, minilm):
    """all-MiniLM-L6-v2's encoder and pooler under BertForSequenceClassification's names, and a
    drawn classifier."""
    from safetensors.numpy import load_file
    tensors = {"bert." + name: value for name, value in load_file(os.path.join(minilm, "model.safetensors")).items()
               if name != "embeddings.position_ids"}
    h, labels = spec["hidden"], len(spec["labels"])
    weight = uniform(spec["seed"], 0, labels * h, 0.5, 0.0)
    bias = uniform(spec["seed"], labels * h, labels, 0.5, 0.0)
    tensors["classifier.weight"] = weight.reshape(labels, h)
    tensors["classifier.bias"] = bias
    return tensors


def fingerprint(tensors):
    """sha256 over each tensor's name, a zero byte and its little-endian float32 values, in
    name order."""
    digest = hashlib.sha256()
    for name in sorted(tensors):
        digest.update(name.encode() + b"\0")
        digest.update(np.ascontiguousarray(tensors[name], dtype="<f4").tobytes())
    return digest.hexdigest()


# Each model: its hyperparameters, labels, how its maximum length is set and what its config
# says about the activation. CrossEncoderModels.swift holds the same table.
MODELS = [
    # One label, sigmoid by default; tokenizer_config.json's model_max_length (48) below the
    # position table (128) sets the length.
    dict(name="tiny-cross-encoder", seed=0x5EED_0001, hidden=64, intermediate=128, layers=2, heads=4,
         positions=128, labels=["LABEL_0"], model_max_length=48),
    # Three labels (an NLI-style head): logits as they are; no model_max_length, so the
    # position table (40) is the limit.
    dict(name="tiny-nli-cross-encoder", seed=0x5EED_0002, hidden=64, intermediate=128, layers=2, heads=4,
         positions=40, labels=["contradiction", "entailment", "neutral"]),
    # One label whose config.json asks for the identity, as ms-marco cross-encoders do
    # (sbert_ce_default_activation_function); sentence_bert_config.json's max_seq_length (32)
    # sets the length through modules.json, as a saved CrossEncoder folder has it.
    dict(name="tiny-logit-cross-encoder", seed=0x5EED_0003, hidden=64, intermediate=128, layers=2, heads=4,
         positions=128, labels=["LABEL_0"], model_max_length=512, max_seq_length=32,
         config_extra={"sbert_ce_default_activation_function": "torch.nn.modules.linear.Identity"}),
    # all-MiniLM-L6-v2's encoder (6 layers, 384 wide, 512 positions) with a drawn classifier.
    dict(name="minilm-cross-encoder", seed=0x5EED_0004, hidden=384, intermediate=1536, layers=6, heads=12,
         positions=512, labels=["LABEL_0"], model_max_length=512, from_minilm=True),
]


def write_model(spec, folder, minilm):
    from safetensors.numpy import save_file
    os.makedirs(folder, exist_ok=True)
    tensors = minilm_weights(spec, minilm) if spec.get("from_minilm") else random_weights(spec)
    save_file(tensors, os.path.join(folder, "model.safetensors"))
    labels = spec["labels"]
    config = {
        "architectures": ["BertForSequenceClassification"],
        "model_type": "bert",
        "hidden_size": spec["hidden"],
        "intermediate_size": spec["intermediate"],
        "num_hidden_layers": spec["layers"],
        "num_attention_heads": spec["heads"],
        "max_position_embeddings": spec["positions"],
        "type_vocab_size": 2,
        "vocab_size": 30522,
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-12,
        "id2label": {str(i): label for i, label in enumerate(labels)},
        "label2id": {label: i for i, label in enumerate(labels)},
    }
    config.update(spec.get("config_extra", {}))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    for name in ["tokenizer.json", "vocab.txt", "special_tokens_map.json"]:
        shutil.copy(os.path.join(minilm, name), folder)
    tokenizer_config = {"do_lower_case": True, "tokenizer_class": "BertTokenizer"}
    if "model_max_length" in spec:
        tokenizer_config["model_max_length"] = spec["model_max_length"]
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(tokenizer_config, f, indent=2)
    if "max_seq_length" in spec:
        with open(os.path.join(folder, "modules.json"), "w") as f:
            json.dump([{"idx": 0, "name": "0", "path": "",
                        "type": "sentence_transformers.base.modules.transformer.Transformer"}], f, indent=2)
        with open(os.path.join(folder, "sentence_bert_config.json"), "w") as f:
            json.dump({"transformer_task": "sequence-classification", "max_seq_length": spec["max_seq_length"]}, f, indent=2)
        with open(os.path.join(folder, "config_sentence_transformers.json"), "w") as f:
            json.dump({"model_type": "CrossEncoder"}, f, indent=2)
    return fingerprint(tensors)


LONG_DOCUMENT = (
    "The history of the bicycle begins in the early nineteenth century, when inventors in Germany and "
    "France built wooden machines pushed along by the rider's feet. Pedals fixed to the front wheel came "
    "in the 1860s, and the high-wheeled 'penny-farthing' followed because a larger wheel meant a longer "
    "stride for every turn of the pedals. It was fast but dangerous: a rider sat high above the front "
    "axle and could be thrown over the handlebars by a stone in the road. The safety bicycle of the 1880s, "
    "with two wheels of equal size and a chain driving the rear one, solved this, and the pneumatic tyre "
    "made it comfortable. Within a decade millions were sold, and cycling clubs, road maps and repair "
    "shops spread across Europe and North America."
)

PAIRS = [
    ("How many people live in Berlin?", "Berlin has a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers."),
    ("How many people live in Berlin?", "New York City is famous for the Metropolitan Museum of Art."),
    ("How many people live in Berlin?", "Berlin is well known for its museums."),
    ("what is the capital of france", "Paris is the capital and most populous city of France."),
    ("what is the capital of france", "The Eiffel Tower was completed in 1889."),
    ("best way to cook rice", "Rinse the rice, then simmer it covered in twice its volume of water for eighteen minutes."),
    ("best way to cook rice", "The stock market closed higher on Friday."),
    ("Who wrote Hamlet?", "Hamlet is a tragedy written by William Shakespeare sometime between 1599 and 1601."),
    ("Wer schrieb Faust?", "Johann Wolfgang von Goethe schrieb Faust; der erste Teil erschien 1808."),
    ("café crème brûlée recipe", "Crème brûlée is a dessert of rich custard topped with caramelized sugar."),
    ("北京的人口是多少", "北京市是中华人民共和国的首都，人口约两千万。"),
    ("symptoms of flu", "Fever, cough, sore throat, runny nose, muscle aches and fatigue are common."),
    ("history of the bicycle", LONG_DOCUMENT),
    ("history of the bicycle", LONG_DOCUMENT + " " + LONG_DOCUMENT),
    # Past 512 tokens: cut even for the MiniLM-sized model, the document alone, then both texts.
    ("history of the bicycle", " ".join([LONG_DOCUMENT] * 4)),
    (" ".join(["what did cyclists ride before the safety bicycle and why did it change"] * 25), " ".join([LONG_DOCUMENT] * 3)),
    ("why were penny-farthings dangerous " * 6, "A rider sat high above the front axle."),
    ("tell me everything about the safety bicycle and the pneumatic tyre " * 4, LONG_DOCUMENT),
    ("", "A document with an empty query."),
    ("a query with an empty document", ""),
    ("punctuation!!! and... symbols?? #hashtag @user", "e-mail: someone@example.com, URL: https://example.com/a?b=c"),
    ("   spaces\tand\nnewlines  ", "tabs\tand\r\ncarriage returns"),
    ("x", "y"),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models_dir", nargs="?", default=os.path.join(root, "models"))
    parser.add_argument("--keep", help="write the model folders here instead of a temporary directory")
    args = parser.parse_args()
    minilm = os.path.join(args.models_dir, "all-MiniLM-L6-v2")
    if not os.path.exists(os.path.join(minilm, "model.safetensors")):
        sys.exit(f"{minilm} is missing: run scripts/fetch-models first.")

    import sentence_transformers
    import torch
    import transformers
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)
    os.makedirs(fixtures, exist_ok=True)
    work = args.keep or tempfile.mkdtemp()
    try:
        for spec in MODELS:
            folder = os.path.join(work, spec["name"])
            weights = write_model(spec, folder, minilm)
            model = CrossEncoder(folder, device="cpu")
            items = []
            for query, document in PAIRS:
                features = model.preprocess([(query, document)])
                length = int(features["attention_mask"][0].sum())
                items.append({
                    "query": query,
                    "document": document,
                    "ids": features["input_ids"][0][:length].tolist(),
                    "type_ids": features["token_type_ids"][0][:length].tolist(),
                })
            # One call for all pairs, as a user would make it: CrossEncoder batches and pads.
            scores = model.predict([(q, d) for q, d in PAIRS], batch_size=8)
            logits = model.predict([(q, d) for q, d in PAIRS], batch_size=8, activation_fn=torch.nn.Identity())
            for item, score, logit in zip(items, scores, logits):
                item["scores"] = np.atleast_1d(score).astype(float).tolist()
                item["logits"] = np.atleast_1d(logit).astype(float).tolist()
            fixture = {
                "model": spec["name"],
                "weights_sha256": weights,
                "max_length": model.max_seq_length,
                "labels": spec["labels"],
                "activation": type(model.activation_fn).__name__,
                "made_with": {"sentence_transformers": sentence_transformers.__version__,
                              "transformers": transformers.__version__, "torch": torch.__version__},
                "pairs": items,
            }
            path = os.path.join(fixtures, spec["name"] + ".json")
            with open(path, "w") as f:
                # One line per pair, so that a regenerated fixture's diff shows which pairs moved.
                head = json.dumps({k: v for k, v in fixture.items() if k != "pairs"}, indent=1, ensure_ascii=False)
                lines = ",\n".join("  " + json.dumps(item, ensure_ascii=False) for item in items)
                f.write(head[:-2] + ',\n "pairs": [\n' + lines + "\n ]\n}\n")
            print(f"{path}: {len(items)} pairs, max length {model.max_seq_length}, {fixture['activation']}")
    finally:
        if not args.keep:
            shutil.rmtree(work)


if __name__ == "__main__":
    main()
