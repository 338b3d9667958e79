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
