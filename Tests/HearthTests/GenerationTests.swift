import Foundation
import Hearth
import HearthTestSupport
import Testing

@Suite("Streaming generation through the SDK")
struct GenerationTests {
    private func greedy(maxTokens: Int? = nil, stop: [String] = []) -> GenerationOptions {
        GenerationOptions(sampling: .greedy, maxTokens: maxTokens, stop: stop)
    }

    @Test("a stop sequence spanning tokens ends the answer and is never emitted", arguments: [
        ("classic math", "The answer to this "),   // " classic" and " math" are two tokens
        ("answ", "The "),                          // inside one token
        ("is 4.", "The answer to this classic math problem "),
    ])
    func stopSequences(stop: String, expected: String) async throws {
        let model = try sharedSmolLM2.get()
        var chunks: [String] = []
        var finish: FinishReason?
        for try await chunk in model.stream("What is 2+2?", options: greedy(stop: [stop])) {
            chunks.append(chunk.text)
            finish = chunk.finishReason ?? finish
        }
        #expect(chunks.joined() == expected)
        #expect(finish == .stop)
        #expect(!chunks.contains { $0.contains(stop) })
    }

    @Test("characters split across tokens are never emitted broken")
    func multiByteCharacters() async throws {
        let model = try sharedSmolLM2.get()
        var tokens: [Int32] = []
        var text = ""
        for try await chunk in model.stream("Write the Japanese word for thank you, then three emoji.",
                                            options: greedy(maxTokens: 60)) {
            #expect(!chunk.text.contains("\u{FFFD}"))
            text += chunk.text
            if let token = chunk.token { tokens.append(token) }
        }
        let bytes = tokens.flatMap { model.engine.tokenizer.tokenBytes($0) }
        // The answer really has characters cut across tokens, and the text is their exact bytes.
        #expect(tokens.contains { model.engine.tokenizer.tokenBytes($0).contains { $0 >= 0x80 } })
        #expect(tokens.contains { String(validating: model.engine.tokenizer.tokenBytes($0), as: UTF8.self) == nil })
        // All of it but a character the token limit cut off, which is dropped.
        #expect(bytes.starts(with: text.utf8))
        #expect(bytes.count - text.utf8.count < 4)
    }

    @Test("log-probabilities come with each token, the greedy token the most likely")
    func logprobs() async throws {
        let model = try sharedSmolLM2.get()
        var options = greedy(maxTokens: 8)
        options.logprobs = true
        options.topLogprobs = 3
        let response = try await model.stream("What is 2+2?", options: options).collect()
        #expect(response.logprobs.count == 8)
        for entry in response.logprobs {
            #expect(entry.logprob <= 0)
            #expect(entry.top.count == 3)
            #expect(entry.top.first?.token == entry.token)
            #expect(entry.top.first?.logprob == entry.logprob)
        }
        #expect(response.finishReason == .length)
        #expect(response.statistics?.completionTokens == 8)
    }

    @Test("the same seed and options give the same answer")
    func seeded() async throws {
        let model = try sharedSmolLM2.get()
        var options = GenerationOptions.creative
        options.maxTokens = 24
        options.seed = 11
        let a = try await model.respond(to: "Tell me a story.", options: options)
        let b = try await model.respond(to: "Tell me a story.", options: options)
        options.seed = 12
        let c = try await model.respond(to: "Tell me a story.", options: options)
        #expect(a.tokens == b.tokens)
        #expect(a.tokens != c.tokens)
    }

    @Test("presets set the temperatures they promise")
    func presets() throws {
        #expect(GenerationOptions.creative.temperature == 0.9)
        #expect(GenerationOptions.precise.temperature == 0.25)
        #expect(GenerationOptions.balanced.sampling == GenerationOptions.balancedSampling)
        #expect(GenerationOptions.code.sampling.repetitionPenalty == nil)
        #expect(GenerationOptions.greedy.temperature == 0)
        #expect(GenerationOptions.preset(named: "Precise") == .precise)
        #expect(GenerationOptions.preset(named: "wild") == nil)
        for (_, options) in GenerationOptions.presets { try options.validate() }
    }

