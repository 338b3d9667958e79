import Foundation
import Hearth
import HearthTestSupport
import Testing

@Suite("OpenAI API on loopback with the real SmolLM2", .serialized)
struct OpenAITests {
    static let question = "What is the capital of France?"

    @Test("non-streaming chat equals the engine's greedy answer, with usage and finish reason")
    func chatCompletion() async throws {
        let server = try await ServeProcess()
        defer { Task { await server.stop() } }
        let expected = try await greedyAnswer(Self.question, maxTokens: 24)
        let answer = try await server.post("/v1/chat/completions", [
            "model": "smollm2", "temperature": 0, "max_tokens": 24,
            "messages": [["role": "user", "content": Self.question]],
        ])
        #expect(answer.status == 200, "\(answer.text)")
        let body = try answer.json()
        #expect(body["object"] as? String == "chat.completion")
        let choice = try #require((body["choices"] as? [[String: Any]])?.first)
        let message = try #require(choice["message"] as? [String: Any])
        #expect(message["role"] as? String == "assistant")
        #expect(message["content"] as? String == expected)
        let usage = try #require(body["usage"] as? [String: Any])
        let completion = try #require(usage["completion_tokens"] as? Int)
        #expect(completion > 0 && completion <= 24)
        #expect(choice["finish_reason"] as? String == (completion == 24 ? "length" : "stop"))
        #expect((usage["total_tokens"] as? Int) == (usage["prompt_tokens"] as? Int ?? 0) + completion)
    }

    @Test("streamed chat: a role delta, content deltas that add up to the greedy answer, a finish chunk, usage, [DONE]")
    func streamedChat() async throws {
        let server = try await ServeProcess()
        defer { Task { await server.stop() } }
        let expected = try await greedyAnswer(Self.question, maxTokens: 24)
        var content = ""
        var roles: [String] = []
        var finish: String?
        var usage: [String: Any]?
        var done = false
        let status = try await server.stream("/v1/chat/completions", [
            "model": "smollm2", "temperature": 0, "max_tokens": 24, "stream": true, "stream_options": ["include_usage": true],
            "messages": [["role": "user", "content": Self.question]],
        ]) { line in
            if line == "[DONE]" {
                done = true
                return false
            }
            let chunk = try jsonObject(line)
            #expect(chunk["object"] as? String == "chat.completion.chunk")
            if let found = chunk["usage"] as? [String: Any] { usage = found }
            for choice in chunk["choices"] as? [[String: Any]] ?? [] {
                let delta = choice["delta"] as? [String: Any] ?? [:]
                if let role = delta["role"] as? String { roles.append(role) }
                content += delta["content"] as? String ?? ""
                if let reason = choice["finish_reason"] as? String { finish = reason }
            }
            return true
        }
        #expect(status == 200)
        #expect(done)
        #expect(roles == ["assistant"])
        #expect(content == expected)
        #expect(finish != nil)
        #expect((usage?["completion_tokens"] as? Int ?? 0) > 0)
    }

    @Test("completions continue raw text; the cache of a slot is reused by a request that extends it")
    func completions() async throws {
        let server = try await ServeProcess(parallel: 1)
        defer { Task { await server.stop() } }
        let model = try referenceModel.get()
        let prompt = "The three primary colors are"
        let expected = try await model.complete(prompt, options: GenerationOptions(sampling: .greedy, maxTokens: 12)).collect().text
        let answer = try await server.post("/v1/completions", ["model": "smollm2", "prompt": prompt, "temperature": 0, "max_tokens": 12,
                                                              "logprobs": 2])
        #expect(answer.status == 200, "\(answer.text)")
        let body = try answer.json()
        #expect(body["object"] as? String == "text_completion")
        let choice = try #require((body["choices"] as? [[String: Any]])?.first)
        #expect(choice["text"] as? String == expected)
        let logprobs = try #require(choice["logprobs"] as? [String: Any])
        #expect((logprobs["token_logprobs"] as? [Double])?.count == 12)
        #expect((logprobs["top_logprobs"] as? [[String: Double]])?.allSatisfy { $0.count <= 2 && !$0.isEmpty } == true)
        let again = try await server.post("/v1/completions", ["model": "smollm2", "prompt": prompt + expected, "temperature": 0,
                                                             "max_tokens": 4])
        let usage = try #require(try again.json()["usage"] as? [String: Any])
        let cached = try #require((usage["prompt_tokens_details"] as? [String: Any])?["cached_tokens"] as? Int)
        #expect(cached >= 5, "a follow-up reuses the slot's cache: \(usage)")
    }

