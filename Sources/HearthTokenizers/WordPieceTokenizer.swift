import Foundation
import HearthCore

/// BERT's tokenizer as Hugging Face `tokenizers` runs it from a `tokenizer.json`: the BERT
/// normalizer (clean text, space around CJK ideographs, strip accents, lowercase), the BERT
/// pre-tokenizer (split on whitespace, punctuation on its own), greedy longest-match WordPiece
/// with a `##` prefix for pieces inside a word, and `[CLS] … [SEP]` around the result.
public struct WordPieceTokenizer: Sendable {
    /// How text is cleaned before it is split.
    public struct Normalization: Sendable, Equatable {
        /// Drop control characters and turn every whitespace character into a space.
        public var cleanText: Bool
        /// Put spaces around CJK ideographs, so each is a word.
        public var handleChineseCharacters: Bool
        /// Decompose and drop the combining marks.
        public var stripAccents: Bool
        /// Lowercase.
        public var lowercase: Bool

        /// Settings; all on by default, as in uncased BERT.
        public init(cleanText: Bool = true, handleChineseCharacters: Bool = true, stripAccents: Bool = true,
                    lowercase: Bool = true) {
            self.cleanText = cleanText
            self.handleChineseCharacters = handleChineseCharacters
            self.stripAccents = stripAccents
            self.lowercase = lowercase
        }
    }

    /// Piece text → id.
    private let vocabulary: [String: Int32]
    /// Id → piece text.
    private let pieces: [String]
    /// How text is cleaned before it is split.
    public let normalization: Normalization
    /// `[UNK]`.
    public let unknownToken: Int32
    /// `[CLS]`, first in every sequence.
    public let classifierToken: Int32
    /// `[SEP]`, last in every sequence.
    public let separatorToken: Int32
    /// `[PAD]`, filling shorter sequences of a batch.
    public let paddingToken: Int32
    /// Prefix of a piece that continues a word.
    public let continuingPrefix: String
    /// Words longer than this many characters become one unknown token.
    public let maximumWordCharacters: Int
    /// Most tokens `encode` returns, [CLS] and [SEP] included (the model's position limit).
    public let maximumLength: Int

    /// Number of pieces in the vocabulary.
    public var vocabularySize: Int { pieces.count }

    /// A tokenizer from the pieces of `vocabulary` (index = id) and the settings of a
    /// `tokenizer.json`.
    public init(vocabulary list: [String], normalization: Normalization = Normalization(), unknown: String = "[UNK]",
                classifier: String = "[CLS]", separator: String = "[SEP]", padding: String = "[PAD]",
                continuingPrefix: String = "##", maximumWordCharacters: Int = 100, maximumLength: Int = 512) throws {
        var table: [String: Int32] = [:]
        table.reserveCapacity(list.count)
        for (id, piece) in list.enumerated() where table[piece] == nil { table[piece] = Int32(id) }
        func id(_ name: String) throws -> Int32 {
            guard let id = table[name] else {
                throw HearthError.invalidModelFile(path: "tokenizer.json", reason: "its vocabulary has no \(name) token")
            }
            return id
        }
        guard maximumLength >= 2 else {
            throw HearthError.invalidArgument("The maximum length must leave room for [CLS] and [SEP].")
        }
        vocabulary = table
        pieces = list
        self.normalization = normalization
        unknownToken = try id(unknown)
        classifierToken = try id(classifier)
        separatorToken = try id(separator)
        paddingToken = try id(padding)
        self.continuingPrefix = continuingPrefix
        self.maximumWordCharacters = maximumWordCharacters
        self.maximumLength = maximumLength
    }

    /// Token ids of `text`: `[CLS]`, the pieces (cut to fit `maximumLength`), `[SEP]`.
    public func encode(_ text: String) -> [Int32] {
        var ids: [Int32] = [classifierToken]
        let room = maximumLength - 1
        for word in Self.preTokenize(normalize(text)) {
            for piece in wordPieces(word) {
                guard ids.count < room else { break }
                ids.append(piece)
            }
            if ids.count >= room { break }
        }
        ids.append(separatorToken)
        return ids
    }

