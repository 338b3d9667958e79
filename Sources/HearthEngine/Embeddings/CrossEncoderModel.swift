import Foundation
import HearthCore
import HearthTokenizers

/// A cross-encoder: a Hugging Face `BertForSequenceClassification` folder (such as
/// cross-encoder/ms-marco-MiniLM-L6-v2) run as sentence-transformers' `CrossEncoder.predict`
/// runs it. Each (query, document) pair is read together as `[CLS] query [SEP] document [SEP]`,
/// cut to the model's maximum length the way CrossEncoder's tokenizer cuts it, and the
/// classifier's logits become scores through the activation the folder asks for.
public final class CrossEncoderModel: Sendable {
    /// What turns a logit into a score: CrossEncoder's `activation_fn`.
    public enum Activation: String, Sendable {
        /// 1 / (1 + e^-x): CrossEncoder's default for one label.
        case sigmoid
        /// The logit as it is: the default for several labels, and what ms-marco models ask for.
        case identity
        /// tanh(x).
        case tanh

        /// `value` through the activation.
        public func apply(_ value: Float) -> Float {
            switch self {
            case .sigmoid: 1 / (1 + exp(-value))
            case .identity: value
            case .tanh: Foundation.tanh(value)
            }
        }
    }

    /// The encoder with its pooler and classifier.
    public let encoder: EncoderModel
    /// Its tokenizer; `maximumLength` is the pair's limit, special tokens included.
    public let tokenizer: WordPieceTokenizer
    /// The classifier's labels in order (`id2label`).
    public let labels: [String]
    /// What `scores` applies to the logits.
    public let activation: Activation
    /// Which end of a text a cut removes.
    public let truncationSide: WordPieceTokenizer.TruncationSide

    /// Most tokens one pass encodes; more pairs are split into several passes. A pair's
    /// result does not depend on the others in its pass, so the split changes no score.
    public static let tokensPerPass = 8192

    /// Loads the cross-encoder in `directory`: `config.json` (a `BertForSequenceClassification`),
    /// `model.safetensors` and `tokenizer.json` (or BERT's `vocab.txt`), with `tokenizer_config.json`,
    /// `config_sentence_transformers.json`, `modules.json` and `sentence_bert_config.json` when
    /// they are there. Any other architecture is refused by name.
    public init(directory: URL, threads: Int? = nil) throws {
        let folder = try CrossEncoderFolder(directory: directory)
        encoder = try EncoderModel(directory: directory, threads: threads, classifierLabels: folder.labels.count)
        let positions = encoder.configuration.maximumPositions
        // CrossEncoder caps the tokenizer's length at the position table; a longer one could
        // not run.
        let length = min(folder.maximumLength ?? positions, positions)
        guard length >= 3 else {
            throw HearthError.invalidModelFile(path: directory.path, reason: "its maximum length \(length) leaves no room for a pair")
        }
        let tokenizerURL = directory.appendingPathComponent("tokenizer.json")
        let vocabularyURL = directory.appendingPathComponent("vocab.txt")
        if let tokenizerData = FileManager.default.contents(atPath: tokenizerURL.path) {
            tokenizer = try WordPieceTokenizer(tokenizerJSON: tokenizerData, maximumLength: length, path: tokenizerURL.path)
            try CrossEncoderFolder.checkPairTemplate(tokenizerData, path: tokenizerURL.path)
        } else if let vocabulary = FileManager.default.contents(atPath: vocabularyURL.path) {
            // Older cross-encoders (ms-marco-TinyBERT-L-2-v2 and the like) ship only BERT's
            // vocab.txt; transformers then builds the tokenizer from tokenizer_config.json's
            // settings, as this does.
            var pieces = String(decoding: vocabulary, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            if pieces.last == "" { pieces.removeLast() }
            tokenizer = try WordPieceTokenizer(vocabulary: pieces, normalization: folder.vocabularyNormalization, maximumLength: length)
        } else {
            throw HearthError.fileNotFound(path: tokenizerURL.path)
        }
        guard tokenizer.vocabularySize <= encoder.configuration.vocabularySize else {
            throw HearthError.invalidModelFile(path: directory.path, reason: "its tokenizer's vocabulary is larger than the model's")
        }
        labels = folder.labels
        activation = folder.activation
        truncationSide = folder.truncationSide
    }

    /// Whether `directory` holds a model with a sequence-classification head (its
    /// `config.json` names a `…ForSequenceClassification` architecture), which is to be
    /// loaded as a cross-encoder rather than as an embedding model.
    public static func isCrossEncoder(directory: URL) -> Bool {
        guard let data = FileManager.default.contents(atPath: directory.appendingPathComponent("config.json").path),
              let root = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
              let architectures = root["architectures"] as? [String] else { return false }
        return architectures.contains { $0.hasSuffix("ForSequenceClassification") }
    }

    /// The pair's token ids and token type ids, as the model reads it.
    public func tokenize(query: String, document: String) -> (ids: [Int32], typeIds: [Int32]) {
        tokenizer.encodePair(query, document, side: truncationSide)
    }

    /// The classifier's logits for each pair (one per label), in order.
    public func logits(_ pairs: [(query: String, document: String)]) throws -> [[Float]] {
        var results: [[Float]] = []
        results.reserveCapacity(pairs.count)
        var ids: [[Int32]] = [], types: [[Int32]] = []
        var tokens = 0
        func flush() throws {
            results += try encoder.classify(ids, typeIds: types)
            ids.removeAll(keepingCapacity: true)
            types.removeAll(keepingCapacity: true)
            tokens = 0
        }
        for pair in pairs {
            let encoded = tokenize(query: pair.query, document: pair.document)
            if tokens + encoded.ids.count > Self.tokensPerPass, !ids.isEmpty { try flush() }
            ids.append(encoded.ids)
            types.append(encoded.typeIds)
            tokens += encoded.ids.count
        }
        if !ids.isEmpty { try flush() }
        return results
    }

    /// The scores `CrossEncoder.predict` returns by default: the logits through `activation`.
    public func scores(_ pairs: [(query: String, document: String)]) throws -> [[Float]] {
        try logits(pairs).map { $0.map(activation.apply) }
    }
}

/// What a cross-encoder folder's configuration files say, read as sentence-transformers reads
/// them.
struct CrossEncoderFolder {
    var labels: [String]
    var activation: CrossEncoderModel.Activation
    /// The tokenizer's maximum length, when a file sets one.
    var maximumLength: Int?
    var truncationSide: WordPieceTokenizer.TruncationSide
    /// How BertTokenizer cleans text when it is built from vocab.txt alone: tokenizer_config's
    /// do_lower_case (default on), strip_accents (default: as do_lower_case) and
    /// tokenize_chinese_chars (default on).
    var vocabularyNormalization = WordPieceTokenizer.Normalization()

