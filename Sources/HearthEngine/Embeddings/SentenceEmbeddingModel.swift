import Foundation
import HearthCore
import HearthTokenizers

/// A sentence-transformers model folder run as its `modules.json` says: the transformer
/// (a BERT encoder with its WordPiece tokenizer), pooling as `1_Pooling/config.json` says, and
/// L2 normalization when the pipeline has a Normalize module.
public final class SentenceEmbeddingModel: Sendable {
    /// How token states become one vector.
    public typealias Pooling = TokenPooling

    /// The encoder.
    public let encoder: EncoderModel
    /// Its tokenizer, cut at the pipeline's maximum sequence length.
    public let tokenizer: WordPieceTokenizer
    /// The pooling the pipeline uses.
    public let pooling: Pooling
    /// Whether vectors are scaled to length 1.
    public let normalizes: Bool

    /// Length of each vector.
    public var dimensions: Int { encoder.configuration.hiddenSize }

    /// Texts encoded in one pass at most; longer lists are split.
    public static let batchLimit = 64

    /// Loads the model in `directory` (a sentence-transformers folder, or a bare BERT folder,
    /// which gets mean pooling and normalization).
    public init(directory: URL, threads: Int? = nil) throws {
        func json(_ name: String) throws -> [String: Any]? {
            let url = directory.appendingPathComponent(name)
            guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
            guard let object = try? JSONSerialization.jsonObject(with: data) else {
                throw HearthError.invalidModelFile(path: url.path, reason: "it is not valid JSON")
            }
            return object as? [String: Any]
        }
        encoder = try EncoderModel(directory: directory, threads: threads)
        var pooling = Pooling.mean
        var normalizes = true
        let modulesURL = directory.appendingPathComponent("modules.json")
        if let data = FileManager.default.contents(atPath: modulesURL.path) {
            guard let modules = (try? JSONSerialization.jsonObject(with: data)) as? [[String: Any]] else {
                throw HearthError.invalidModelFile(path: modulesURL.path, reason: "it is not a list of modules")
            }
            normalizes = false
            for module in modules {
                let type = module["type"] as? String ?? ""
                switch type {
                case "sentence_transformers.models.Transformer":
                    continue
                case "sentence_transformers.models.Pooling":
                    let folder = module["path"] as? String ?? "1_Pooling"
                    guard !folder.contains(".."), !folder.hasPrefix("/") else {
                        throw HearthError.invalidModelFile(path: modulesURL.path, reason: "module path \(folder) leaves the model folder")
                    }
                    pooling = try Self.pooling(from: json(folder + "/config.json") ?? [:])
                case "sentence_transformers.models.Normalize":
                    normalizes = true
                default:
                    throw HearthError.unsupportedModel(reason: "sentence-transformers module \(type) (supported: Transformer, Pooling, Normalize)")
                }
            }
        }
        let limit = (try json("sentence_bert_config.json"))?["max_seq_length"] as? NSNumber
        let length = min(limit?.intValue ?? encoder.configuration.maximumPositions, encoder.configuration.maximumPositions)
        let tokenizerURL = directory.appendingPathComponent("tokenizer.json")
        guard let tokenizerData = FileManager.default.contents(atPath: tokenizerURL.path) else {
            throw HearthError.fileNotFound(path: tokenizerURL.path)
        }
        tokenizer = try WordPieceTokenizer(tokenizerJSON: tokenizerData, maximumLength: max(length, 2), path: tokenizerURL.path)
        guard tokenizer.vocabularySize <= encoder.configuration.vocabularySize else {
            throw HearthError.invalidModelFile(path: tokenizerURL.path, reason: "its vocabulary is larger than the model's")
        }
        self.pooling = pooling
        self.normalizes = normalizes
    }

    private static func pooling(from config: [String: Any]) throws -> Pooling {
        let modes: [(String, Pooling?)] = [("pooling_mode_mean_tokens", .mean), ("pooling_mode_cls_token", .cls),
                                           ("pooling_mode_max_tokens", .max), ("pooling_mode_mean_sqrt_len_tokens", nil),
                                           ("pooling_mode_weightedmean_tokens", nil), ("pooling_mode_lasttoken", nil)]
        let chosen = modes.filter { (config[$0.0] as? Bool) == true }
        guard chosen.count <= 1 else {
            throw HearthError.unsupportedModel(reason: "pooling that concatenates several modes (\(chosen.map(\.0).joined(separator: ", ")))")
        }
        guard let mode = chosen.first else { return .mean }
        guard let pooling = mode.1 else { throw HearthError.unsupportedModel(reason: "pooling mode \(mode.0)") }
        return pooling
    }

    /// One vector per text, in order.
    public func embed(_ texts: [String]) throws -> [[Float]] {
        var vectors: [[Float]] = []
        vectors.reserveCapacity(texts.count)
        var start = 0
        while start < texts.count {
            let batch = texts[start..<min(start + Self.batchLimit, texts.count)].map(tokenizer.encode)
            let states = try encoder.encode(batch)
            var row = 0
            for sequence in batch {
                vectors.append(pooling(states, from: row, count: sequence.count, width: dimensions, normalized: normalizes))
                row += sequence.count
            }
            start += Self.batchLimit
        }
        return vectors
    }
}