    /// The text of `tokens`, pieces joined back into words, special tokens left out.
    public func decode(_ tokens: [Int32]) -> String {
        var text = ""
        for token in tokens where token != classifierToken && token != separatorToken && token != paddingToken {
            guard pieces.indices.contains(Int(token)) else { continue }
            let piece = pieces[Int(token)]
            if piece.hasPrefix(continuingPrefix) {
                text += piece.dropFirst(continuingPrefix.count)
            } else {
                if !text.isEmpty { text += " " }
                text += piece
            }
        }
        return text
    }

    /// The text of one token.
    public func piece(_ token: Int32) -> String? {
        pieces.indices.contains(Int(token)) ? pieces[Int(token)] : nil
    }

    // MARK: - The steps

    /// The BERT normalizer: drop control characters, turn whitespace into spaces, put spaces
    /// around CJK ideographs, strip accents, lowercase — in that order.
    func normalize(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if normalization.cleanText {
                if scalar.value == 0 || scalar.value == 0xFFFD || Self.isControl(scalar) { continue }
                if Self.isWhitespace(scalar) {
                    scalars.append(" ")
                    continue
                }
            }
            if normalization.handleChineseCharacters, Self.isChineseCharacter(scalar) {
                scalars.append(" ")
                scalars.append(scalar)
                scalars.append(" ")
            } else {
                scalars.append(scalar)
            }
        }
        var result = String(scalars)
        if normalization.stripAccents {
            let decomposed = result.decomposedStringWithCanonicalMapping.unicodeScalars
            result = String(String.UnicodeScalarView(decomposed.filter { $0.properties.generalCategory != .nonspacingMark }))
        }
        if normalization.lowercase { result = Self.lowercase(result) }
        return result
    }

    /// Lowercases scalar by scalar, as Rust's `char::to_lowercase` does (no context-dependent
    /// rules such as the final sigma).
    static func lowercase(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if scalar.properties.changesWhenLowercased {
                out.append(contentsOf: scalar.properties.lowercaseMapping.unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// The BERT pre-tokenizer: words split at whitespace, each punctuation character a word.
    static func preTokenize(_ text: String) -> [String] {
        var words: [String] = []
        var current = String.UnicodeScalarView()
        func flush() {
            if !current.isEmpty { words.append(String(current)) }
            current = String.UnicodeScalarView()
        }
        for scalar in text.unicodeScalars {
            if isWhitespace(scalar) {
                flush()
            } else if isPunctuation(scalar) {
                flush()
                words.append(String(scalar))
            } else {
                current.append(scalar)
            }
        }
        flush()
        return words
    }

    /// Greedy longest-match-first pieces of one word; a word with a part no piece covers is
    /// one unknown token.
    func wordPieces(_ word: String) -> [Int32] {
        // Unicode scalars, not grapheme clusters: a piece may end inside a cluster, as with a
        // Devanagari consonant and its vowel sign.
        let characters = Array(word.unicodeScalars)
        guard characters.count <= maximumWordCharacters else { return [unknownToken] }
        var ids: [Int32] = []
        var start = 0
        while start < characters.count {
            var end = characters.count
            var found: Int32?
            while start < end {
                var candidate = String(String.UnicodeScalarView(characters[start..<end]))
                if start > 0 { candidate = continuingPrefix + candidate }
                if let id = vocabulary[candidate] {
                    found = id
                    break
                }
                end -= 1
            }
            guard let found else { return [unknownToken] }
            ids.append(found)
            start = end
        }
        return ids
    }

    static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "\t" || scalar == "\n" || scalar == "\r" || scalar.properties.isWhitespace
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        if scalar == "\t" || scalar == "\n" || scalar == "\r" { return false }
        switch scalar.properties.generalCategory {
        case .control, .format, .surrogate, .privateUse, .unassigned: return true
        default: return false
        }
    }

    static func isPunctuation(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII, (33...47).contains(scalar.value) || (58...64).contains(scalar.value)
            || (91...96).contains(scalar.value) || (123...126).contains(scalar.value) {
            return true
        }
        switch scalar.properties.generalCategory {
        case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation,
             .initialPunctuation, .finalPunctuation, .otherPunctuation:
            return true
        default:
            return false
        }
    }

    static func isChineseCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x4E00...0x9FFF, 0x3400...0x4DBF, 0x20000...0x2A6DF, 0x2A700...0x2B73F, 0x2B740...0x2B81F,
             0x2B920...0x2CEAF, 0xF900...0xFAFF, 0x2F800...0x2FA1F:
            return true
        default:
            return false
        }
    }
}

