import Testing
import HearthTokenizers

/// WordPiece on a tiny GGUF-spelled vocabulary, one llama.cpp behaviour each.
@Suite struct GGUFWordPieceTokenizerTests {
    static let tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "▁a", "▁'", "▁b", "▁ᄀ", "▁cafe", "▁,", "s", "▁$"]

    static func tokenizer() throws -> GGUFWordPieceTokenizer {
        let types = tokens.indices.map { $0 < 4 ? TokenType.control : .normal }
        return try GGUFWordPieceTokenizer(tokens: tokens, tokenTypes: types,
                                          specialTokens: SpecialTokens(bos: 2, unknown: 1, addBOS: true), separator: 3)
    }

    @Test func wordsAreCutAtPunctuationAndASCIISymbols() throws {
        let tokenizer = try Self.tokenizer()
        #expect(tokenizer.encode("Café, a$b", addSpecial: false, parseSpecial: false) == [8, 9, 4, 11, 6])
        #expect(tokenizer.encode("a", addSpecial: true, parseSpecial: false) == [2, 4, 3])
    }

    @Test func accentsGoByTheFirstScalarOfTheDecomposition() throws {
        // A Hangul syllable decomposes into jamo; llama.cpp keeps only the first.
        #expect(try Self.tokenizer().encode("가", addSpecial: false, parseSpecial: false) == [7])
    }

    @Test func aWordWithAnUncoveredPartIsOneUnknownToken() throws {
        // "▁a" matches, then "b" has no continuation piece: the whole word is [UNK].
        #expect(try Self.tokenizer().encode("ab a", addSpecial: false, parseSpecial: false) == [1, 4])
    }

    @Test func decodingCleansSpacesAsLlamaCpp() throws {
        let tokenizer = try Self.tokenizer()
        #expect(tokenizer.decode([4, 9, 6]) == " a, b")
        #expect(tokenizer.decode([4, 5, 6]) == " a'b")
        // A space taken by one lone apostrophe does not count for the next.
        #expect(tokenizer.decode([4, 5, 5, 6]) == " a'' b")
        #expect(tokenizer.decode([6, 5, 10]) == " b's")
        #expect(tokenizer.decode([2, 4, 3]) == "[CLS] a[SEP]")
    }
}
