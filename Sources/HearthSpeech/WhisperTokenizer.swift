import Foundation
import HearthCore
import HearthFormats
import HearthTokenizers

/// Whisper's tokens: GPT-2 byte-level BPE for text (from `tokenizer.json`), special tokens
/// for the task and language, and 1,501 timestamp tokens after them (0.00 to 30.00 s in steps
/// of 20 ms) that no tokenizer file lists.
public struct WhisperTokenizer: Sendable {
    let bpe: BPETokenizer
    public let endOfText: Int
    public let startOfTranscript: Int
    public let translate: Int
    public let transcribe: Int
    public let startOfLM: Int
    public let startOfPrevious: Int
    public let noSpeech: Int
    public let noTimestamps: Int
    /// The first timestamp token (<|0.00|>).
    public let timestampBegin: Int
    /// Language codes and their tokens, in the model's order.
    public let languages: [(code: String, token: Int)]

    /// Seconds per timestamp step.
    public static let timePrecision = 0.02

    /// Reads a Hugging Face `tokenizer.json` of a Whisper model.
    public init(tokenizerJSON data: Data, path: String = "tokenizer.json") throws {
        func invalid(_ reason: String) -> HearthError { .invalidModelFile(path: path, reason: reason) }
        struct File: Decodable {
            struct Model: Decodable {
                let type: String
                let vocab: [String: Int]
                let merges: [Merge]
            }
            struct Added: Decodable {
                let id: Int
                let content: String
            }
            /// Merges as `"a b"` or `["a", "b"]`.
            struct Merge: Decodable {
                let text: String
                init(from decoder: Decoder) throws {
                    let container = try decoder.singleValueContainer()
                    if let text = try? container.decode(String.self) {
                        self.text = text
                    } else {
                        self.text = try container.decode([String].self).joined(separator: " ")
                    }
                }
            }
            let model: Model
            let added_tokens: [Added]?
        }
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: data)
        } catch {
            throw invalid("it is not a tokenizer.json with a BPE model (\(error))")
        }
        guard file.model.type == "BPE" else { throw invalid("its model is \(file.model.type), not BPE") }
        var byID: [Int: String] = [:]
        for (token, id) in file.model.vocab { byID[id] = token }
        for added in file.added_tokens ?? [] { byID[added.id] = added.content }
        let count = (byID.keys.max() ?? -1) + 1
        guard count > 0, byID.count == count else { throw invalid("its token ids are not 0..<\(count) without gaps") }
        let tokens = (0..<count).map { byID[$0]! }
        let special = Set((file.added_tokens ?? []).map(\.id))
        let types: [TokenType] = (0..<count).map { special.contains($0) ? .control : .normal }
        bpe = try BPETokenizer(tokens: tokens, tokenTypes: types, merges: file.model.merges.map(\.text), preTokenizer: .gpt2)
        let index = Dictionary(tokens.enumerated().map { ($0.element, $0.offset) }, uniquingKeysWith: { a, _ in a })
        func id(_ names: String...) throws -> Int {
            for name in names { if let id = index[name] { return id } }
            throw invalid("it has no \(names[0]) token")
        }
        endOfText = try id("<|endoftext|>")
        startOfTranscript = try id("<|startoftranscript|>")
        translate = try id("<|translate|>")
        transcribe = try id("<|transcribe|>")
        startOfLM = try id("<|startoflm|>")
        startOfPrevious = try id("<|startofprev|>")
        noSpeech = try id("<|nospeech|>", "<|nocaptions|>")
        noTimestamps = try id("<|notimestamps|>")
        timestampBegin = noTimestamps + 1
        let (first, last) = (startOfTranscript, translate)
        languages = tokens.enumerated().compactMap { id, text in
            guard id > first, id < last, text.hasPrefix("<|"), text.hasSuffix("|>") else { return nil }
            return (String(text.dropFirst(2).dropLast(2)), id)
        }
    }

    /// The folder's `tokenizer.json`.
    public init(contentsOf url: URL) throws {
        let file = url.appendingPathComponent("tokenizer.json")
        guard let data = FileManager.default.contents(atPath: file.path) else { throw HearthError.fileNotFound(path: file.path) }
        try self.init(tokenizerJSON: data, path: file.path)
    }

    /// The vocabulary of a whisper.cpp file. It lists the text tokens only, as raw bytes in rank
    /// order and without merges, so the merges are rebuilt from the ranks as openai-whisper's
    /// tiktoken encodes; the special tokens follow in Whisper's order, their number fixed by the
    /// model's vocabulary size: end of text, start of transcript, a token per language (99,
    /// or 100 from large v3 on), translate, transcribe, start of LM, start of previous text, no
    /// speech, no timestamps, then the timestamps.
    public init(ggml file: WhisperGGMLFile) throws {
        let path = file.mapping.path, size = file.hyperparameters.vocabularySize
        // openai-whisper's rule: multilingual models score at least 51865 tokens.
        guard size >= 51865 else {
            throw HearthError.unsupportedModel(reason: Self.englishOnlyReason(path: path, vocabularySize: size))
        }
        let languageCount = size - 51765 - 1
        guard languageCount <= WhisperLanguages.all.count else {
            throw HearthError.unsupportedModel(reason: "\(path) scores \(size) tokens, more than any Whisper vocabulary (51865, or 51866 with large v3's hundredth language)")
        }
        // The text tokens, then 8 special tokens besides the languages, then 1501 timestamps.
        let textCount = size - 1501 - 8 - languageCount
        // Files converted from Hugging Face list <|endoftext|> too; its id is fixed anyway.
        guard file.tokens.count >= textCount else {
            throw HearthError.invalidModelFile(path: path, reason: "its vocabulary holds \(file.tokens.count) tokens, but a Whisper model of \(size) tokens has \(textCount) text tokens")
        }
        let languages = WhisperLanguages.all.prefix(languageCount).map(\.code)
        let specials = ["<|endoftext|>", "<|startoftranscript|>"] + languages.map { "<|\($0)|>" }
            + ["<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>", "<|notimestamps|>"]
        bpe = try BPETokenizer(rankedTokens: (0..<textCount).map { Array(file.tokenBytes($0)) }, specials: specials,
                               preTokenizer: .gpt2, path: path)
        let start = textCount + 1, afterLanguages = start + languageCount + 1
        endOfText = textCount
        startOfTranscript = start
        self.languages = languages.enumerated().map { ($0.element, start + 1 + $0.offset) }
        translate = afterLanguages
        transcribe = afterLanguages + 1
        startOfLM = afterLanguages + 2
        startOfPrevious = afterLanguages + 3
        noSpeech = afterLanguages + 4
        noTimestamps = afterLanguages + 5
        timestampBegin = afterLanguages + 6
    }

    /// Why a model of `vocabularySize` tokens (51864 for the English-only `.en` models) is refused.
    static func englishOnlyReason(path: String, vocabularySize: Int) -> String {
        "\(path) is an English-only Whisper model (.en, \(vocabularySize) tokens), whose prompt has no language or task token; Hearth transcribes with the multilingual models: use whisper-base rather than whisper-base.en (ggml-base.bin rather than ggml-base.en.bin)"
    }

    /// Whisper's non-speech tokens, suppressed when a model names no tokens of its own: the
    /// symbols of speaker tags and sound annotations (`[DAVID]`, `( SPEAKING FOREIGN LANGUAGE )`,
    /// `♪♪♪`) where they are one token, alone or after a space, and a hyphen or quote that
    /// starts a word (between words they stay). openai-whisper's and faster-whisper's
    /// `non_speech_tokens`, computed from this vocabulary.
    public var nonSpeechTokens: [Int] {
        let symbols = "\"#()*+/:;<=>@[\\]^_`{|}~「」『』".map(String.init)
            + "<< >> <<< >>> -- --- -( -[ (' (\" (( )) ((( ))) [[ ]] {{ }} ♪♪ ♪♪♪".split(separator: " ").map(String.init)
        // Musical symbols of U+2640...U+267F: where one takes several tokens, its first holds the
        // two UTF-8 bytes they all share, and suppressing it is safe.
        let musical = "♩♪♫♬♭♮♯".map(String.init)
        var result: Set<Int> = [encode(" -")[0], encode(" '")[0]]
        for symbol in symbols + musical {
            for tokens in [encode(symbol), encode(" " + symbol)] where tokens.count == 1 || musical.contains(symbol) {
                result.insert(tokens[0])
            }
        }
        return result.sorted()
    }

    /// Text tokens of `text` (no special tokens).
    public func encode(_ text: String) -> [Int] {
        bpe.encode(text, addSpecial: false, parseSpecial: false).map(Int.init)
    }

    /// The text of `tokens`, leaving out special and timestamp tokens.
    public func decode(_ tokens: [Int]) -> String {
        bpe.decode(tokens.filter { $0 < endOfText }.map(Int32.init))
    }

    /// The token of a language code (`en`), or nil.
    public func languageToken(_ code: String) -> Int? {
        languages.first { $0.code == code }?.token
    }

    /// The code of a language token.
    public func languageCode(_ token: Int) -> String? {
        languages.first { $0.token == token }?.code
    }
}
