import Foundation
import HearthFormats

/// What decoding needs to know of a Whisper model beyond its weights and tokens.
public struct WhisperSettings: Sendable {
    /// Tokens never generated (besides the task tokens, which are always suppressed).
    public var suppressed: [Int]
    /// Tokens not generated first; nil means a blank and end of text.
    public var suppressedAtBegin: [Int]?
    /// The cross-attention heads (decoder layer, head) whose weights follow the alignment of
    /// text to audio, for word timestamps.
    public var alignmentHeads: [(layer: Int, head: Int)]

    public init(suppressed: [Int], suppressedAtBegin: [Int]?, alignmentHeads: [(layer: Int, head: Int)]) {
        self.suppressed = suppressed
        self.suppressedAtBegin = suppressedAtBegin
        self.alignmentHeads = alignmentHeads
    }

    /// Without alignment heads named by the model, the upper half of the decoder's layers:
    /// every head there (faster-whisper's and openai-whisper's default).
    static func defaultAlignmentHeads(_ d: WhisperDimensions) -> [(layer: Int, head: Int)] {
        (d.decoderLayers / 2..<d.decoderLayers).flatMap { layer in (0..<d.heads).map { (layer, $0) } }
    }
}

/// A Whisper model as it lies on disk: weights, tokenizer and decoding settings.
public struct WhisperFiles {
    public let model: WhisperModel
    public let tokenizer: WhisperTokenizer
    public let settings: WhisperSettings

    /// Loads the Whisper model at `url`: a faster-whisper (CTranslate2) folder with
    /// `model.bin`, `tokenizer.json` and `config.json`.
    public static func load(_ url: URL, threads: Int) throws -> WhisperFiles {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw HearthError.fileNotFound(path: url.path)
        }
        guard isDirectory.boolValue else {
            throw HearthError.unsupportedModel(reason: "\(url.path) is a file; a Whisper model is a folder with model.bin, tokenizer.json and config.json")
        }
        guard FileManager.default.fileExists(atPath: url.appendingPathComponent("model.bin").path) else {
            throw HearthError.unsupportedModel(reason: "\(url.path) holds no Whisper model: it needs model.bin (CTranslate2) with tokenizer.json and config.json")
        }
        return try loadCTranslate2(url, threads: threads)
    }

    /// A faster-whisper folder: CTranslate2 weights, `tokenizer.json`, and `config.json` with
    /// the suppressed tokens and alignment heads.
    static func loadCTranslate2(_ directory: URL, threads: Int) throws -> WhisperFiles {
        let model = try WhisperModel(contentsOf: directory, threads: threads)
        let tokenizer = try WhisperTokenizer(contentsOf: directory)
        struct Config: Decodable {
            let suppress_ids: [Int]?
            let suppress_ids_begin: [Int]?
            let alignment_heads: [[Int]]?
        }
        let configURL = directory.appendingPathComponent("config.json")
        var config = Config(suppress_ids: nil, suppress_ids_begin: nil, alignment_heads: nil)
        if let data = FileManager.default.contents(atPath: configURL.path) {
            do {
                config = try JSONDecoder().decode(Config.self, from: data)
            } catch {
                throw HearthError.invalidModelFile(path: configURL.path, reason: "it is not valid JSON (\(error))")
            }
        }
        let heads = try alignmentHeads(config.alignment_heads, model.dimensions, path: configURL.path)
        return WhisperFiles(model: model, tokenizer: tokenizer,
                            settings: WhisperSettings(suppressed: config.suppress_ids ?? [], suppressedAtBegin: config.suppress_ids_begin,
                                                      alignmentHeads: heads))
    }

    /// `[[layer, head], …]` checked against the model's sizes; the default heads when nil.
    static func alignmentHeads(_ pairs: [[Int]]?, _ d: WhisperDimensions, path: String) throws -> [(layer: Int, head: Int)] {
        guard let pairs, !pairs.isEmpty else { return WhisperSettings.defaultAlignmentHeads(d) }
        return try pairs.map { pair in
            guard pair.count == 2, (0..<d.decoderLayers).contains(pair[0]), (0..<d.heads).contains(pair[1]) else {
                throw HearthError.invalidModelFile(path: path, reason: "alignment head \(pair) is not a (layer, head) of its \(d.decoderLayers) layers and \(d.heads) heads")
            }
            return (pair[0], pair[1])
        }
    }
}
