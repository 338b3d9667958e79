import Testing
import HearthTokenizers

/// Byte-level BPE on tiny hand-made vocabularies, one edge case each.
@Suite struct BPETokenizerTests {
    /// Every printable ASCII character in byte-level spelling (`Ġ` is the space), then `extra`.
    static func vocabulary(_ extra: [String]) -> [String] {
        var tokens = (0x21...0x7E).map { String(UnicodeScalar(UInt8($0))) }
        tokens += ["Ġ", "Ċ"]
        return tokens + extra
    }

    static func id(_ token: String, in tokens: [String]) -> Int32 {
        Int32(tokens.lastIndex(of: token)!)
    }

    @Test func mergesApplyByRankNotPosition() throws {
        let tokens = Self.vocabulary(["ab", "bc", "abc"])
        let bcFirst = try BPETokenizer(tokens: tokens, merges: ["b c", "a b", "a bc"], preTokenizer: .gpt2)
        #expect(bcFirst.encode("abc", addSpecial: false, parseSpecial: false) == [Self.id("abc", in: tokens)])
        let abFirst = try BPETokenizer(tokens: tokens, merges: ["a b", "b c"], preTokenizer: .gpt2)
        #expect(abFirst.encode("abc", addSpecial: false, parseSpecial: false)
                == [Self.id("ab", in: tokens), Self.id("c", in: tokens)])
    }

    @Test func spacesAreByteLevelCharacters() throws {
        let tokens = Self.vocabulary(["Ġa", "ĠĠ"])
        let tokenizer = try BPETokenizer(tokens: tokens, merges: ["Ġ a", "Ġ Ġ"], preTokenizer: .gpt2)
        let ids = tokenizer.encode("b  a", addSpecial: false, parseSpecial: false)
        #expect(ids == [Self.id("b", in: tokens), Self.id("Ġ", in: tokens), Self.id("Ġa", in: tokens)])
        #expect(tokenizer.decode(ids) == "b  a")
    }

    @Test func characterSplitAcrossTokens() throws {
        // é is C3 A9, spelled Ã© at byte level; without a merge it stays two tokens of one byte each.
        let tokens = Self.vocabulary(["Ã", "©"])
        let tokenizer = try BPETokenizer(tokens: tokens, merges: [], preTokenizer: .gpt2)
        let ids = tokenizer.encode("é", addSpecial: false, parseSpecial: false)
        #expect(ids == [Self.id("Ã", in: tokens), Self.id("©", in: tokens)])
        #expect(tokenizer.tokenBytes(ids[0]) == [0xC3])
        #expect(tokenizer.tokenBytes(ids[1]) == [0xA9])
        #expect(tokenizer.decode([ids[0]]) == "\u{FFFD}")
        #expect(tokenizer.decode(ids) == "é")
    }

    @Test func mergeResultThatIsNotATokenFallsBackToCharacters() throws {
        // llama.cpp merges by text: "x y" applies though "xy" is not a token, and the word then
        // comes out as its single characters.
        let tokens = Self.vocabulary([])
        let tokenizer = try BPETokenizer(tokens: tokens, merges: ["x y"], preTokenizer: .gpt2)
        #expect(tokenizer.encode("xy", addSpecial: false, parseSpecial: false)
                == [Self.id("x", in: tokens), Self.id("y", in: tokens)])
    }

    @Test func ignoredMergesTakeWholeWords() throws {
        let tokens = Self.vocabulary(["abc"])
        let merging = try BPETokenizer(tokens: tokens, merges: [], preTokenizer: .llama3)
        #expect(merging.encode("abc", addSpecial: false, parseSpecial: false).count == 3)
        let whole = try BPETokenizer(tokens: tokens, merges: [], preTokenizer: .llama3, ignoresMerges: true)
        #expect(whole.encode("abc", addSpecial: false, parseSpecial: false) == [Self.id("abc", in: tokens)])
    }

    @Test func specialTokensSplitLongestFirst() throws {
        var tokens = Self.vocabulary([])
        tokens += ["<s>", "<s>>", "ĊĊ", "\n\n"]
        var types = Array(repeating: TokenType.normal, count: tokens.count)
        types[tokens.count - 4] = .control
        types[tokens.count - 3] = .control
        types[tokens.count - 1] = .userDefined
        let tokenizer = try BPETokenizer(tokens: tokens, tokenTypes: types, merges: [], preTokenizer: .gpt2)
        let s = Int32(tokens.count - 4), sLonger = Int32(tokens.count - 3), newlines = Int32(tokens.count - 1)
        let x = Self.id("x", in: tokens)

        #expect(tokenizer.encode("x<s>>x<s>", addSpecial: false, parseSpecial: true) == [x, sLonger, x, s])
        // Control tokens are text unless special tokens are parsed; user-defined ones always split.
        let plain = tokenizer.encode("<s>\n\nx", addSpecial: false, parseSpecial: false)
        #expect(plain == [Self.id("<", in: tokens), Self.id("s", in: tokens), Self.id(">", in: tokens), newlines, x])
        #expect(tokenizer.decode(plain) == "<s>\n\nx")
        #expect(tokenizer.decode([sLonger]) == "<s>>")
    }

    @Test func addSpecialAddsBOSAndEOSAsTheMetadataSays() throws {
        let tokens = Self.vocabulary(["<bos>", "<eos>"])
        let bos = Int32(tokens.count - 2), eos = Int32(tokens.count - 1)
        let special = SpecialTokens(bos: bos, eos: eos, addBOS: true, addEOS: true)
        let tokenizer = try BPETokenizer(tokens: tokens, merges: [], preTokenizer: .gpt2, specialTokens: special)
        let a = Self.id("a", in: tokens)
        #expect(tokenizer.addsBOS)
        #expect(tokenizer.encode("a", addSpecial: true, parseSpecial: false) == [bos, a, eos])
        #expect(tokenizer.encode("a", addSpecial: false, parseSpecial: false) == [a])
        #expect(tokenizer.encode("", addSpecial: true, parseSpecial: false) == [bos, eos])
    }

    @Test func endOfTurnTokensEndGenerationAndBecomeControl() throws {
        let tokens = Self.vocabulary(["<|im_end|>", "<|endoftext|>"])
        let imEnd = Int32(tokens.count - 2), endOfText = Int32(tokens.count - 1)
        let tokenizer = try BPETokenizer(tokens: tokens, merges: [], preTokenizer: .gpt2,
                                         specialTokens: SpecialTokens(eos: endOfText))
        #expect(tokenizer.endOfGenerationTokens == [imEnd, endOfText])
        #expect(tokenizer.tokenType(imEnd) == .control)
        #expect(tokenizer.specialTokens.eot == imEnd)
        #expect(tokenizer.encode("<|im_end|>", addSpecial: false, parseSpecial: true) == [imEnd])
    }

    @Test func outOfRangeTokensDecodeToNothing() throws {
        let tokenizer = try BPETokenizer(tokens: Self.vocabulary([]), merges: [], preTokenizer: .gpt2)
        #expect(tokenizer.tokenBytes(-1).isEmpty)
        #expect(tokenizer.tokenBytes(Int32(tokenizer.vocabularySize)).isEmpty)
    }

    @Test func malformedMergeIsAnInvalidModelFile() {
        expectHearthError(.invalidModelFile) {
            try BPETokenizer(tokens: Self.vocabulary([]), merges: ["ab"], preTokenizer: .gpt2)
        }
    }
}

