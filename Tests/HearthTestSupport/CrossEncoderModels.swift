import Crypto
import Foundation
import HearthFormats

/// The cross-encoders of Tests/Fixtures/rerank, written here as `scripts/make-rerank-fixtures.py`
/// writes them: BertForSequenceClassification folders with weights drawn from SplitMix64
/// (the script's MODELS table, mirrored) and all-MiniLM-L6-v2's WordPiece tokenizer, which
/// `scripts/fetch-models` brings. Each fixture holds sentence-transformers' CrossEncoder scores
/// on its model and a sha256 over the weights, which `weightsSHA256` must equal first.
public struct CrossEncoderSpec: Sendable, CustomStringConvertible {
    /// The folder's and the fixture's name.
    public var name: String
    /// The SplitMix64 seed of its weights.
    public var seed: UInt64
    /// hidden_size, intermediate_size, num_hidden_layers, num_attention_heads and
    /// max_position_embeddings.
    public var hidden = 64
    public var intermediate = 128
    public var layers = 2
    public var heads = 4
    public var positions = 128
    /// id2label, in order.
    public var labels = ["LABEL_0"]
    /// `model_max_length` in tokenizer_config.json; none when nil.
    public var modelMaxLength: Int?
    /// `max_seq_length` in sentence_bert_config.json, with a modules.json and
    /// config_sentence_transformers.json as a saved CrossEncoder has them; none when nil.
    public var maxSeqLength: Int?
    /// Extra config.json entries, JSON text (`"key": value`).
    public var configExtra: String?
    /// Keeps all-MiniLM-L6-v2's encoder and pooler; only the classifier is drawn.
    public var fromMiniLM = false

    public var description: String { name }

    /// A tiny one-label model whose length (48) comes from tokenizer_config.json.
    public static let tiny = CrossEncoderSpec(name: "tiny-cross-encoder", seed: 0x5EED_0001, modelMaxLength: 48)
    /// Three labels, no model_max_length: the position table (40) is the limit.
    public static let tinyNLI = CrossEncoderSpec(name: "tiny-nli-cross-encoder", seed: 0x5EED_0002, positions: 40,
                                                 labels: ["contradiction", "entailment", "neutral"])
    /// One label whose config asks for raw logits, length 32 from sentence_bert_config.json.
    public static let tinyLogit = CrossEncoderSpec(
        name: "tiny-logit-cross-encoder", seed: 0x5EED_0003, modelMaxLength: 512, maxSeqLength: 32,
        configExtra: "\"sbert_ce_default_activation_function\": \"torch.nn.modules.linear.Identity\"")
    /// all-MiniLM-L6-v2's encoder with a drawn classifier: cross-encoder/ms-marco-MiniLM-L6-v2's
    /// size and arithmetic.
    public static let miniLM = CrossEncoderSpec(name: "minilm-cross-encoder", seed: 0x5EED_0004, hidden: 384, intermediate: 1536,
                                                layers: 6, heads: 12, positions: 512, modelMaxLength: 512, fromMiniLM: true)

    /// Every fixture's model.
    public static let all = [tiny, tinyNLI, tinyLogit, miniLM]

    /// Writes the model folder in `folder/name`, returning the folder and the weights' sha256.
    public func write(in folder: URL) throws -> (url: URL, weightsSHA256: String) {
        let miniLM = try TestFiles.modelURL("all-MiniLM-L6-v2")
        let url = folder.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let tensors = try fromMiniLM ? miniLMTensors(miniLM) : randomTensors()
        try SafetensorsWriter.write(tensors, to: url.appendingPathComponent("model.safetensors"))
        let id2label = labels.enumerated().map { "\"\($0.offset)\": \"\($0.element)\"" }.joined(separator: ", ")
        let label2id = labels.enumerated().map { "\"\($0.element)\": \($0.offset)" }.joined(separator: ", ")
        let config = """
            {"architectures": ["BertForSequenceClassification"], "model_type": "bert", "hidden_size": \(hidden),
             "intermediate_size": \(intermediate), "num_hidden_layers": \(layers), "num_attention_heads": \(heads),
             "max_position_embeddings": \(positions), "type_vocab_size": 2, "vocab_size": 30522, "hidden_act": "gelu",
             "layer_norm_eps": 1e-12, "id2label": {\(id2label)}, "label2id": {\(label2id)}\(configExtra.map { ", " + $0 } ?? "")}
            """
        try Data(config.utf8).write(to: url.appendingPathComponent("config.json"))
        for file in ["tokenizer.json", "vocab.txt", "special_tokens_map.json"] {
            let target = url.appendingPathComponent(file)
            try? FileManager.default.removeItem(at: target)
            try FileManager.default.copyItem(at: miniLM.appendingPathComponent(file), to: target)
        }
        let length = modelMaxLength.map { ", \"model_max_length\": \($0)" } ?? ""
        try Data("{\"do_lower_case\": true, \"tokenizer_class\": \"BertTokenizer\"\(length)}".utf8)
            .write(to: url.appendingPathComponent("tokenizer_config.json"))
        if let maxSeqLength {
            try Data("""
                [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.base.modules.transformer.Transformer"}]
                """.utf8).write(to: url.appendingPathComponent("modules.json"))
            try Data("{\"transformer_task\": \"sequence-classification\", \"max_seq_length\": \(maxSeqLength)}".utf8)
                .write(to: url.appendingPathComponent("sentence_bert_config.json"))
            try Data("{\"model_type\": \"CrossEncoder\"}".utf8).write(to: url.appendingPathComponent("config_sentence_transformers.json"))
        }
        return (url, SafetensorsWriter.fingerprint(tensors))
    }

