import Foundation
import HearthCore

/// BERT's WordPiece as llama.cpp runs it on a GGUF vocabulary (`tokenizer.ggml.model = bert`),
/// giving the ids llama.cpp gives.
///
/// GGUF spells the vocabulary with `▁` in front of word-initial pieces (`▁the`) and continuation
/// pieces bare (`ing`), where a `tokenizer.json` writes `the` and `##ing`. Text is split into
/// words at whitespace, with each punctuation character, ASCII symbol and CJK ideograph a word
/// of its own; accents are stripped and letters lower-cased as the metadata says; each word,
/// with `▁` in front, is covered greedily by the longest pieces, or is one unknown token when
/// some part of it matches no piece. `WordPieceTokenizer` is the same model as Hugging Face
/// `tokenizers` runs it from a `tokenizer.json`.
public struct GGUFWordPieceTokenizer: VocabularyBackedTokenizer {
    let vocabulary: Vocabulary
    /// Whether letters are lower-cased (`tokenizer.ggml.normalizer.lowercase`).
    public let lowercases: Bool
    /// Whether accents are stripped (`tokenizer.ggml.normalizer.strip_accents`).
    public let stripsAccents: Bool
    /// `[SEP]`, which encoding with `addSpecial` puts last.
    public let separatorToken: Int32?
    /// Length in bytes of the longest piece, the longest match worth trying.
    private let longestPiece: Int

    /// A tokenizer from GGUF-spelled WordPiece pieces (`▁` in front of word-initial ones).
    /// `specialTokens.bos` is `[CLS]`, which encoding with `addSpecial` puts first (as
    /// `separator` last); `specialTokens.unknown` is required. Throws
    /// `HearthError.invalidModelFile` for inconsistent data.
    public init(tokens: [String], tokenTypes: [TokenType]? = nil, specialTokens: SpecialTokens, separator: Int32?,
                lowercases: Bool = true, stripsAccents: Bool = true) throws {
        try self.init(tokens: tokens, tokenTypes: tokenTypes, specialTokens: specialTokens, separator: separator,
                      lowercases: lowercases, stripsAccents: stripsAccents, spacing: .none,
                      path: "the WordPiece vocabulary")
    }

    init(tokens: [String], tokenTypes: [TokenType]?, specialTokens: SpecialTokens, separator: Int32?, lowercases: Bool,
         stripsAccents: Bool, spacing: SpecialTokenSpacing, path: String) throws {
        guard specialTokens.unknown != nil else {
            throw HearthError.invalidModelFile(path: path, reason: "its WordPiece vocabulary has no unknown token")
        }
        if let separator, separator < 0 || Int(separator) >= tokens.count {
            throw HearthError.invalidModelFile(
                path: path, reason: "the separator token id is \(separator), outside the vocabulary of \(tokens.count) tokens")
        }
        separatorToken = separator
        let vocabulary = try Vocabulary(tokens: tokens, types: tokenTypes, special: specialTokens, spacing: spacing,
                                        path: path)
        self.vocabulary = vocabulary
        self.lowercases = lowercases
        self.stripsAccents = stripsAccents
        longestPiece = (0..<vocabulary.count).reduce(0) { max($0, vocabulary.text(of: Int32($1)).count) }
    }

    public func encode(_ text: String, addSpecial: Bool, parseSpecial: Bool) -> [Int32] {
        var output: [Int32] = []
        output.reserveCapacity(text.utf8.count / 3 + 2)
        if addSpecial && vocabulary.special.addBOS, let cls = vocabulary.special.bos { output.append(cls) }
        text.withUTF8Bytes { bytes in
            var word: [UInt8] = []
            for fragment in vocabulary.fragments(of: bytes, parseSpecial: parseSpecial) {
                switch fragment {
                case .token(let id):
                    output.append(id)
                case .text(let range):
                    for piece in words(UnsafeBufferPointer(rebasing: bytes[range])) {
                        word.removeAll(keepingCapacity: true)
                        word.append(contentsOf: SentencePieceSpelling.escapedSpace)
                        word.append(contentsOf: piece.utf8)
                        word.withUnsafeBufferPointer { encodeWord($0, into: &output) }
                    }
                }
            }
        }
        if addSpecial, let separatorToken { output.append(separatorToken) }
        return output
    }

