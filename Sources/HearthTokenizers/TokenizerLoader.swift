import HearthCore
import HearthFormats

/// Builds the tokenizer a GGUF file describes in its `tokenizer.ggml.*` metadata.
public enum TokenizerLoader {
    /// The tokenizer of `gguf`: `gpt2` and `gemma4` → `BPETokenizer`, `llama` →
    /// `SentencePieceTokenizer`, `bert` → `GGUFWordPieceTokenizer`.
    /// An unknown tokenizer model or pre-tokenizer is `HearthError.unsupportedModel`; missing or
    /// inconsistent metadata is `HearthError.invalidModelFile`.
    public static func load(from gguf: GGUFFile) throws -> any Tokenizer {
        try load(metadata: gguf.metadata, path: gguf.mapping.path)
    }

    /// The tokenizer described by GGUF metadata; `path` names the file in errors.
    ///
    /// A BPE vocabulary without `tokenizer.ggml.pre` gets the `default` pre-tokenizer, as in
    /// llama.cpp (files converted before the key existed were tokenized that way).
    public static func load(metadata: [String: GGUFValue], path: String) throws -> any Tokenizer {
        let reader = MetadataReader(metadata: metadata, path: path)
        guard let model = try reader.string("tokenizer.ggml.model") else {
            throw HearthError.invalidModelFile(path: path, reason: "it has no tokenizer (tokenizer.ggml.model is missing)")
        }
        guard let tokens = try reader.strings("tokenizer.ggml.tokens") else {
            throw HearthError.invalidModelFile(path: path, reason: "it has no vocabulary (tokenizer.ggml.tokens is missing)")
        }
        let types = try reader.integers("tokenizer.ggml.token_type")?.map(TokenType.init(storedValue:))
        let spacing = SpecialTokenSpacing(modelName: try reader.string("general.name"),
                                          preTokenizer: try reader.string("tokenizer.ggml.pre"),
                                          architecture: try reader.string("general.architecture"))

        switch model {
        case "gpt2", "gemma4":
            // llama.cpp gives every `gemma4` vocabulary Gemma 4's pre-tokenizer, whatever the key says.
            let preName = try model == "gemma4" ? "gemma4" : reader.string("tokenizer.ggml.pre") ?? "default"
            guard let pre = bpePreTokenizers[preName] else {
                throw HearthError.unsupportedModel(
                    reason: "the BPE pre-tokenizer \"\(preName)\" (tokenizer.ggml.pre) is not implemented; supported: "
                        + bpePreTokenizers.keys.sorted().joined(separator: ", "))
            }
            guard let merges = try reader.strings("tokenizer.ggml.merges") else {
                throw HearthError.invalidModelFile(path: path, reason: "its BPE vocabulary has no merges (tokenizer.ggml.merges)")
            }
            var special = try reader.specialTokens(addBOSDefault: pre.addsBOS, defaults: SpecialTokens())
            // Gemma 4 needs BOS; llama.cpp adds it even when the metadata says not to.
            if pre.preTokenizer == .gemma4 { special.addBOS = true }
            return try BPETokenizer(tokens: tokens, tokenTypes: types, merges: merges, preTokenizer: pre.preTokenizer,
                                    ignoresMerges: pre.ignoresMerges, specialTokens: special, spacing: spacing,
                                    path: path)
        case "llama":
            let scores = try reader.floats("tokenizer.ggml.scores")
            // SentencePiece's conventional ids, which llama.cpp assumes when the metadata is silent.
            let defaults = SpecialTokens(bos: 1, eos: 2, unknown: 0)
            let special = try reader.specialTokens(addBOSDefault: true, defaults: defaults, vocabularySize: tokens.count)
            let addSpacePrefix = try reader.bool("tokenizer.ggml.add_space_prefix") ?? true
            return try SentencePieceTokenizer(tokens: tokens, scores: scores, tokenTypes: types,
                                              addSpacePrefix: addSpacePrefix, specialTokens: special, spacing: spacing,
                                              path: path)
        case "bert":
            // BERT's conventional ids ([CLS] 101, [SEP] 102, [UNK] 100, [PAD] 0), which llama.cpp
            // assumes when the metadata is silent; [CLS] is BOS, always added, and [SEP] closes
            // the sequence (an EOS only when the metadata names one).
            let size = tokens.count
            func id(_ keys: [String], _ fallback: Int32) throws -> Int32? {
                for key in keys { if let id = try reader.tokenID(key) { return id } }
                return Int(fallback) < size ? fallback : nil
            }
            let special = SpecialTokens(
                bos: try id(["tokenizer.ggml.bos_token_id", "tokenizer.ggml.cls_token_id"], 101),
                eos: try reader.tokenID("tokenizer.ggml.eos_token_id"),
                unknown: try id(["tokenizer.ggml.unknown_token_id"], 100),
                padding: try id(["tokenizer.ggml.padding_token_id"], 0),
                addBOS: true)
            let separator = try id(["tokenizer.ggml.seperator_token_id"], 102)
            let lowercases = try reader.bool("tokenizer.ggml.normalizer.lowercase") ?? true
            let stripsAccents = try reader.bool("tokenizer.ggml.normalizer.strip_accents") ?? lowercases
            return try GGUFWordPieceTokenizer(tokens: tokens, tokenTypes: types, specialTokens: special,
                                              separator: separator, lowercases: lowercases,
                                              stripsAccents: stripsAccents, spacing: spacing, path: path)
        default:
            throw HearthError.unsupportedModel(
                reason: "the tokenizer model \"\(model)\" (tokenizer.ggml.model) is not implemented; supported: "
                    + "gpt2, gemma4, llama, bert")
        }
    }