    init(directory: URL) throws {
        func json(_ name: String) throws -> [String: Any]? {
            let url = directory.appendingPathComponent(name)
            guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
            guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
                throw HearthError.invalidModelFile(path: url.path, reason: "it is not a JSON object")
            }
            return object
        }
        let configPath = directory.appendingPathComponent("config.json").path
        guard let config = try json("config.json") else { throw HearthError.fileNotFound(path: configPath) }
        let architectures = config["architectures"] as? [String] ?? []
        // The likeliest mix-up: a sentence-transformers embedding folder named as a reranker.
        if architectures == ["BertModel"] {
            throw HearthError.invalidArgument(
                "\(directory.path) is a sentence-embedding model (architecture BertModel), not a cross-encoder: use it with hearth embed or hearth similar (loadEmbedder in Swift). A reranker is a BertForSequenceClassification, such as cross-encoder/ms-marco-MiniLM-L6-v2.")
        }
        guard architectures.contains("BertForSequenceClassification") else {
            let named = architectures.isEmpty ? "none named in config.json" : architectures.joined(separator: ", ")
            throw HearthError.unsupportedModel(
                reason: "cross-encoder architecture \(named) (supported: BertForSequenceClassification, a BERT with a classification head)")
        }
        labels = try Self.labels(config, path: configPath)
        activation = try Self.activation(config, stConfig: json("config_sentence_transformers.json"), labels: labels.count)

        var length: Int?
        var side = WordPieceTokenizer.TruncationSide.right
        if let tokenizerConfig = try json("tokenizer_config.json") {
            // Without a model_max_length, transformers' is "very large", which the position
            // table then caps.
            length = (tokenizerConfig["model_max_length"] as? NSNumber)?.intValue
            let lowercase = tokenizerConfig["do_lower_case"] as? Bool ?? true
            vocabularyNormalization = WordPieceTokenizer.Normalization(
                cleanText: true, handleChineseCharacters: tokenizerConfig["tokenize_chinese_chars"] as? Bool ?? true,
                stripAccents: tokenizerConfig["strip_accents"] as? Bool ?? lowercase, lowercase: lowercase)
            if let name = tokenizerConfig["truncation_side"] as? String {
                guard let value = WordPieceTokenizer.TruncationSide(rawValue: name) else {
                    throw HearthError.invalidModelFile(path: directory.appendingPathComponent("tokenizer_config.json").path,
                                                       reason: "truncation_side is \(name), not left or right")
                }
                side = value
            }
        }
        if let transformer = try Self.transformerModule(directory), let settings = try json(transformer + "sentence_bert_config.json"),
           let maximum = (settings["max_seq_length"] as? NSNumber)?.intValue {
            length = maximum
        }
        if let length, length < 1 {
            throw HearthError.invalidModelFile(path: directory.path, reason: "its maximum sequence length is \(length)")
        }
        maximumLength = length
        truncationSide = side
    }