    /// (name, shape, scale, offset) of every tensor, in the order the stream fills them.
    private var plan: [(String, [Int], Double, Double)] {
        let h = hidden, i = intermediate
        var plan: [(String, [Int], Double, Double)] = [
            ("bert.embeddings.word_embeddings.weight", [30522, h], 0.5, 0),
            ("bert.embeddings.position_embeddings.weight", [positions, h], 0.5, 0),
            ("bert.embeddings.token_type_embeddings.weight", [2, h], 0.5, 0),
            ("bert.embeddings.LayerNorm.weight", [h], 0.25, 1),
            ("bert.embeddings.LayerNorm.bias", [h], 0.125, 0),
        ]
        for layer in 0..<layers {
            let p = "bert.encoder.layer.\(layer)."
            for part in ["query", "key", "value"] {
                plan += [(p + "attention.self.\(part).weight", [h, h], 0.25, 0), (p + "attention.self.\(part).bias", [h], 0.125, 0)]
            }
            plan += [(p + "attention.output.dense.weight", [h, h], 0.25, 0), (p + "attention.output.dense.bias", [h], 0.125, 0),
                     (p + "attention.output.LayerNorm.weight", [h], 0.25, 1), (p + "attention.output.LayerNorm.bias", [h], 0.125, 0),
                     (p + "intermediate.dense.weight", [i, h], 0.25, 0), (p + "intermediate.dense.bias", [i], 0.125, 0),
                     (p + "output.dense.weight", [h, i], 0.125, 0), (p + "output.dense.bias", [h], 0.125, 0),
                     (p + "output.LayerNorm.weight", [h], 0.25, 1), (p + "output.LayerNorm.bias", [h], 0.125, 0)]
        }
        plan += [("bert.pooler.dense.weight", [h, h], 0.25, 0), ("bert.pooler.dense.bias", [h], 0.125, 0),
                 ("classifier.weight", [labels.count, h], 0.5, 0), ("classifier.bias", [labels.count], 0.5, 0)]
        return plan
    }

    /// offset + scale · u, u uniform in [-1, 1) from the top 24 bits of each draw, computed in
    /// double and rounded once to float, as the script's numpy does.
    private static func uniform(_ random: inout SplitMix64, count: Int, scale: Double, offset: Double) -> [Float] {
        (0..<count).map { _ in
            let u = Double(random.next() >> 40) / 16_777_216
            return Float((2 * u - 1) * scale + offset)
        }
    }

    private func randomTensors() -> [String: SafetensorsWriter.Tensor] {
        var random = SplitMix64(seed: seed)
        var tensors: [String: SafetensorsWriter.Tensor] = [:]
        for (name, shape, scale, offset) in plan {
            tensors[name] = .init(shape: shape, values: Self.uniform(&random, count: shape.reduce(1, *), scale: scale, offset: offset))
        }
        return tensors
    }