    /// llama.cpp's names for each pre-tokenizer (`tokenizer.ggml.pre`), with the settings the
    /// name implies: whether whole-word tokens skip merging, and the default for adding BOS.
    /// Names llama.cpp treats alike are listed together.
    static let bpePreTokenizers: [String: (preTokenizer: BPEPreTokenizer, ignoresMerges: Bool, addsBOS: Bool)] = {
        var table: [String: (BPEPreTokenizer, Bool, Bool)] = ["default": (.default, false, false)]
        for name in ["llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
                     "jina-v5-nano"] {
            table[name] = (.llama3, true, true)
        }
        for name in ["dbrx", "smaug-bpe"] { table[name] = (.llama3, false, false) }
        for name in ["gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0",
                     "mellum", "modern-bert", "jina-v1-en", "jina-v2-code", "roberta-bpe", "mpt", "olmo", "jais",
                     "exaone4", "trillion", "granite-docling"] {
            table[name] = (.gpt2, false, false)
        }
        for name in ["qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2", "hunyuan", "solar-open"] {
            table[name] = (.qwen2, false, false)
        }
        table["qwen35"] = (.qwen35, false, false)
        for name in ["smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b", "mellum2"] {
            table[name] = (.smollm, false, false)
        }
        table["falcon"] = (.falcon, false, false)
        table["deepseek-llm"] = (.deepseekLLM, false, false)
        table["deepseek-coder"] = (.deepseekCoder, false, false)
        for name in ["gemma4", "granite-embed-multi-311m"] { table[name] = (.gemma4, false, true) }
        return table
    }()
}

/// Typed access to metadata that throws `invalidModelFile` when a value has the wrong type.
private struct MetadataReader {
    let metadata: [String: GGUFValue]
    let path: String

    private func wrongType(_ key: String, _ expected: String) -> HearthError {
        HearthError.invalidModelFile(path: path, reason: "\(key) should be \(expected)")
    }

    func string(_ key: String) throws -> String? {
        guard let value = metadata[key] else { return nil }
        guard let string = value.stringValue else { throw wrongType(key, "a string") }
        return string
    }

    func bool(_ key: String) throws -> Bool? {
        guard let value = metadata[key] else { return nil }
        guard let bool = value.boolValue else { throw wrongType(key, "a bool") }
        return bool
    }

    func tokenID(_ key: String) throws -> Int32? {
        guard let value = metadata[key] else { return nil }
        guard let int = value.intValue else { throw wrongType(key, "an integer token id") }
        guard let id = Int32(exactly: int), id >= 0 else {
            throw HearthError.invalidModelFile(path: path, reason: "\(key) is \(int), not a token id")
        }
        return id
    }

    func array(_ key: String) throws -> [GGUFValue]? {
        guard let value = metadata[key] else { return nil }
        guard let array = value.arrayValue else { throw wrongType(key, "an array") }
        return array
    }

    func strings(_ key: String) throws -> [String]? {
        guard let array = try array(key) else { return nil }
        var result: [String] = []
        result.reserveCapacity(array.count)
        for element in array {
            guard case .string(let s) = element else { throw wrongType(key, "an array of strings") }
            result.append(s)
        }
        return result
    }

    func integers(_ key: String) throws -> [Int]? {
        guard let array = try array(key) else { return nil }
        var result: [Int] = []
        result.reserveCapacity(array.count)
        for element in array {
            guard let int = element.intValue else { throw wrongType(key, "an array of integers") }
            result.append(int)
        }
        return result
    }

    func floats(_ key: String) throws -> [Float]? {
        guard let array = try array(key) else { return nil }
        var result: [Float] = []
        result.reserveCapacity(array.count)
        for element in array {
            switch element {
            case .float32(let f): result.append(f)
            case .float64(let d): result.append(Float(d))
            default: throw wrongType(key, "an array of numbers")
            }
        }
        return result
    }

    /// Special ids from metadata; a missing id takes its default when the vocabulary has it.
    func specialTokens(addBOSDefault: Bool, defaults: SpecialTokens, vocabularySize: Int = 0) throws -> SpecialTokens {
        func withDefault(_ id: Int32?, _ fallback: Int32?) -> Int32? {
            if let id { return id }
            if let fallback, Int(fallback) < vocabularySize { return fallback }
            return nil
        }
        return SpecialTokens(
            bos: withDefault(try tokenID("tokenizer.ggml.bos_token_id"), defaults.bos),
            eos: withDefault(try tokenID("tokenizer.ggml.eos_token_id"), defaults.eos),
            eot: try tokenID("tokenizer.ggml.eot_token_id"),
            eom: try tokenID("tokenizer.ggml.eom_token_id"),
            unknown: withDefault(try tokenID("tokenizer.ggml.unknown_token_id"), defaults.unknown),
            padding: try tokenID("tokenizer.ggml.padding_token_id"),
            addBOS: try bool("tokenizer.ggml.add_bos_token") ?? addBOSDefault,
            addEOS: try bool("tokenizer.ggml.add_eos_token") ?? false)
    }
}