    /// The words of `bytes` after normalization, as llama.cpp's `llm_tokenizer_wpm_session`
    /// cuts them.
    func words(_ bytes: UnsafeBufferPointer<UInt8>) -> [String] {
        var words: [String] = []
        var current = String.UnicodeScalarView()
        func finish() {
            if !current.isEmpty { words.append(String(current)) }
            current = String.UnicodeScalarView()
        }
        var index = 0
        while index < bytes.count {
            let (decoded, length) = UTF8Decoding.scalar(in: bytes, at: index)
            index += length
            let value = stripsAccents ? Self.decompositionStart(decoded) : decoded
            let flags = CodepointFlags.of(value)
            if flags.contains(.whitespace) {
                finish()
                continue
            }
            if value == 0 || value == 0xFFFD || flags.contains(.control) { continue }
            if stripsAccents && flags.contains(.mark) { continue }
            guard let scalar = Unicode.Scalar(value) else { continue }
            let normalized = lowercases ? Self.lowercase(scalar) : scalar
            if flags.contains(.punctuation) || (value < 0x7F && flags.contains(.symbol))
                || WordPieceTokenizer.isChineseCharacter(scalar) {
                finish()
                words.append(String(normalized))
            } else {
                current.append(normalized)
            }
        }
        finish()
        return words
    }

    /// Greedy longest-match pieces of one `▁`-prefixed word, or the unknown token when some
    /// position matches no piece.
    private func encodeWord(_ word: UnsafeBufferPointer<UInt8>, into output: inout [Int32]) {
        let before = output.count
        var start = 0
        while start < word.count {
            var end = min(word.count, start + longestPiece)
            var found: Int32?
            while end > start {
                if let id = vocabulary.token(for: UnsafeBufferPointer(rebasing: word[start..<end])) {
                    found = id
                    break
                }
                end -= 1
            }
            guard let found else {
                output.removeSubrange(before...)
                break
            }
            output.append(found)
            start = end
        }
        if output.count == before, let unknown = vocabulary.special.unknown { output.append(unknown) }
    }

    /// The first scalar of the canonical decomposition of `value`: llama.cpp's accent stripping
    /// maps each code point to it (so `ử` becomes `u` and a Hangul syllable its first jamo).
    private static func decompositionStart(_ value: UInt32) -> UInt32 {
        guard value >= 0xC0, let scalar = Unicode.Scalar(value) else { return value }
        let decomposed = String(Character(scalar)).decomposedStringWithCanonicalMapping
        return decomposed.unicodeScalars.first?.value ?? value
    }

    /// Simple (one-to-one) lower-casing, as llama.cpp's `unicode_tolower`: where the full mapping
    /// has several scalars (`İ` → `i̇`) the simple mapping is its first.
    private static func lowercase(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
        guard scalar.properties.changesWhenLowercased else { return scalar }
        return scalar.properties.lowercaseMapping.unicodeScalars.first ?? scalar
    }

    public func tokenBytes(_ token: Int32) -> [UInt8] {
        guard let type = vocabulary.type(of: token) else { return [] }
        let text = vocabulary.text(of: token)
        guard type == .normal else { return Array(text) }
        var bytes: [UInt8] = []
        SentencePieceSpelling.unescape(text, into: &bytes)
        return bytes
    }

    /// Text for `tokens` as llama.cpp's detokenizer gives it: word-initial pieces bring their
    /// space (so the text starts with one), and spaces before `?!.,`, around a lone `'` and
    /// before `'s`, `'m`, `'re`, `'ve` are removed.
    public func decode(_ tokens: [Int32]) -> String {
        var bytes: [UInt8] = []
        for token in tokens { bytes.append(contentsOf: tokenBytes(token)) }
        return String(decoding: Self.cleanSpaces(bytes), as: UTF8.self)
    }

    /// llama.cpp's `clean_spaces`, three passes over the bytes.
    static func cleanSpaces(_ text: [UInt8]) -> [UInt8] {
        let space: UInt8 = 0x20, apostrophe: UInt8 = 0x27
        guard !text.isEmpty else { return text }
        // " ?", " !", " .", " ,": the space goes.
        var first: [UInt8] = [text[0]]
        for i in 1..<text.count {
            let x = text[i]
            if text[i - 1] == space && (x == 0x3F || x == 0x21 || x == 0x2E || x == 0x2C) { first.removeLast() }
            first.append(x)
        }
        // " ' ": both spaces go; a space taken this way no longer counts before the next apostrophe.
        var spaced = first
        var second: [UInt8] = [spaced[0]]
        var i = 1
        while i < spaced.count {
            let x = spaced[i]
            if x == apostrophe && i + 1 < spaced.count && spaced[i - 1] == space && spaced[i + 1] == space {
                second.removeLast()
                i += 1
                spaced[i] = 0
            }
            second.append(x)
            i += 1
        }
        // " 's", " 'm", " 're", " 've": the space goes.
        var third: [UInt8] = [second[0]]
        for i in 1..<second.count {
            let x = second[i]
            if second[i - 1] == space && x == apostrophe && i + 1 < second.count {
                let x1 = second[i + 1]
                let x2: UInt8? = i + 2 < second.count ? second[i + 2] : nil
                if x1 == 0x73 || x1 == 0x6D || (x2 == 0x65 && (x1 == 0x72 || x1 == 0x76)) { third.removeLast() }
            }
            third.append(x)
        }
        return third
    }
}
