import Foundation

extension WordPieceTokenizer {
    /// Which end of a text a cut removes tokens from (`truncation_side` in a
    /// `tokenizer_config.json`).
    public enum TruncationSide: String, Sendable {
        /// Keep the first tokens.
        case right
        /// Keep the last tokens.
        case left
    }

    /// The pieces of `text`, with no [CLS] or [SEP] and no cut.
    public func pieces(of text: String) -> [Int32] {
        Self.preTokenize(normalize(text)).flatMap(wordPieces)
    }

    /// Two texts as BERT reads a pair — `[CLS] first [SEP] second [SEP]` — with their token
    /// type ids (0 up to and with the first [SEP], 1 after it), cut to `maximumLength` as
    /// Hugging Face `tokenizers` cuts a pair with the `longest_first` strategy, which is what
    /// sentence-transformers' CrossEncoder asks for.
    public func encodePair(_ first: String, _ second: String, side: TruncationSide = .right) -> (ids: [Int32], typeIds: [Int32]) {
        var a = pieces(of: first), b = pieces(of: second)
        let (keepA, keepB) = Self.longestFirst(a.count, b.count, limit: max(maximumLength - 3, 0))
        a = Self.cut(a, to: keepA, side: side)
        b = Self.cut(b, to: keepB, side: side)
        let ids = [classifierToken] + a + [separatorToken] + b + [separatorToken]
        let typeIds = [Int32](repeating: 0, count: a.count + 2) + [Int32](repeating: 1, count: b.count + 1)
        return (ids, typeIds)
    }

    /// How many tokens of each text `longest_first` keeps when the pair's texts (special
    /// tokens left out) must fit in `limit`. It does not take one token at a time from the
    /// longer text: when the shorter text fits, the longer gets what is left (but never less
    /// than the shorter one has); when that still does not fit, each gets half of the limit,
    /// the longer one the odd token.
    public static func longestFirst(_ first: Int, _ second: Int, limit: Int) -> (Int, Int) {
        guard first + second > limit else { return (first, second) }
        guard limit > 0 else { return (0, 0) }
        let swapped = first > second
        var shorter = swapped ? second : first
        var longer = shorter > limit ? shorter : max(shorter, limit - shorter)
        if shorter + longer > limit {
            shorter = limit / 2
            longer = shorter + limit % 2
        }
        return swapped ? (longer, shorter) : (shorter, longer)
    }

    private static func cut(_ pieces: [Int32], to count: Int, side: TruncationSide) -> [Int32] {
        guard pieces.count > count else { return pieces }
        return side == .right ? Array(pieces.prefix(count)) : Array(pieces.suffix(count))
    }
}
