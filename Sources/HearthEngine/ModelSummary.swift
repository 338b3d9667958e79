import Foundation
import HearthCore
import HearthFormats

/// What a GGUF model is, read from its header: architecture, shape, tokenizer and storage.
/// `hearth inspect` prints it, as text or as JSON.
///
/// Architecture keys are read as `<architecture>.<key>` (`llama.block_count`). Values the
/// file does not state are nil, except where GGUF defines a default: the KV head count is
/// the head count, the head dimension is the embedding length over the head count, and the
/// vocabulary size is the number of tokens.
public struct ModelSummary: Sendable, Codable, Equatable {
    /// How many tensors of one element type the model has, and their bytes.
    public struct TensorTypeUsage: Sendable, Codable, Equatable {
        /// The element type.
        public var type: GGMLType
        /// Number of tensors.
        public var count: Int
        /// Bytes of data.
        public var bytes: Int

        enum CodingKeys: String, CodingKey { case type, count, bytes }

        /// Makes a usage entry.
        public init(type: GGMLType, count: Int, bytes: Int) {
            self.type = type
            self.count = count
            self.bytes = bytes
        }

        // By name (`Q4_K`) rather than GGML's number, for people reading the JSON.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(type.name, forKey: .type)
            try container.encode(count, forKey: .count)
            try container.encode(bytes, forKey: .bytes)
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let name = try container.decode(String.self, forKey: .type)
            guard let type = GGMLType.allCases.first(where: { $0.name == name }) else {
                throw DecodingError.dataCorruptedError(forKey: .type, in: container, debugDescription: "unknown GGML type \(name)")
            }
            self.type = type
            count = try container.decode(Int.self, forKey: .count)
            bytes = try container.decode(Int.self, forKey: .bytes)
        }
    }

    /// The path the file was read from.
    public var path: String
    /// `general.architecture`, such as `llama` or `gemma3`.
    public var architecture: String?
    /// `general.name`.
    public var name: String?
    /// The quantization the file was made with (`general.file_type`), such as `Q4_K_M`.
    public var fileType: String?
    /// Total elements of all tensors.
    public var parameterCount: Int
    /// Number of tensors.
    public var tensorCount: Int
    /// Tensors per element type, most bytes first.
    public var tensorTypes: [TensorTypeUsage]
    /// Longest context the model was trained for, in tokens.
    public var contextLength: Int?
    /// Number of transformer blocks (layers).
    public var blockCount: Int?
    /// Width of the residual stream.
    public var embeddingLength: Int?
    /// Width of the feed-forward hidden layer.
    public var feedForwardLength: Int?
    /// Attention (query) heads.
    public var headCount: Int?
    /// Key/value heads; fewer than `headCount` under grouped-query attention.
    public var kvHeadCount: Int?
    /// Blocks of a hybrid family that keep a recurrent state instead of keys and values.
    public var recurrentBlockCount: Int?
    /// Bytes of those blocks' recurrent state, a sequence (whatever its length).
    public var recurrentStateBytes: Int?
    /// Width of one attention head.
    public var headDimension: Int?
    /// RoPE frequency base (theta).
    public var ropeFrequencyBase: Double?
    /// Number of tokens in the vocabulary.
    public var vocabularySize: Int?
    /// `tokenizer.ggml.model`: `gpt2` (byte-level BPE), `llama` (SentencePiece), `bert`, ...
    public var tokenizerModel: String?
    /// `tokenizer.ggml.pre`: the pre-tokenizer that splits text before BPE, such as `smollm`.
    public var preTokenizer: String?
    /// Beginning-of-sequence token id.
    public var bosTokenID: Int?
    /// End-of-sequence token id.
    public var eosTokenID: Int?
    /// Whether the file ships a chat template.
    public var hasChatTemplate: Bool
    /// The chat template (`tokenizer.chat_template`), a Jinja program.
    public var chatTemplate: String?
    /// Size of the file in bytes.
    public var fileSize: Int
    /// GGUF format version.
    public var ggufVersion: Int
    /// Alignment of tensor data in bytes.
    public var alignment: Int
    /// Whether an engine runs this file: "yes", or why not. Set by the engine, which knows its
    /// families (nil when nobody asked).
    public var runs: String?
    /// The family the engine runs it as, for people ("Qwen3 mixture of experts"). Set by the engine.
    public var family: String?
    /// What it can do: completion, chat, tools, thinking, embedding. Set by the engine.
    public var capabilities: [String]?
    /// Where its chat template comes from. Set by the engine.
    public var templateSource: String?
    /// The sampling its authors recommend and where that comes from. Set by the engine.
    public var recommendedSampling: String?
    /// Bytes the KV cache takes a position (keys and values of every layer), by cache type
    /// (`f16`, and `q8_0` and `q4_0` where heads are a multiple of 32 wide).
    public var kvCacheBytesPerPosition: [String: Int]?

    /// Reads the summary from an open file's header.
    public init(_ file: GGUFFile) {
        path = file.mapping.path
        let architecture = file.architecture
        self.architecture = architecture
        func key(_ suffix: String) -> String? { architecture.map { "\($0).\(suffix)" } }
        func int(_ suffix: String) -> Int? { key(suffix).flatMap(file.int) }

        name = file.string("general.name")
        fileType = file.int("general.file_type").map(Self.fileTypeName)

        var usage: [GGMLType: TensorTypeUsage] = [:]
        var parameters = 0
        for tensor in file.tensors {
            parameters += tensor.elementCount
            usage[tensor.type, default: TensorTypeUsage(type: tensor.type, count: 0, bytes: 0)].count += 1
            usage[tensor.type]!.bytes += tensor.byteCount
        }
        parameterCount = parameters
        tensorCount = file.tensors.count
        tensorTypes = usage.values.sorted { ($0.bytes, $1.type.rawValue) > ($1.bytes, $0.type.rawValue) }

        contextLength = int("context_length")
        blockCount = int("block_count")
        embeddingLength = int("embedding_length")
        feedForwardLength = int("feed_forward_length")
        let heads = int("attention.head_count")
        headCount = heads
        kvHeadCount = int("attention.head_count_kv") ?? heads
        if let keyLength = int("attention.key_length") {
            headDimension = keyLength
        } else if let heads, heads > 0, let width = embeddingLength {
            headDimension = width / heads
        }
        ropeFrequencyBase = key("rope.freq_base").flatMap { file.metadata[$0]?.doubleValue }
        vocabularySize = int("vocab_size") ?? file.array("tokenizer.ggml.tokens")?.count
        var attentionBlocks = blockCount
        if let configuration = try? ModelConfiguration(gguf: file) {
            kvHeadCount = configuration.kvHeadCount
            feedForwardLength = configuration.feedForwardLength
            attentionBlocks = configuration.attentionLayerCount
            if configuration.recurrentLayerCount > 0 {
                recurrentBlockCount = configuration.recurrentLayerCount
                recurrentStateBytes = configuration.recurrentLayerCount * configuration.recurrentStateFloats * MemoryLayout<Float>.size
            }
            // Layers of several shapes (Gemma 4's) are counted one by one.
            if Set(configuration.cacheShapes).count > 1 {
                let heads = configuration.cacheShapes.map(\.headDimension)
                let types = KVCacheType.allCases.filter { type in heads.allSatisfy { type.unsupportedReason(headDimension: $0) == nil } }
                kvCacheBytesPerPosition = Dictionary(uniqueKeysWithValues: types.map {
                    ($0.rawValue, KVCacheTypes(keys: $0, values: $0).bytesPerPosition(configuration))
                })
                attentionBlocks = nil
            }
        }
        if let blocks = attentionBlocks, let kvHeads = kvHeadCount, let d = headDimension, blocks > 0, kvHeads > 0, d > 0 {
            let types = KVCacheType.allCases.filter { $0.unsupportedReason(headDimension: d) == nil }
            kvCacheBytesPerPosition = Dictionary(uniqueKeysWithValues: types.map {
                ($0.rawValue, blocks * kvHeads * 2 * $0.rowBytes(headDimension: d))
            })
        }

        tokenizerModel = file.string("tokenizer.ggml.model")
        preTokenizer = file.string("tokenizer.ggml.pre")
        bosTokenID = file.int("tokenizer.ggml.bos_token_id")
        eosTokenID = file.int("tokenizer.ggml.eos_token_id")
        chatTemplate = file.string("tokenizer.chat_template")
        hasChatTemplate = chatTemplate != nil

        fileSize = file.fileSize
        ggufVersion = Int(file.version)
        alignment = file.alignment
    }

    // MARK: - Presentation

    /// The summary as JSON: pretty-printed, keys sorted, the chat template in full.
    public func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // A damaged file can hold a NaN RoPE base; JSON has no NaN, and inspecting must not fail.
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }

    /// The summary as `key: value` lines, values aligned, one line per known fact.
    public var text: String {
        var lines: [(String, String)] = [
            ("file", path),
            ("format", "GGUF v\(ggufVersion), alignment \(alignment)"),
            ("size", HumanReadable.bytes(fileSize)),
        ]
        func add(_ key: String, _ value: (some CustomStringConvertible)?) {
            if let value { lines.append((key, value.description)) }
        }
        add("architecture", architecture)
        add("runs in Hearth", runs)
        add("family", family)
        add("capabilities", capabilities?.joined(separator: ", "))
        add("template source", templateSource)
        add("recommended sampling", recommendedSampling)
        add("name", name)
        add("file type", fileType)
        lines.append(("parameters", "\(HumanReadable.count(parameterCount)) (\(Self.groupDigits(parameterCount)))"))
        lines.append(("tensors", "\(tensorCount)"))
        func rightAligned(_ column: [String]) -> [String] {
            let width = column.map(\.count).max() ?? 0
            return column.map { String(repeating: " ", count: width - $0.count) + $0 }
        }
        let counts = rightAligned(tensorTypes.map { String($0.count) })
        let sizes = rightAligned(tensorTypes.map { HumanReadable.bytes($0.bytes) })
        for (i, usage) in tensorTypes.enumerated() {
            lines.append(("  \(usage.type.name)", "\(counts[i]) × \(sizes[i])"))
        }
        add("context length", contextLength)
        add("blocks", blockCount)
        add("embedding length", embeddingLength)
        add("feed-forward length", feedForwardLength)
        add("heads", headCount)
        add("KV heads", kvHeadCount)
        add("head dimension", headDimension)
        if let blocks = recurrentBlockCount, let bytes = recurrentStateBytes {
            add("recurrent state", "\(HumanReadable.bytes(bytes)) a sequence (\(blocks) of \(blockCount ?? blocks) blocks)")
        }
        if let bytes = kvCacheBytesPerPosition {
            add("KV cache a position", KVCacheType.allCases.compactMap { type in
                bytes[type.rawValue].map { "\(type) \(HumanReadable.bytes($0))" }
            }.joined(separator: ", "))
        }
        add("RoPE base", ropeFrequencyBase.map(Self.formatNumber))
        add("vocabulary size", vocabularySize)
        add("tokenizer", tokenizerModel)
        add("pre-tokenizer", preTokenizer)
        add("BOS token", bosTokenID)
        add("EOS token", eosTokenID)
        lines.append(("chat template", chatTemplate.map { "yes (\($0.count) characters)" } ?? "none"))

        let width = lines.map { $0.0.count }.max()! + 2
        return lines.map { key, value in
            (key + ":").padding(toLength: width, withPad: " ", startingAt: 0) + value + "\n"
        }.joined()
    }

    /// `134515008` as `134,515,008`.
    static func groupDigits(_ value: Int) -> String {
        let digits = Array(String(value.magnitude))
        var out = ""
        for (i, digit) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(digit)
        }
        return value < 0 ? "-" + out : out
    }

    /// Whole numbers without a fraction (`100000`), others as Swift prints them.
    static func formatNumber(_ value: Double) -> String {
        if value.rounded() == value, abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// llama.cpp's name for a `general.file_type` number, as in `llama_ftype`.
    static func fileTypeName(_ number: Int) -> String {
        let names: [Int: String] = [
            0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
            10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
            16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
            22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
            28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0",
            37: "TQ2_0", 38: "MXFP4_MOE",
        ]
        return names[number] ?? "unknown (\(number))"
    }
}