    private func miniLMTensors(_ folder: URL) throws -> [String: SafetensorsWriter.Tensor] {
        let file = try SafetensorsFile(contentsOf: folder.appendingPathComponent("model.safetensors"))
        var tensors: [String: SafetensorsWriter.Tensor] = [:]
        for tensor in file.tensors where tensor.name != "embeddings.position_ids" {
            tensors["bert." + tensor.name] = .init(shape: tensor.shape, values: try file.floats(tensor))
        }
        var random = SplitMix64(seed: seed)
        tensors["classifier.weight"] = .init(shape: [labels.count, hidden],
                                             values: Self.uniform(&random, count: labels.count * hidden, scale: 0.5, offset: 0))
        tensors["classifier.bias"] = .init(shape: [labels.count], values: Self.uniform(&random, count: labels.count, scale: 0.5, offset: 0))
        return tensors
    }
}

/// Writes F32 tensors as a safetensors file, for models a test makes.
public enum SafetensorsWriter {
    /// A tensor's shape and values, row-major.
    public struct Tensor: Sendable {
        /// Dimensions, outermost first.
        public var shape: [Int]
        /// The values, row-major.
        public var values: [Float]

        /// A tensor; `values` must have as many elements as `shape` says.
        public init(shape: [Int], values: [Float]) {
            precondition(shape.reduce(1, *) == values.count)
            self.shape = shape
            self.values = values
        }
    }

    /// Writes `tensors` in name order.
    public static func write(_ tensors: [String: Tensor], to url: URL) throws {
        var entries: [String] = []
        var offset = 0
        for name in tensors.keys.sorted() {
            let tensor = tensors[name]!
            let bytes = tensor.values.count * 4
            entries.append("\"\(name)\":{\"dtype\":\"F32\",\"shape\":[\(tensor.shape.map(String.init).joined(separator: ","))],\"data_offsets\":[\(offset),\(offset + bytes)]}")
            offset += bytes
        }
        var header = Array(("{" + entries.joined(separator: ",") + "}").utf8)
        // The data starts 8-byte aligned, as the format's writers pad it.
        while header.count % 8 != 0 { header.append(UInt8(ascii: " ")) }
        FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var length = UInt64(header.count).littleEndian
        try handle.write(contentsOf: Data(bytes: &length, count: 8) + Data(header))
        for name in tensors.keys.sorted() {
            try tensors[name]!.values.withUnsafeBufferPointer { try handle.write(contentsOf: Data(buffer: $0)) }
        }
    }

    /// sha256 over each tensor's name, a zero byte and its little-endian float32 values, in
    /// name order: the script's `fingerprint`.
    public static func fingerprint(_ tensors: [String: Tensor]) -> String {
        var hash = SHA256()
        for name in tensors.keys.sorted() {
            hash.update(data: Data(name.utf8) + Data([0]))
            tensors[name]!.values.withUnsafeBufferPointer { hash.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        }
        return hash.finalize().map { String(format: "%02x", $0) }.joined()
    }
}

/// One fixture of Tests/Fixtures/rerank: CrossEncoder's tokens and scores on a model.
public struct CrossEncoderFixture: Decodable, Sendable {
    public struct Pair: Decodable, Sendable, CustomStringConvertible {
        public let query: String
        public let document: String
        public let ids: [Int32]
        public let type_ids: [Int32]
        /// What `CrossEncoder.predict` returns by default, one per label.
        public let scores: [Float]
        /// The raw logits, one per label.
        public let logits: [Float]

        public var description: String { "(\(query.prefix(24).debugDescription), \(document.prefix(24).debugDescription))" }
    }

    public let model: String
    public let weights_sha256: String
    public let max_length: Int
    public let labels: [String]
    public let activation: String
    public let pairs: [Pair]

    /// The fixture of the model called `name`.
    public static func named(_ name: String) throws -> CrossEncoderFixture {
        let url = TestFiles.packageRoot.appendingPathComponent("Tests/Fixtures/rerank/\(name).json")
        return try JSONDecoder().decode(CrossEncoderFixture.self, from: Data(contentsOf: url))
    }
}

extension CrossEncoderSpec {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var root: URL?
    nonisolated(unsafe) private static var done: [String: (url: URL, weightsSHA256: String)] = [:]

    /// The model's folder, written on first use in this process into a temporary folder that
    /// goes when the process exits, and its weights' sha256.
    public func folder() throws -> (url: URL, weightsSHA256: String) {
        Self.lock.lock()
        defer { Self.lock.unlock() }
        if let cached = Self.done[name] { return cached }
        if Self.root == nil {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-cross-encoders-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            Self.root = url
            atexit { if let root = CrossEncoderSpec.root { try? FileManager.default.removeItem(at: root) } }
        }
        let result = try write(in: Self.root!)
        Self.done[name] = result
        return result
    }
}
