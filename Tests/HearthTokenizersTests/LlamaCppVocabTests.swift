import Foundation
import HearthFormats
import HearthTestSupport
import HearthTokenizers
import Testing

/// llama.cpp's own tokenizer tests run on Hearth: every vocabulary in models/llama-cpp-vocab
/// (from scripts/fetch-models) that has a `.inp`/`.out` pair, each input tokenized as
/// `tests/test-tokenizer-0.cpp` tokenizes it (no BOS or EOS, special-token text not parsed).
@Suite struct LlamaCppVocabTests {
    /// The vocabularies llama.cpp 0.3.36's tests/CMakeLists.txt runs test-tokenizer-0 on.
    static let expectedVocabularies = ["bert-bge", "command-r", "deepseek-coder", "deepseek-llm", "falcon", "gemma-4",
                                       "gpt-2", "llama-bpe", "llama-spm", "mpt", "phi-3", "qwen2", "qwen35", "refact",
                                       "starcoder"]

    /// One input and the ids llama.cpp gives for it.
    struct Case: Sendable {
        let text: String
        let ids: [Int32]
    }

    static func folder() throws -> URL {
        try TestFiles.modelURL(TestFiles.llamaCppVocabularies)
    }

    static func url(_ name: String) throws -> URL {
        try folder().appendingPathComponent("ggml-vocab-\(name).gguf")
    }

    /// Names (`gpt-2` for ggml-vocab-gpt-2.gguf) of the vocabularies that have both files of a pair.
    static func vocabularies() throws -> [String] {
        let files = Set(try FileManager.default.contentsOfDirectory(atPath: folder().path))
        return files.filter { $0.hasPrefix("ggml-vocab-") && $0.hasSuffix(".gguf") }
            .filter { files.contains($0 + ".inp") && files.contains($0 + ".out") }
            .map { String($0.dropFirst("ggml-vocab-".count).dropLast(".gguf".count)) }
            .sorted()
    }

    /// The cases of a vocabulary, read as test-tokenizer-0 reads them: inputs separated by a
    /// marker line, one line of ids per input.
    static func cases(_ name: String) throws -> [Case] {
        let base = try url(name)
        let input = try Data(contentsOf: URL(fileURLWithPath: base.path + ".inp"))
        guard let raw = String(data: input, encoding: .utf8) else {
            throw TestFiles.Missing(description: "\(base.lastPathComponent).inp is not UTF-8")
        }
        var texts = raw.components(separatedBy: "\n__ggml_vocab_test__\n")
        if texts.last == "" { texts.removeLast() }
        let output = try String(contentsOf: URL(fileURLWithPath: base.path + ".out"), encoding: .utf8)
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
        let idLines = lines.last == "" ? lines.dropLast() : lines[...]
        guard idLines.count == texts.count else {
            throw TestFiles.Missing(description: "\(name): \(texts.count) inputs but \(idLines.count) lines of ids")
        }
        return zip(texts, idLines).map { text, line in
            Case(text: text, ids: line.split(separator: " ").compactMap { Int32($0.trimmingCharacters(in: .whitespaces)) })
        }
    }

    static func tokenizer(_ name: String) throws -> any Tokenizer {
        try TokenizerLoader.load(from: GGUFFile(contentsOf: url(name)))
    }

    private struct Decoded: Decodable {
        let vocabularies: [String: [String]]
    }

    /// llama.cpp's detokenized text for each case, made by scripts/make-vocab-decode-fixtures.py.
    static let llamaCppDecoded: Result<[String: [String]], any Error> = Result {
        let url = TestFiles.packageRoot.appendingPathComponent("Tests/Fixtures/llama-cpp-vocab/decoded.json")
        return try JSONDecoder().decode(Decoded.self, from: Data(contentsOf: url)).vocabularies
    }

    @Test func everyPairedVocabularyIsThere() throws {
        #expect(try Self.vocabularies() == Self.expectedVocabularies)
    }

    @Test(arguments: try vocabularies())
    func idsEqualLlamaCppOnEveryInput(_ name: String) throws {
        let tokenizer = try Self.tokenizer(name)
        let cases = try Self.cases(name)
        #expect(cases.count >= 46)
        for (index, reference) in cases.enumerated() {
            let ids = tokenizer.encode(reference.text, addSpecial: false, parseSpecial: false)
            #expect(ids == reference.ids, "\(name) #\(index): \(String(reflecting: reference.text))")
        }
    }

