import Testing
import HearthTokenizers

/// SentencePiece on tiny hand-made vocabularies, one edge case each.
@Suite struct SentencePieceTokenizerTests {
    static let pieces = ["<unk>", "<s>", "</s>", "▁", "h", "e", "l", "o", "w", "r", "d",
                         "▁h", "▁he", "▁hel", "▁hell", "▁hello", "▁w", "▁wo", "▁wor", "▁worl", "▁world"]
        + (0..<256).map { String(format: "<0x%02X>", $0) }

    static func tokenizer(addSpacePrefix: Bool, extra: [(String, TokenType)] = [],
                          special: SpecialTokens = SpecialTokens(bos: 1, eos: 2, unknown: 0, addBOS: true))
        throws -> SentencePieceTokenizer {
        let tokens = pieces + extra.map(\.0)
        // Longer pieces score higher, so words assemble from their start.
        let scores = tokens.map { Float($0.count) - 100 }
        var types = pieces.indices.map { index -> TokenType in
            switch index {
            case 0: return .unknown
            case 1, 2: return .control
            case 21...: return .byte
            default: return .normal
            }
        }
        types += extra.map(\.1)
        return try SentencePieceTokenizer(tokens: tokens, scores: scores, tokenTypes: types,
                                          addSpacePrefix: addSpacePrefix, specialTokens: special)
    }

    static func id(_ piece: String) -> Int32 { Int32(pieces.firstIndex(of: piece)!) }

    @Test func spacesBecomeMarkersAndComeBack() throws {
        let prefixed = try Self.tokenizer(addSpacePrefix: true)
        let ids = prefixed.encode("hello world", addSpecial: true, parseSpecial: false)
        #expect(ids == [1, Self.id("▁hello"), Self.id("▁world")])
        #expect(prefixed.decode(ids) == "<s>hello world")
        #expect(prefixed.decode(Array(ids.dropFirst())) == "hello world")

        let plain = try Self.tokenizer(addSpacePrefix: false)
        let plainIDs = plain.encode("hello world", addSpecial: false, parseSpecial: false)
        #expect(plainIDs == ["h", "e", "l", "l", "o", "▁world"].map(Self.id))
        #expect(plain.decode(plainIDs) == "hello world")
    }

    @Test func unknownCharactersFallBackToBytes() throws {
        let tokenizer = try Self.tokenizer(addSpacePrefix: false)
        let ids = tokenizer.encode("hé", addSpecial: false, parseSpecial: false)
        #expect(ids == [Self.id("h"), Self.id("<0xC3>"), Self.id("<0xA9>")])
        #expect(tokenizer.tokenBytes(ids[1]) == [0xC3])
        #expect(tokenizer.decode(Array(ids.prefix(2))) == "h\u{FFFD}")
        #expect(tokenizer.decode(ids) == "hé")
    }

    @Test func higherScoreMergesFirst() throws {
        func tokenize(abScore: Float, bcScore: Float) throws -> [Int32] {
            let tokens = ["a", "b", "c", "ab", "bc"]
            let tokenizer = try SentencePieceTokenizer(tokens: tokens, scores: [0, 0, 0, abScore, bcScore],
                                                       addSpacePrefix: false)
            return tokenizer.encode("abc", addSpecial: false, parseSpecial: false)
        }
        #expect(try tokenize(abScore: -1, bcScore: -2) == [3, 2])
        #expect(try tokenize(abScore: -2, bcScore: -1) == [0, 4])
        #expect(try tokenize(abScore: -1, bcScore: -1) == [3, 2])  // a tie goes to the leftmost pair
    }

    @Test func textAfterASpecialTokenGetsTheSpacePrefix() throws {
        let tokenizer = try Self.tokenizer(addSpacePrefix: true, extra: [("\n", .userDefined)])
        let newline = Int32(Self.pieces.count)
        let ids = tokenizer.encode("hello\nworld", addSpecial: false, parseSpecial: false)
        #expect(ids == [Self.id("▁hello"), newline, Self.id("▁world")])
        let parsed = tokenizer.encode("<s>hello", addSpecial: false, parseSpecial: true)
        #expect(parsed == [1, Self.id("▁hello")])
        #expect(tokenizer.encode("<s>hello", addSpecial: false, parseSpecial: false).first == Self.id("▁"))
    }

    @Test func missingByteTokensGiveUnknown() throws {
        let tokenizer = try SentencePieceTokenizer(tokens: ["<unk>", "a"], addSpacePrefix: false,
                                                   specialTokens: SpecialTokens(unknown: 0))
        #expect(tokenizer.encode("aé", addSpecial: false, parseSpecial: false) == [1, 0, 0])
    }

    @Test func duplicateTokensResolveToTheLastAndEmptyTokensNeverMatch() throws {
        // As llama.cpp's text-to-id map: a later token with the same text wins, and an empty
        // token is renamed so that it matches no text.
        let tokenizer = try SentencePieceTokenizer(tokens: ["a", "", "a", "b"], addSpacePrefix: false)
        #expect(tokenizer.encode("ab", addSpecial: false, parseSpecial: false) == [2, 3])
        #expect(tokenizer.token(forStoredText: "") == nil)
    }

    @Test func inconsistentArraysAreAnInvalidModelFile() {
        expectHearthError(.invalidModelFile) {
            try SentencePieceTokenizer(tokens: ["a", "b"], scores: [0], addSpacePrefix: false)
        }
        expectHearthError(.invalidModelFile) {
            try SentencePieceTokenizer(tokens: ["a", "b"], addSpacePrefix: false,
                                       specialTokens: SpecialTokens(bos: 7, addBOS: true))
        }
        expectHearthError(.invalidModelFile) {
            try SentencePieceTokenizer(tokens: [], addSpacePrefix: false)
        }
    }
}
