import HearthCore
import HearthFormats
import Testing
import HearthTokenizers

/// The kinds of `HearthError` the tests expect.
enum ExpectedHearthError {
    case invalidModelFile
    case unsupportedModel(naming: String)

    func matches(_ error: HearthError) -> Bool {
        switch (self, error) {
        case (.invalidModelFile, .invalidModelFile): return true
        case (.unsupportedModel(let name), .unsupportedModel(let reason)): return reason.contains("\"\(name)\"")
        default: return false
        }
    }
}

/// Expects `body` to throw a `HearthError` of the `expected` kind.
func expectHearthError<R>(_ expected: ExpectedHearthError, _ comment: Comment? = nil,
                          sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> R) {
    let error = #expect(throws: HearthError.self, comment, sourceLocation: sourceLocation) { _ = try body() }
    if let error {
        #expect(expected.matches(error), "\(error)", sourceLocation: sourceLocation)
    }
}

/// Choosing and building a tokenizer from GGUF metadata, and refusing bad metadata.
@Suite struct TokenizerLoaderTests {
    static let byteLevelTokens = (0x21...0x7E).map { String(UnicodeScalar(UInt8($0))) } + ["Ġ", "<|endoftext|>"]

    static func bpeMetadata(pre: String?) -> [String: GGUFValue] {
        var metadata: [String: GGUFValue] = [
            "tokenizer.ggml.model": .string("gpt2"),
            "tokenizer.ggml.tokens": .array(byteLevelTokens.map(GGUFValue.string)),
            "tokenizer.ggml.merges": .array([.string("a b")]),
            "tokenizer.ggml.bos_token_id": .uint32(UInt32(byteLevelTokens.count - 1)),
            "tokenizer.ggml.eos_token_id": .uint32(UInt32(byteLevelTokens.count - 1)),
        ]
        if let pre { metadata["tokenizer.ggml.pre"] = .string(pre) }
        return metadata
    }

    static let spmMetadata: [String: GGUFValue] = [
        "tokenizer.ggml.model": .string("llama"),
        "tokenizer.ggml.tokens": .array(["<unk>", "<s>", "</s>", "▁a", "a"].map(GGUFValue.string)),
        "tokenizer.ggml.scores": .array([0, 0, 0, -1, -2].map { GGUFValue.float32($0) }),
        "tokenizer.ggml.token_type": .array([2, 3, 3, 1, 1].map { GGUFValue.int32($0) }),
    ]

    @Test(arguments: [("smollm", BPEPreTokenizer.smollm), ("llama-bpe", .llama3), ("qwen2", .qwen2),
                      ("default", .default), ("gpt-2", .gpt2)])
    func choosesThePreTokenizerByName(_ name: String, _ expected: BPEPreTokenizer) throws {
        let tokenizer = try TokenizerLoader.load(metadata: Self.bpeMetadata(pre: name), path: "test.gguf")
        let bpe = try #require(tokenizer as? BPETokenizer)
        #expect(bpe.preTokenizer == expected)
        // Llama 3's names also mean whole-word tokens skip merging and BOS is added.
        #expect(bpe.ignoresMerges == (name == "llama-bpe"))
        #expect(bpe.addsBOS == (name == "llama-bpe"))
    }

    @Test(arguments: [("qwen35", BPEPreTokenizer.qwen35), ("falcon", .falcon), ("deepseek-llm", .deepseekLLM),
                      ("deepseek-coder", .deepseekCoder), ("starcoder", .smollm), ("mpt", .gpt2),
                      ("command-r", .smollm), ("refact", .smollm)])
    func choosesTheNewerPreTokenizersByName(_ name: String, _ expected: BPEPreTokenizer) throws {
        let tokenizer = try TokenizerLoader.load(metadata: Self.bpeMetadata(pre: name), path: "test.gguf")
        #expect((tokenizer as? BPETokenizer)?.preTokenizer == expected)
    }

    @Test func gemma4IsBPEWithItsOwnPreTokenizerAndAlwaysBOS() throws {
        var metadata = Self.bpeMetadata(pre: "gpt-2")
        metadata["tokenizer.ggml.model"] = .string("gemma4")
        metadata["tokenizer.ggml.add_bos_token"] = .bool(false)
        let bpe = try #require(try TokenizerLoader.load(metadata: metadata, path: "test.gguf") as? BPETokenizer)
        #expect(bpe.preTokenizer == .gemma4)
        #expect(bpe.addsBOS)
    }