    /// Label names in id order: `id2label` when there is one, else `num_labels` (transformers'
    /// default: 2) generic names.
    static func labels(_ config: [String: Any], path: String) throws -> [String] {
        if let table = config["id2label"] as? [String: Any], !table.isEmpty {
            var names = [String](repeating: "", count: table.count)
            for (key, value) in table {
                guard let id = Int(key), names.indices.contains(id), let name = value as? String else {
                    throw HearthError.invalidModelFile(path: path, reason: "id2label entry \(key) is not a label id below \(table.count) with a name")
                }
                names[id] = name
            }
            return names
        }
        let count = (config["num_labels"] as? NSNumber)?.intValue ?? 2
        guard (1...65_536).contains(count) else {
            throw HearthError.invalidModelFile(path: path, reason: "num_labels is \(count)")
        }
        return (0..<count).map { "LABEL_\($0)" }
    }

    /// The activation CrossEncoder picks: `config_sentence_transformers.json`'s
    /// `activation_fn`, else config.json's `sentence_transformers.activation_fn`, else its
    /// older `sbert_ce_default_activation_function`, else sigmoid for one label and identity
    /// for several. Like CrossEncoder (without trust_remote_code) it passes over a class
    /// outside `torch.`; a torch class Hearth does not implement is refused by name.
    static func activation(_ config: [String: Any], stConfig: [String: Any]?, labels: Int) throws -> CrossEncoderModel.Activation {
        let candidates = [stConfig?["activation_fn"] as? String,
                          (config["sentence_transformers"] as? [String: Any])?["activation_fn"] as? String,
                          config["sbert_ce_default_activation_function"] as? String]
        for case let path? in candidates where path.hasPrefix("torch.") {
            switch path.split(separator: ".").last {
            case "Sigmoid": return .sigmoid
            case "Identity": return .identity
            case "Tanh": return .tanh
            default:
                throw HearthError.unsupportedModel(reason: "cross-encoder activation \(path) (supported: Sigmoid, Identity, Tanh)")
            }
        }
        return labels == 1 ? .sigmoid : .identity
    }

    /// The folder (relative, with a trailing slash, or "") of the Transformer module a
    /// `modules.json` lists; nil without one. A pipeline with other modules (a Dense head, an
    /// LLM's logit score) is refused by name.
    static func transformerModule(_ directory: URL) throws -> String? {
        let url = directory.appendingPathComponent("modules.json")
        guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
        guard let modules = (try? JSONSerialization.jsonObject(with: data)) as? [[String: Any]] else {
            throw HearthError.invalidModelFile(path: url.path, reason: "it is not a list of modules")
        }
        var folder: String?
        for module in modules {
            let type = module["type"] as? String ?? "unknown"
            guard type.hasSuffix(".Transformer"), folder == nil else {
                throw HearthError.unsupportedModel(reason: "cross-encoder module \(type) (supported: one Transformer module)")
            }
            let path = module["path"] as? String ?? ""
            guard !path.contains(".."), !path.hasPrefix("/") else {
                throw HearthError.invalidModelFile(path: url.path, reason: "module path \(path) leaves the model folder")
            }
            folder = path.isEmpty || path.hasSuffix("/") ? path : path + "/"
        }
        return folder
    }

    /// A `tokenizer.json` whose post-processor lays out pairs other than BERT's
    /// `[CLS] A [SEP] B [SEP]` (types 0 0 0 1 1) is refused rather than read the wrong way.
    static func checkPairTemplate(_ data: Data, path: String) throws {
        guard let root = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
              let processor = root["post_processor"] as? [String: Any] else { return }
        let type = processor["type"] as? String ?? "unknown"
        switch type {
        case "BertProcessing":
            return
        case "TemplateProcessing":
            let pair = (processor["pair"] as? [[String: Any]] ?? []).map { piece -> String in
                if let special = piece["SpecialToken"] as? [String: Any] {
                    return "\(special["id"] as? String ?? "?"):\((special["type_id"] as? NSNumber)?.intValue ?? -1)"
                }
                let sequence = piece["Sequence"] as? [String: Any]
                return "$\(sequence?["id"] as? String ?? "?"):\((sequence?["type_id"] as? NSNumber)?.intValue ?? -1)"
            }
            let bert = ["[CLS]:0", "$A:0", "[SEP]:0", "$B:1", "[SEP]:1"]
            guard pair == bert else {
                throw HearthError.unsupportedModel(reason: "pair template \(pair.joined(separator: " ")) (supported: \(bert.joined(separator: " ")))")
            }
        default:
            throw HearthError.unsupportedModel(reason: "tokenizer post-processor \(type) for pairs (supported: BertProcessing, TemplateProcessing)")
        }
    }
}