    /// llama.cpp's detokenizer does not always give the input back (BERT lower-cases; most BPE
    /// vocabularies take the space out of " ?"). Where it does, Hearth must; elsewhere Hearth
    /// gives either the input or llama.cpp's text.
    @Test(arguments: try vocabularies())
    func decodingGivesTheInputBackWhereLlamaCppDoes(_ name: String) throws {
        let tokenizer = try Self.tokenizer(name)
        let cases = try Self.cases(name)
        let reference = try #require(try Self.llamaCppDecoded.get()[name], "no decoded texts for \(name)")
        try #require(reference.count == cases.count)
        for (index, (test, llamaCpp)) in zip(cases, reference).enumerated() {
            let decoded = tokenizer.decode(test.ids)
            let comment: Comment = "\(name) #\(index): \(String(reflecting: test.text))"
            if llamaCpp == test.text {
                #expect(decoded == test.text, comment)
            } else {
                #expect(decoded == test.text || decoded == llamaCpp, comment)
            }
        }
    }

    /// What llama.cpp (through llama-cpp-python 0.3.36) says of each vocabulary: its
    /// end-of-generation tokens, and the ids of "Hi" with the special tokens it adds.
    static let specials: [(name: String, endOfGeneration: Set<Int32>, hi: [Int32])] = [
        ("bert-bge", [0], [101, 7632, 102]),
        ("command-r", [0, 255001], [5, 37535]),
        ("deepseek-coder", [32014], [32013, 11041]),
        ("deepseek-llm", [100001], [100000, 11007]),
        ("falcon", [11], [5516]),
        ("gemma-4", [1, 50, 106], [2, 10979]),
        ("gpt-2", [50256], [17250]),
        ("llama-bpe", [128001, 128009], [128000, 13347]),
        ("llama-spm", [2], [1, 6324]),
        ("mpt", [0], [12764]),
        ("phi-3", [2, 32000, 32007], [1, 6324]),
        ("qwen2", [128247, 151643, 151645], [13048]),
        ("qwen35", [128247, 151643, 151645], [13048]),
        ("refact", [0, 4, 18], [12575]),
        ("starcoder", [0, 4], [12589]),
    ]

    @Test(arguments: specials)
    func specialTokensAsLlamaCppSays(_ name: String, _ endOfGeneration: Set<Int32>, _ hi: [Int32]) throws {
        let tokenizer = try Self.tokenizer(name)
        #expect(tokenizer.endOfGenerationTokens == endOfGeneration)
        #expect(tokenizer.encode("Hi", addSpecial: true, parseSpecial: false) == hi)
        #expect(tokenizer.addsBOS == (hi.first == tokenizer.bosToken && hi.count > 1))
    }

    @Test func specialTokenTextIsParsedOnlyWhenAsked() throws {
        let llama3 = try Self.tokenizer("llama-bpe")
        #expect(llama3.encode("<|begin_of_text|>Hi", addSpecial: true, parseSpecial: true) == [128000, 128000, 13347])
        let bert = try Self.tokenizer("bert-bge")
        #expect(bert.encode("[CLS] hi [SEP]", addSpecial: false, parseSpecial: true) == [101, 7632, 102])
        let gpt2 = try Self.tokenizer("gpt-2")
        #expect(gpt2.encode("<|endoftext|>", addSpecial: true, parseSpecial: true) == [50256])
        #expect(gpt2.encode("<|endoftext|>", addSpecial: false, parseSpecial: false).count > 1)
    }

    /// The vocabularies without a pair: the BPE and SentencePiece ones load; nomic-bert-moe's
    /// Unigram model (`t5`) is not implemented and is refused by name.
    @Test func vocabulariesWithoutAPair() throws {
        for name in ["aquila", "baichuan", "gpt-neox"] {
            #expect(try Self.tokenizer(name).encode("Hello world", addSpecial: false, parseSpecial: false).count == 2)
        }
        expectHearthError(.unsupportedModel(naming: "t5")) { try Self.tokenizer("nomic-bert-moe") }
    }

    @Test func phi3SpecialTokensTakeTheWhitespaceAfterThem() throws {
        // llama.cpp strips whitespace after Phi-3's special tokens (by the model's name); </s> is
        // user-defined in the file but, ending generation, counts as control.
        let phi3 = try Self.tokenizer("phi-3")
        #expect(phi3.encode("<|user|>\nHi <|end|>\n<|assistant|>", addSpecial: true, parseSpecial: true)
                == [1, 32010, 6324, 29871, 32007, 32001])
        #expect(phi3.encode("a</s>  b", addSpecial: false, parseSpecial: false) == [263, 829, 29879, 29958, 29871, 289])
        #expect(phi3.endOfGenerationTokens.contains(2))
    }
}