    @Test("chat logprobs: one entry per token with alternatives")
    func chatLogprobs() async throws {
        let server = try await ServeProcess()
        defer { Task { await server.stop() } }
        let answer = try await server.post("/v1/chat/completions", [
            "temperature": 0, "max_tokens": 5, "logprobs": true, "top_logprobs": 3,
            "messages": [["role": "user", "content": "Say hello."]],
        ])
        let choice = try #require((try answer.json()["choices"] as? [[String: Any]])?.first)
        let content = try #require((choice["logprobs"] as? [String: Any])?["content"] as? [[String: Any]])
        #expect(!content.isEmpty)
        for entry in content {
            #expect((entry["logprob"] as? Double ?? 1) <= 0)
            #expect((entry["top_logprobs"] as? [[String: Any]])?.count == 3)
        }
    }

    @Test("models lists the served models; embeddings equal the embedder's own vectors")
    func modelsAndEmbeddings() async throws {
        let server = try await ServeProcess()
        defer { Task { await server.stop() } }
        let models = try await server.get("/v1/models").json()
        let ids = (models["data"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        #expect(ids.contains("smollm2") && ids.contains("all-minilm"))
        #expect(try await server.get("/v1/models/smollm2").status == 200)
        #expect(try await server.get("/v1/models/nope").status == 404)

        let texts = ["A cat sat on the mat.", "Stock prices fell sharply today."]
        let answer = try await server.post("/v1/embeddings", ["model": "all-minilm", "input": texts])
        #expect(answer.status == 200, "\(answer.text)")
        let data = try #require(try answer.json()["data"] as? [[String: Any]])
        let embedder = try Embedder(path: TestFiles.model("all-MiniLM-L6-v2"))
        let expected = try await embedder.embed(texts)
        #expect(data.count == 2)
        for (index, item) in data.enumerated() {
            let vector = try #require(item["embedding"] as? [Double])
            #expect(vector.count == 384)
            let dot = zip(vector, expected[index]).reduce(0.0) { $0 + $1.0 * Double($1.1) }
            #expect(dot > 0.9999)
        }
        let encoded = try await server.post("/v1/embeddings", ["model": "all-minilm", "input": "hi", "encoding_format": "base64"])
        let base64 = try #require((try encoded.json()["data"] as? [[String: Any]])?.first?["embedding"] as? String)
        #expect(Data(base64Encoded: base64)?.count == 384 * 4)
    }

    @Test("stop ends the answer before the stop text; a seed repeats a sampled answer; /metrics counts it all")
    func stopSeedAndMetrics() async throws {
        let server = try await ServeProcess()
        defer { Task { await server.stop() } }
        let full = try await greedyAnswer(Self.question, maxTokens: 24)
        let words = full.split(separator: " ")
        try #require(words.count > 3, "\(full)")
        let stopText = String(words[2])
        let stopped = try await server.post("/v1/chat/completions", [
            "temperature": 0, "max_tokens": 24, "stop": [stopText], "messages": [["role": "user", "content": Self.question]],
        ])
        let choice = try #require((try stopped.json()["choices"] as? [[String: Any]])?.first)
        let text = try #require((choice["message"] as? [String: Any])?["content"] as? String)
        #expect(full.hasPrefix(text) && !text.contains(stopText), "\(text)")
        #expect(choice["finish_reason"] as? String == "stop")

        func sampled(seed: Int) async throws -> String {
            let answer = try await server.post("/v1/chat/completions", [
                "temperature": 0.9, "seed": seed, "max_tokens": 16, "messages": [["role": "user", "content": "Tell me a story."]],
            ])
            let choice = try #require((try answer.json()["choices"] as? [[String: Any]])?.first)
            return try #require((choice["message"] as? [String: Any])?["content"] as? String)
        }
        // The first request evaluates the whole prompt; the next ones reuse all but its last token
        // from the slot, which evaluates that token in a different batch and can move the logits
        // in their last bits. From the same cache state, a seed repeats the answer.
        _ = try await sampled(seed: 7)
        #expect(try await sampled(seed: 7) == (try await sampled(seed: 7)))

        let metrics = try await server.get("/metrics").text
        for name in ["hearth_http_requests_total", "hearth_time_to_first_token_seconds_bucket", "hearth_generation_tokens_per_second_bucket",
                     "hearth_completion_tokens_total", "hearth_prompt_tokens_total"] {
            #expect(metrics.contains(name), "\(name) missing from /metrics")
        }
        #expect(try metric("hearth_models_loaded", in: metrics) == 1)
        #expect(try metric("hearth_slots_busy", in: metrics) == 0)
        // Every series is labelled with the replica, so that several servers' metrics add up.
        let series = metrics.split(separator: "\n").filter { $0.hasPrefix("hearth_") }
        #expect(!series.isEmpty && series.allSatisfy { $0.contains(#"replica="test-replica""#) })
    }

    @Test("--cache-type-k q8_0 --cache-type-v q4_0: answers come from the quantized cache, and /metrics and /api/ps count its bytes")
    func quantizedCache() async throws {
        var command = try ServeCommand()
        command.contextLength = 512
        command.arguments = ["--parallel", "2", "--cache-type-k", "q8_0", "--cache-type-v", "q4_0"]
        let server = try await ServeProcess(command)
        defer { Task { await server.stop() } }
        let answer = try await server.post("/v1/chat/completions", [
            "model": "smollm2", "temperature": 0, "max_tokens": 12, "messages": [["role": "user", "content": Self.question]],
        ])
        #expect(answer.status == 200, "\(answer.text)")
        let choice = try #require((try answer.json()["choices"] as? [[String: Any]])?.first)
        #expect(((choice["message"] as? [String: Any])?["content"] as? String ?? "").contains("Paris"))

        // SmolLM2: 30 layers of 3 key/value heads 64 wide; a Q8_0 key row is 2 blocks of 34 bytes,
        // a Q4_0 value row 2 of 18: (68 + 36) bytes × 90 heads × 512 positions × 2 slots.
        let cacheBytes = (68 + 36) * 90 * 512 * 2
        let metrics = try await server.get("/metrics").text
        let line = try #require(metrics.split(separator: "\n").first { $0.hasPrefix("hearth_kv_cache_bytes{") }, "\(metrics)")
        #expect(line.contains(#"type_k="q8_0""#) && line.contains(#"type_v="q4_0""#), "\(line)")
        #expect(try metric("hearth_kv_cache_bytes", in: metrics) == Double(cacheBytes))
        let running = try #require(try await server.get("/api/ps").json()["models"] as? [[String: Any]])
        let model = try #require(running.first { $0["name"] as? String == "smollm2" })
        let fileBytes = try FileManager.default.attributesOfItem(atPath: try TestFiles.model(TestFiles.smolLM2))[.size] as? Int
        #expect(model["size"] as? Int == (fileBytes ?? 0) + cacheBytes)
        // The digest is the file's, as /api/tags gives it, so clients still match the two lists.
        let tags = try #require(try await server.get("/api/tags").json()["models"] as? [[String: Any]])
        let listed = try #require(tags.first { $0["name"] as? String == "smollm2" })
        #expect(model["digest"] as? String == listed["digest"] as? String)
    }
}