extension WordPieceTokenizer {
    /// The tokenizer a Hugging Face `tokenizer.json` describes. Anything other than a BERT
    /// normalizer, BERT pre-tokenizer and WordPiece model is `HearthError.unsupportedModel`
    /// rather than a guess. `maximumLength` caps the length (the model's position limit);
    /// the file's own padding and truncation settings are for batches and are not applied.
    public init(tokenizerJSON data: Data, maximumLength: Int = 512, path: String = "tokenizer.json") throws {
        func invalid(_ reason: String) -> HearthError { .invalidModelFile(path: path, reason: reason) }
        guard let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw invalid("it is not a JSON object")
        }
        guard let model = root["model"] as? [String: Any], let vocab = model["vocab"] as? [String: Any] else {
            throw invalid("it has no model vocabulary")
        }
        guard (model["type"] as? String) == "WordPiece" else {
            throw HearthError.unsupportedModel(reason: "tokenizer model \(model["type"] as? String ?? "unknown") (only WordPiece is read from tokenizer.json)")
        }
        var normalization = Normalization()
        if let normalizer = root["normalizer"] as? [String: Any] {
            guard (normalizer["type"] as? String) == "BertNormalizer" else {
                throw HearthError.unsupportedModel(reason: "normalizer \(normalizer["type"] as? String ?? "unknown") (supported: BertNormalizer)")
            }
            normalization.cleanText = normalizer["clean_text"] as? Bool ?? true
            normalization.handleChineseCharacters = normalizer["handle_chinese_chars"] as? Bool ?? true
            normalization.lowercase = normalizer["lowercase"] as? Bool ?? true
            // `strip_accents: null` follows `lowercase`, as in BERT's original tokenizer.
            normalization.stripAccents = normalizer["strip_accents"] as? Bool ?? normalization.lowercase
        } else {
            normalization = Normalization(cleanText: false, handleChineseCharacters: false, stripAccents: false, lowercase: false)
        }
        if let pre = root["pre_tokenizer"] as? [String: Any], (pre["type"] as? String) != "BertPreTokenizer" {
            throw HearthError.unsupportedModel(reason: "pre-tokenizer \(pre["type"] as? String ?? "unknown") (supported: BertPreTokenizer)")
        }
        var list = [String](repeating: "", count: vocab.count)
        for (piece, value) in vocab {
            guard let id = (value as? NSNumber)?.intValue, list.indices.contains(id) else {
                throw invalid("vocabulary entry \(piece) has an id outside 0..<\(vocab.count)")
            }
            list[id] = piece
        }
        try self.init(vocabulary: list, normalization: normalization,
                      unknown: model["unk_token"] as? String ?? "[UNK]",
                      continuingPrefix: model["continuing_subword_prefix"] as? String ?? "##",
                      maximumWordCharacters: (model["max_input_chars_per_word"] as? NSNumber)?.intValue ?? 100,
                      maximumLength: maximumLength)
    }
}