    @Test("bad options fail the stream with a clear error")
    func badOptions() async throws {
        let model = try sharedSmolLM2.get()
        var options = GenerationOptions.greedy
        options.sampling.topP = 2
        await #expect(throws: HearthError.self) { try await model.respond(to: "Hi", options: options) }
        options = .greedy
        options.stop = [""]
        await #expect(throws: HearthError.self) { try await model.respond(to: "Hi", options: options) }
    }

    @Test("a raw completion continues the text without the chat template")
    func completion() async throws {
        let model = try sharedSmolLM2.get()
        let response = try await model.complete("The capital of France is", options: greedy(maxTokens: 4)).collect()
        #expect(response.text == " Paris.\n\n")
        #expect(response.finishReason == .length)
    }
}

@Suite("Loading through Hearth")
struct LoadingTests {
    @Test("a model that would not fit in memory is refused before it is loaded")
    func memoryBudget() async throws {
        let path = try TestFiles.model(TestFiles.smolLM2)
        let small = Hearth(configuration: .init(threads: 1, memoryLimit: 50_000_000))
        await #expect {
            _ = try await small.loadModel(path)
        } throws: { error in
            guard case HearthError.insufficientMemory(let needed, let available) = error else { return false }
            return needed > 90_000_000 && available == 50_000_000
                && (error as? HearthError)?.category == .resource
        }
        // The KV cache counts: a long context needs more than a short one.
        let model = try await Hearth(configuration: .init(threads: 1)).loadModel(path)
        #expect(model.engine.memoryEstimate(contextLength: 4096) > model.engine.memoryEstimate(contextLength: 256) + 40_000_000)
    }

    @Test("names that are not files get errors that say what to do")
    func unknownNames() async throws {
        let hearth = Hearth(configuration: .init(threads: 1))
        await #expect(throws: HearthError.modelNotFound(name: "no-such-model")) {
            _ = try await hearth.loadModel("no-such-model")
        }
        await #expect(throws: HearthError.fileNotFound(path: "/nonexistent/model.gguf")) {
            _ = try await hearth.loadModel("/nonexistent/model.gguf")
        }
        #expect(HearthError.modelNotFound(name: "x").message.contains("hearth ls"))
    }

    @Test("the cache directory follows huggingface_hub's variables")
    func cacheDirectory() {
        typealias C = Hearth.Configuration
        #expect(C.defaultCacheDirectory(environment: ["HF_HUB_CACHE": "/a/b"]).path == "/a/b")
        #expect(C.defaultCacheDirectory(environment: ["HF_HOME": "/h"]).path == "/h/hub")
        #expect(C.defaultCacheDirectory(environment: ["HF_HOME": "/h", "HF_HUB_CACHE": "/c"]).path == "/c")
        #expect(C.defaultCacheDirectory(environment: ["XDG_CACHE_HOME": "/x"]).path == "/x/huggingface/hub")
    }
}

@Suite("Stop sequences")
struct StopSequenceMatcherTests {
    @Test("text that may begin a stop sequence is held back until decided")
    func holdsBack() {
        var matcher = StopSequenceMatcher(["</end>"])
        #expect(matcher.append("Hello <") == ("Hello ", false))
        #expect(matcher.append("/e") == ("", false))
        #expect(matcher.append("x") == ("</ex", false))
        #expect(matcher.append("ok </en") == ("ok ", false))
        #expect(matcher.append("d> more") == ("", true))
    }

    @Test("the earliest of several stop sequences wins; multi-byte text is cut on characters")
    func earliestWins() {
        var matcher = StopSequenceMatcher(["B", "é!"])
        #expect(matcher.append("aé") == ("a", false))
        #expect(matcher.append("!B") == ("", true))
        var plain = StopSequenceMatcher([])
        #expect(plain.append("anything") == ("anything", false))
        var tail = StopSequenceMatcher(["xyz"])
        #expect(tail.append("abx") == ("ab", false))
        #expect(tail.flush() == "x")
    }
}