/// BPE from ranked byte tokens alone (tiktoken files, whisper.cpp's vocabulary).
@Suite struct RankedBPETests {
    /// Every byte as a token of its own (rank = byte), then `extra` in rank order.
    static func ranked(_ extra: [String]) -> [[UInt8]] {
        (0...255).map { [UInt8($0)] } + extra.map { Array($0.utf8) }
    }

    /// The lowest-ranked concatenation merges first: "bc" (256) before "ab" (257), then
    /// "a"+"bc" makes "abc" although no merge list says so; with "ab" ranked first, "ab"+"c"
    /// makes it instead.
    @Test func theRanksAreTheMerges() throws {
        let bcFirst = try BPETokenizer(rankedTokens: Self.ranked(["bc", "ab", "abc"]), specials: [], preTokenizer: .gpt2)
        #expect(bcFirst.encode("abc", addSpecial: false, parseSpecial: false) == [258])
        #expect(bcFirst.encode("abd", addSpecial: false, parseSpecial: false) == [257, 100])
        #expect(bcFirst.encode("xbc", addSpecial: false, parseSpecial: false) == [120, 256])
        let noWhole = try BPETokenizer(rankedTokens: Self.ranked(["ab", "bc"]), specials: [], preTokenizer: .gpt2)
        #expect(noWhole.encode("abc", addSpecial: false, parseSpecial: false) == [256, 99])
    }

    /// Spaces, bytes of a character split across tokens, an empty token (Whisper's 50256),
    /// and special tokens after the ranked ones, which text never produces.
    @Test func bytesSpacesEmptyTokensAndSpecials() throws {
        var tokens = Self.ranked([" a", "é"])
        tokens.append([])
        let tokenizer = try BPETokenizer(rankedTokens: tokens, specials: ["<|endoftext|>"], preTokenizer: .gpt2)
        let ids = tokenizer.encode("b a é<|endoftext|>", addSpecial: false, parseSpecial: false)
        #expect(ids.prefix(3) == [98, 256, 32] && ids[3] == 257)
        #expect(tokenizer.decode(ids) == "b a é<|endoftext|>")
        #expect(tokenizer.encode("<|endoftext|>", addSpecial: false, parseSpecial: true) == [259])
        #expect(tokenizer.tokenBytes(259) == Array("<|endoftext|>".utf8))
    }
}