    @Test func bertIsWordPieceWithBERTsDefaultIds() throws {
        var tokens = (0..<104).map { "[unused\($0)]" }
        tokens[0] = "[PAD]"
        tokens[100] = "[UNK]"
        tokens[101] = "[CLS]"
        tokens[102] = "[SEP]"
        tokens += ["▁hello", "▁world", "s", "▁,"]
        let metadata: [String: GGUFValue] = [
            "tokenizer.ggml.model": .string("bert"),
            "tokenizer.ggml.tokens": .array(tokens.map(GGUFValue.string)),
        ]
        let bert = try #require(try TokenizerLoader.load(metadata: metadata, path: "test.gguf") as? GGUFWordPieceTokenizer)
        #expect(bert.bosToken == 101 && bert.separatorToken == 102 && bert.specialTokens.unknown == 100)
        #expect(bert.eosToken == nil && bert.addsBOS)
        #expect(bert.lowercases && bert.stripsAccents)
        #expect(bert.encode("Hello, Worlds héllo xyz", addSpecial: true, parseSpecial: false)
                == [101, 104, 107, 105, 106, 104, 100, 102])
        #expect(bert.decode([104, 107, 105, 106]) == " hello, worlds")
    }

    @Test func missingPreTokenizerIsLlamaCppsDefault() throws {
        let tokenizer = try TokenizerLoader.load(metadata: Self.bpeMetadata(pre: nil), path: "test.gguf")
        #expect((tokenizer as? BPETokenizer)?.preTokenizer == .default)
    }

    @Test func unknownPreTokenizerIsUnsupported() {
        expectHearthError(.unsupportedModel(naming: "mystery-bpe")) {
            try TokenizerLoader.load(metadata: Self.bpeMetadata(pre: "mystery-bpe"), path: "test.gguf")
        }
    }

    @Test func unknownTokenizerModelIsUnsupported() {
        var metadata = Self.spmMetadata
        metadata["tokenizer.ggml.model"] = .string("rwkv")
        expectHearthError(.unsupportedModel(naming: "rwkv")) {
            try TokenizerLoader.load(metadata: metadata, path: "test.gguf")
        }
    }

    @Test func sentencePieceDefaults() throws {
        let tokenizer = try TokenizerLoader.load(metadata: Self.spmMetadata, path: "test.gguf")
        let spm = try #require(tokenizer as? SentencePieceTokenizer)
        #expect(spm.addSpacePrefix)
        #expect(spm.addsBOS)
        #expect(spm.bosToken == 1 && spm.eosToken == 2 && spm.specialTokens.unknown == 0)
        #expect(spm.encode("a", addSpecial: true, parseSpecial: false) == [1, 3])
    }

    @Test(arguments: [
        ("no tokens", "tokenizer.ggml.tokens", nil),
        ("tokens not strings", "tokenizer.ggml.tokens", GGUFValue.array([.uint8(1)])),
        ("no merges", "tokenizer.ggml.merges", nil),
        ("merge without a space", "tokenizer.ggml.merges", .array([.string("ab")])),
        ("BOS out of range", "tokenizer.ggml.bos_token_id", .uint32(1_000_000)),
        ("negative EOS", "tokenizer.ggml.eos_token_id", .int32(-1)),
        ("types of the wrong length", "tokenizer.ggml.token_type", .array([.int32(1)])),
        ("no model", "tokenizer.ggml.model", nil),
    ] as [(String, String, GGUFValue?)])
    func badMetadataIsAnInvalidModelFile(_ what: String, _ key: String, _ value: GGUFValue?) {
        var metadata = Self.bpeMetadata(pre: "gpt-2")
        metadata[key] = value
        expectHearthError(.invalidModelFile, "\(what)") {
            try TokenizerLoader.load(metadata: metadata, path: "test.gguf")
        }
    }

    @Test func scoresOfTheWrongLengthAreAnInvalidModelFile() {
        var metadata = Self.spmMetadata
        metadata["tokenizer.ggml.scores"] = .array([.float32(0)])
        expectHearthError(.invalidModelFile) {
            try TokenizerLoader.load(metadata: metadata, path: "test.gguf")
        }
    }
}
