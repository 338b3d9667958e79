import Foundation
import HearthCore
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

    /// The layouts Whisper models are published in.
    public enum Layout: Sendable, Equatable {
        /// A faster-whisper folder (`Systran/faster-whisper-*`): CTranslate2's `model.bin`,
        /// `tokenizer.json`, and `config.json` with the suppressed tokens and alignment heads.
        case ctranslate2
        /// A Hugging Face folder (`openai/whisper-*`): `model.safetensors`, `config.json`,
        /// `tokenizer.json`, and `generation_config.json` with the suppressed tokens and
        /// alignment heads.
        case huggingFace
        /// A whisper.cpp file (`ggerganov/whisper.cpp`'s `ggml-base.bin`), which holds its own
        /// vocabulary.
        case ggml
    }

    /// The three layouts, for messages.
    static let layoutsText = "a faster-whisper (CTranslate2) folder with model.bin, a Hugging Face folder with model.safetensors and config.json (openai/whisper-*), or a whisper.cpp file such as ggml-base.bin"

    /// The layout of the model at `url`; throws when it is none of them.
    public static func layout(of url: URL) throws -> Layout {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw HearthError.fileNotFound(path: url.path)
        }
        guard isDirectory.boolValue else {
            if WhisperGGMLFile.hasMagic(url) { return .ggml }
            throw HearthError.unsupportedModel(reason: "\(url.path) is not a whisper.cpp model file (it does not start with \"lmgg\"); a Whisper model is \(layoutsText), and a folder is given as the folder, not a file in it")
        }
        func has(_ name: String) -> Bool { FileManager.default.fileExists(atPath: url.appendingPathComponent(name).path) }
        if has("model.bin") { return .ctranslate2 }
        if has("model.safetensors") && has("config.json") { return .huggingFace }
        if has("model.safetensors.index.json") {
            throw HearthError.unsupportedModel(reason: "\(url.path) holds a sharded checkpoint (model.safetensors.index.json); Hearth reads Whisper from one model.safetensors: merge the shards into one file, or use the faster-whisper or whisper.cpp form of the model")
        }
        throw HearthError.unsupportedModel(reason: "\(url.path) holds no Whisper model Hearth reads: it needs to be \(layoutsText)")
    }

    /// Loads the Whisper model at `url`, in any of its layouts (see `Layout`), its matrices
    /// held as `weights` says.
    public static func load(_ url: URL, threads: Int, weights: WhisperWeights = .float) throws -> WhisperFiles {
        switch try layout(of: url) {
        case .ctranslate2: return try loadCTranslate2(url, threads: threads, weights: weights)
        case .huggingFace: return try loadHuggingFace(url, threads: threads, weights: weights)
        case .ggml: return try loadGGML(url, threads: threads, weights: weights)
        }
    }

    /// Refuses the English-only models (51864 tokens; openai-whisper's rule): their prompt is
    /// the start of transcript alone, and the transcriber always writes a language and a task.
    static func requireMultilingual(vocabularySize: Int, path: String) throws {
        guard vocabularySize >= 51865 else {
            throw HearthError.unsupportedModel(reason: WhisperTokenizer.englishOnlyReason(path: path, vocabularySize: vocabularySize))
        }
    }

    /// A faster-whisper folder: CTranslate2 weights, `tokenizer.json`, and `config.json` with
    /// the suppressed tokens and alignment heads.
    static func loadCTranslate2(_ directory: URL, threads: Int, weights: WhisperWeights) throws -> WhisperFiles {
        let model = try WhisperModel(contentsOf: directory, threads: threads, weights: weights)
        try requireMultilingual(vocabularySize: model.dimensions.vocabularySize, path: directory.path)
        let tokenizer = try WhisperTokenizer(contentsOf: directory)
        struct Config: Decodable {
            let suppress_ids: [Int]?
            let suppress_ids_begin: [Int]?
            let alignment_heads: [[Int]]?
        }
        let configURL = directory.appendingPathComponent("config.json")
        let config = try decodeIfPresent(Config.self, configURL) ?? Config(suppress_ids: nil, suppress_ids_begin: nil, alignment_heads: nil)
        let heads = try alignmentHeads(config.alignment_heads, model.dimensions, path: configURL.path)
        return WhisperFiles(model: model, tokenizer: tokenizer,
                            settings: WhisperSettings(suppressed: config.suppress_ids ?? [], suppressedAtBegin: config.suppress_ids_begin,
                                                      alignmentHeads: heads))
    }

    /// A Hugging Face folder: `model.safetensors` with the sizes of `config.json`,
    /// `tokenizer.json`, and `generation_config.json` for the suppressed tokens and alignment
    /// heads. Without them, Whisper's non-speech tokens are suppressed and the published heads
    /// of a model of its sizes are used, as for whisper.cpp's files.
    static func loadHuggingFace(_ directory: URL, threads: Int, weights: WhisperWeights) throws -> WhisperFiles {
        let configURL = directory.appendingPathComponent("config.json")
        guard let configData = FileManager.default.contents(atPath: configURL.path) else { throw HearthError.fileNotFound(path: configURL.path) }
        let config = try WhisperConfig(json: configData, path: configURL.path)
        try requireMultilingual(vocabularySize: config.vocabularySize, path: directory.path)
        let model = try WhisperModel(SafetensorsFile(contentsOf: directory.appendingPathComponent("model.safetensors")),
                                     config: config, threads: threads, weights: weights)
        let tokenizer = try WhisperTokenizer(contentsOf: directory)
        struct Generation: Decodable {
            let suppress_tokens: [Int]?
            let begin_suppress_tokens: [Int]?
            let alignment_heads: [[Int]]?
        }
        let generationURL = directory.appendingPathComponent("generation_config.json")
        let generation = try decodeIfPresent(Generation.self, generationURL)
        // -1 stands for the non-speech tokens, as in openai-whisper's and faster-whisper's options.
        var suppressed = generation?.suppress_tokens ?? [-1]
        if suppressed.contains(-1) { suppressed = suppressed.filter { $0 >= 0 } + tokenizer.nonSpeechTokens }
        let heads = try generation?.alignment_heads.map { try alignmentHeads($0, model.dimensions, path: generationURL.path) }
            ?? WhisperSettings.alignmentHeads(for: model.dimensions)
        return WhisperFiles(model: model, tokenizer: tokenizer,
                            settings: WhisperSettings(suppressed: suppressed, suppressedAtBegin: generation?.begin_suppress_tokens,
                                                      alignmentHeads: heads))
    }

    /// A whisper.cpp file: weights and vocabulary in one. It names no suppressed tokens or
    /// alignment heads, so Whisper's non-speech tokens are suppressed (as whisper.cpp and
    /// faster-whisper do by default) and the heads are those published for a model of its sizes.
    static func loadGGML(_ url: URL, threads: Int, weights: WhisperWeights) throws -> WhisperFiles {
        let file = try WhisperGGMLFile(path: url.path)
        // The vocabulary first: it refuses an English-only model before its weights are read.
        let tokenizer = try WhisperTokenizer(ggml: file)
        let model = try WhisperModel(file, threads: threads, weights: weights)
        return WhisperFiles(model: model, tokenizer: tokenizer,
                            settings: WhisperSettings(suppressed: tokenizer.nonSpeechTokens, suppressedAtBegin: nil,
                                                      alignmentHeads: WhisperSettings.alignmentHeads(for: model.dimensions)))
    }

    /// The JSON file at `url` as `T`, or nil when there is no such file.
    private static func decodeIfPresent<T: Decodable>(_ type: T.Type, _ url: URL) throws -> T? {
        guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch {
            throw HearthError.invalidModelFile(path: url.path, reason: "it is not valid JSON (\(error))")
        }
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