extension ModelSummary {
    /// The summary of `gguf` with what this engine knows of it: whether it runs, its family,
    /// capabilities, template source and recommended sampling.
    public static func describing(_ gguf: GGUFFile) -> ModelSummary {
        var summary = ModelSummary(gguf)
        summary.runs = TransformerModel.unsupportedReason(gguf).map { "no: \($0)" } ?? "yes"
        let architecture = gguf.architecture ?? ""
        if architecture == "bert" {
            summary.family = "BERT (sentence embeddings)"
            summary.capabilities = ["embedding"]
            return summary
        }
        summary.family = ArchitectureRegistry.title(architecture)
        var capabilities = ["completion"]
        if let format = try? ChatFormat(gguf: gguf) {
            capabilities.append("chat")
            if format.takesTools { capabilities.append("tools") }
            if format.thinks { capabilities.append("thinking") }
            summary.templateSource = format.isModelTemplate
                ? "the file's own (tokenizer.chat_template)"
                : "Hearth's known \(summary.family ?? architecture) template (the file has none)"
        } else {
            summary.templateSource = "none: the file has no chat template and its family no known one (raw completion only)"
        }
        summary.capabilities = capabilities
        if let recommended = RecommendedSampling.read(gguf) {
            summary.recommendedSampling = "\(recommended.summary) (\(recommended.source))"
        }
        return summary
    }
}
