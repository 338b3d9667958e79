import Foundation
import HearthTestSupport
import HearthFormats
import Testing
import HearthTokenizers

/// Ids and round trips on the real models against Tests/Fixtures/references (made with llama.cpp).
@Suite struct SmolLM2ReferenceTests {
    @Test(arguments: try Fixtures.cases("smollm2.json"))
    func encodesLikeLlamaCpp(_ reference: Fixtures.Case) throws {
        let tokenizer = try Fixtures.smolLM2.get().tokenizer
        #expect(tokenizer.encode(reference.text, addSpecial: true, parseSpecial: false) == reference.ids)
    }

    @Test(arguments: try Fixtures.cases("smollm2.json"))
    func decodeRoundTrips(_ reference: Fixtures.Case) throws {
        let tokenizer = try Fixtures.smolLM2.get().tokenizer
        let ids = tokenizer.encode(reference.text, addSpecial: true, parseSpecial: false)
        #expect(tokenizer.decode(ids) == reference.text)
        #expect(ids.flatMap(tokenizer.tokenBytes) == Array(reference.text.utf8))
    }

    @Test func chatPromptWithSpecialTokens() throws {
        let tokenizer = try Fixtures.smolLM2.get().tokenizer
        let prompt = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
            + "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"
        let expected: [Int32] = [1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3511, 308, 34519, 28, 7018, 411,
                                 407, 19712, 8182, 2, 198, 1, 4093, 198, 1780, 314, 216, 34, 27, 34, 47, 2, 198, 1, 520,
                                 9531, 198]
        let ids = tokenizer.encode(prompt, addSpecial: true, parseSpecial: true)
        #expect(ids == expected)
        #expect(tokenizer.decode(ids) == prompt)
    }

    @Test func greedyReplyDecodes() throws {
        let tokenizer = try Fixtures.smolLM2.get().tokenizer
        let reply: [Int32] = [504, 2988, 288, 451, 8170, 4119, 1732, 314, 216, 36, 30, 2]
        #expect(tokenizer.decode(Array(reply.dropLast())) == "The answer to this classic math problem is 4.")
        #expect(tokenizer.endOfGenerationTokens.contains(reply.last!))
    }

    @Test func specialTokensFromMetadata() throws {
        let tokenizer = try Fixtures.smolLM2.get().tokenizer
        #expect(tokenizer is BPETokenizer)
        #expect(tokenizer.vocabularySize == 49152)
        #expect(tokenizer.bosToken == 1)
        #expect(tokenizer.eosToken == 2)
        #expect(!tokenizer.addsBOS)
        #expect(tokenizer.endOfGenerationTokens == [0, 2, 4])  // <|endoftext|>, <|im_end|>, <reponame>
        #expect((tokenizer as? BPETokenizer)?.preTokenizer == .smollm)
    }
}

@Suite struct Gemma3ReferenceTests {
    @Test(arguments: try Fixtures.cases("gemma3.json"))
    func encodesLikeLlamaCpp(_ reference: Fixtures.Case) throws {
        let tokenizer = try Fixtures.gemma3.get().tokenizer
        #expect(tokenizer.encode(reference.text, addSpecial: true, parseSpecial: false) == reference.ids)
    }

    @Test(arguments: try Fixtures.cases("gemma3.json"))
    func decodeRoundTrips(_ reference: Fixtures.Case) throws {
        let tokenizer = try Fixtures.gemma3.get().tokenizer
        let ids = tokenizer.encode(reference.text, addSpecial: true, parseSpecial: false)
        #expect(ids.first == tokenizer.bosToken)
        let text = Array(ids.dropFirst())
        #expect(tokenizer.decode(text) == reference.text)
        #expect(text.flatMap(tokenizer.tokenBytes) == Array(reference.text.utf8))
    }

    @Test func chatTurnWithSpecialTokens() throws {
        let tokenizer = try Fixtures.gemma3.get().tokenizer
        let spm = try #require(tokenizer as? SentencePieceTokenizer)
        let start = try #require(spm.token(forStoredText: "<start_of_turn>"))
        let end = try #require(spm.token(forStoredText: "<end_of_turn>"))
        let ids = tokenizer.encode("<start_of_turn>user\nHi<end_of_turn>\n", addSpecial: true, parseSpecial: true)
        #expect(ids == [2, start, 2364, 107, 10979, end, 107])
        #expect(tokenizer.endOfGenerationTokens.contains(end))
    }

    @Test func specialTokensFromMetadata() throws {
        let tokenizer = try Fixtures.gemma3.get().tokenizer
        #expect(tokenizer is SentencePieceTokenizer)
        #expect(tokenizer.vocabularySize == 262144)
        #expect(tokenizer.bosToken == 2)
        #expect(tokenizer.eosToken == 1)
        #expect(tokenizer.addsBOS)
        #expect(tokenizer.endOfGenerationTokens.contains(1))
    }
}

/// Prints how long building each tokenizer from an opened GGUF file takes (best of five, so
/// that other tests running at the same time disturb it less). Informative only: no assertion.
@Test func loadTimes() throws {
    let clock = ContinuousClock()
    let vocabularies = TestFiles.llamaCppVocabularies
    for (name, file) in [("SmolLM2 (BPE, 49,152 tokens, 48,900 merges)", Fixtures.smolLM2File),
                         ("Gemma 3 (SentencePiece, 262,144 tokens)", Fixtures.gemma3File),
                         ("Llama 3 (BPE, 128,256 tokens, 280,147 merges)", "\(vocabularies)/ggml-vocab-llama-bpe.gguf"),
                         ("Gemma 4 (BPE, 262,144 tokens, 514,906 merges)", "\(vocabularies)/ggml-vocab-gemma-4.gguf"),
                         ("BERT bge (WordPiece, 30,522 tokens)", "\(vocabularies)/ggml-vocab-bert-bge.gguf")] {
        let url = try TestFiles.modelURL(file)
        let gguf = try GGUFFile(contentsOf: url)
        var best = Duration.seconds(1000)
        for _ in 0..<5 {
            best = min(best, try clock.measure { _ = try TokenizerLoader.load(from: gguf) })
        }
        let ms = Double(best.components.seconds) * 1000 + Double(best.components.attoseconds) / 1e15
        print("tokenizer load, \(name): \(String(format: "%.1f", ms)) ms")
    }
}
