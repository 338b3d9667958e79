/// Turns text into token ids and back, as the model's own tokenizer does.
public protocol Tokenizer: Sendable {
    /// Number of tokens in the vocabulary.
    var vocabularySize: Int { get }
    /// Beginning-of-sequence token, if the vocabulary has one.
    var bosToken: Int32? { get }
    /// End-of-sequence token, if the vocabulary has one.
    var eosToken: Int32? { get }
    /// Whether `encode(_:addSpecial:parseSpecial:)` puts BOS first when `addSpecial` is true.
    var addsBOS: Bool { get }
    /// Tokens after which generation ends (EOS, end-of-turn and the like).
    var endOfGenerationTokens: Set<Int32> { get }

    /// Token ids for `text`. `addSpecial` adds BOS (and EOS) as the model's metadata asks;
    /// `parseSpecial` turns the text of special tokens such as `<|im_start|>` into their ids
    /// instead of tokenizing their characters.
    func encode(_ text: String, addSpecial: Bool, parseSpecial: Bool) -> [Int32]

    /// The bytes a token stands for (special tokens give their text). Concatenating the bytes of
    /// a sequence gives its UTF-8 text; a single token may hold part of a character.
    func tokenBytes(_ token: Int32) -> [UInt8]

    /// Text for a sequence of tokens; invalid UTF-8 is replaced with U+FFFD.
    func decode(_ tokens: [Int32]) -> String

    /// What kind of token `token` is, or nil when the tokenizer does not say (or the id is out
    /// of range). Constrained sampling uses it to keep control tokens out of generated text.
    func tokenType(_ token: Int32) -> TokenType?
}

extension Tokenizer {
    /// Nil: a tokenizer without token types treats every token alike.
    public func tokenType(_ token: Int32) -> TokenType? { nil }
}

/// A tokenizer whose vocabulary is a list of token texts with types and special tokens, as a
/// GGUF file stores it: `BPETokenizer`, `SentencePieceTokenizer` and `GGUFWordPieceTokenizer`.
public protocol VocabularyTokenizer: Tokenizer {
    /// Special token ids, with EOT and EOM filled in from their texts where the metadata lacked them.
    var specialTokens: SpecialTokens { get }

    /// The token whose text, spelled as the vocabulary stores it (byte-level characters such as
    /// `Ġ` for a space in byte-level BPE, `▁` for a space in SentencePiece and in front of
    /// word-initial WordPiece pieces), is `text`.
    func token(forStoredText text: String) -> Int32?
}

/// The members of `VocabularyTokenizer` that every tokenizer over a `Vocabulary` answers alike.
protocol VocabularyBackedTokenizer: VocabularyTokenizer {
    var vocabulary: Vocabulary { get }
}

extension VocabularyBackedTokenizer {
    public var vocabularySize: Int { vocabulary.count }
    public var bosToken: Int32? { vocabulary.special.bos }
    public var eosToken: Int32? { vocabulary.special.eos }
    public var addsBOS: Bool { vocabulary.special.addBOS }
    public var endOfGenerationTokens: Set<Int32> { vocabulary.endOfGeneration }
    public var specialTokens: SpecialTokens { vocabulary.special }

    public func tokenType(_ token: Int32) -> TokenType? { vocabulary.type(of: token) }

    public func token(forStoredText text: String) -> Int32? {
        text.withUTF8Bytes { vocabulary.token(for: $0) }
    }
}
