import Foundation
import Hearth
import HearthTestSupport
import Synchronization
import Testing

@Suite("Errors: status codes and bodies", .serialized)
struct ErrorTests {
    @Test("bad JSON, wrong types, unknown models, bad values and unknown routes get 4xx with a message")
    func badRequests() async throws {
        let server = try await ServeProcess(maxBodyBytes: 4096)
        defer { Task { await server.stop() } }
        let notJSON = try await server.send(.POST, "/v1/chat/completions", body: "{not json")
        #expect(notJSON.status == 400)
        let error = try #require(try notJSON.json()["error"] as? [String: Any])
        #expect(error["type"] as? String == "invalid_request_error")
        #expect((error["message"] as? String ?? "").contains("not JSON"))

        let wrongType = try await server.send(.POST, "/v1/chat/completions", body: #"{"messages": "hello"}"#)
        #expect(wrongType.status == 400)
        #expect(((try wrongType.json()["error"] as? [String: Any])?["message"] as? String ?? "").contains("'messages'"))

        let unknown = try await server.post("/v1/chat/completions", ["model": "no-such-model", "messages": [["role": "user", "content": "hi"]]])
        #expect(unknown.status == 404)
        #expect((try unknown.json()["error"] as? [String: Any])?["code"] as? String == "model_not_found")

        let path = try await server.post("/v1/chat/completions", ["model": "/etc/passwd", "messages": [["role": "user", "content": "hi"]]])
        #expect(path.status == 404, "a client cannot make the server open a path")

        let ollamaUnknown = try await server.post("/api/chat", ["model": "no-such-model", "messages": [["role": "user", "content": "hi"]]])
        #expect(ollamaUnknown.status == 404)
        #expect((try ollamaUnknown.json()["error"] as? String ?? "").contains("no-such-model"))

        let badRole = try await server.post("/v1/chat/completions", ["messages": [["role": "wizard", "content": "hi"]]])
        #expect(badRole.status == 400)
        let badTemperature = try await server.post("/v1/chat/completions", ["temperature": -1, "messages": [["role": "user", "content": "hi"]]])
        #expect(badTemperature.status == 400)
        let twoChoices = try await server.post("/v1/chat/completions", ["n": 2, "messages": [["role": "user", "content": "hi"]]])
        #expect(twoChoices.status == 400)
        let embeddingAsChat = try await server.post("/v1/chat/completions", ["model": "all-minilm", "messages": [["role": "user", "content": "hi"]]])
        #expect(embeddingAsChat.status == 400)

        let big = try await server.post("/v1/chat/completions", ["messages": [["role": "user", "content": String(repeating: "x", count: 10_000)]]])
        #expect(big.status == 413)
        #expect((try big.json()["error"] as? [String: Any])?["message"] as? String != nil)

        #expect(try await server.get("/v1/nothing-here").status == 404)
    }

    @Test("a prompt longer than the context gets 400 context_length_exceeded, streaming or not")
    func contextOverflow() async throws {
        let server = try await ServeProcess(contextLength: 64)
        defer { Task { await server.stop() } }
        let long = String(repeating: "This sentence is rather long. ", count: 20)
        for stream in [false, true] {
            let answer = try await server.post("/v1/chat/completions", ["stream": stream, "messages": [["role": "user", "content": long]]])
            #expect(answer.status == 400)
            let error = try #require(try answer.json()["error"] as? [String: Any])
            #expect(error["code"] as? String == "context_length_exceeded")
            #expect((error["message"] as? String ?? "").contains("64"))
        }
    }

    @Test("with an API key, every route but /health needs the bearer key")
    func apiKey() async throws {
        let server = try await ServeProcess(apiKey: "sesame")
        defer { Task { await server.stop() } }
        #expect(try await server.get("/health").status == 200)
        let missing = try await server.get("/v1/models")
        #expect(missing.status == 401)
        #expect((try missing.json()["error"] as? [String: Any])?["code"] as? String == "invalid_api_key")
        #expect(try await server.get("/v1/models", headers: ["Authorization": "Bearer wrong"]).status == 401)
        #expect(try await server.get("/api/tags").status == 401)
        #expect(try await server.get("/metrics").status == 401)
        #expect(try await server.get("/v1/models", headers: ["Authorization": "Bearer sesame"]).status == 200)
    }
}

@Suite("Slots, the queue and disconnects", .serialized)
struct ConcurrencyTests {
    static let prompts = ["Name a fruit.", "Name a color.", "Name an animal.", "Name a country.",
                          "Name a planet.", "Name a metal.", "Name a flower.", "Name a river."]

    @Test("8 concurrent streaming clients on 8 slots share forward passes and each get their own greedy answer")
    func eightStreams() async throws {
        let server = try await ServeProcess(parallel: 8)
        defer { Task { await server.stop() } }
        var expected: [String] = []
        for prompt in Self.prompts { expected.append(try await greedyAnswer(prompt, maxTokens: 20)) }
        let answers = try await withThrowingTaskGroup(of: (Int, String, Int).self) { group in
            for (index, prompt) in Self.prompts.enumerated() {
                group.addTask {
                    var text = ""
                    let status = try await server.stream("/v1/chat/completions", [
                        "temperature": 0, "max_tokens": 20, "stream": true, "messages": [["role": "user", "content": prompt]],
                    ]) { line in
                        guard line != "[DONE]" else { return false }
                        for choice in try jsonObject(line)["choices"] as? [[String: Any]] ?? [] {
                            text += (choice["delta"] as? [String: Any])?["content"] as? String ?? ""
                        }
                        return true
                    }
                    return (index, text, status)
                }
            }
            var answers = Array(repeating: "", count: Self.prompts.count)
            for try await (index, text, status) in group {
                #expect(status == 200)
                answers[index] = text
            }
            return answers
        }
        #expect(answers == expected)
        let metrics = try await server.get("/metrics").text
        #expect(try metric("hearth_shared_forward_passes", in: metrics) > 0, "the streams advanced together")
        #expect(try metric("hearth_most_sequences_per_pass", in: metrics) >= 2)
    }

    @Test("a request sharing a long system prompt with a running one on another slot starts from its positions")
    func sharedSystemPrompt() async throws {
        let server = try await ServeProcess(parallel: 2)
        defer { Task { await server.stop() } }
        let system = String(repeating: "You are the assistant of a mill by a river. Answer questions about flour, water wheels and grain briefly. ", count: 45)
        // The first request holds slot 0 while it streams a long answer.
        let started = Count()
        let first = Task {
            var seen = 0
            return try await server.stream("/v1/chat/completions", [
                "temperature": 0, "max_tokens": 1000, "stream": true,
                "messages": [["role": "system", "content": system], ["role": "user", "content": "Tell a long story about the mill."]],
            ]) { _ in
                seen += 1
                if seen == 2 { started.increment() }
                return true
            }
        }
        try await waitUntil("the first answer to start") { started.value > 0 }
        let question = "What turns the wheel?"
        let second = try await server.post("/v1/chat/completions", [
            "temperature": 0, "max_tokens": 8,
            "messages": [["role": "system", "content": system], ["role": "user", "content": question]],
        ])
        first.cancel()
        _ = await first.result
        #expect(second.status == 200)
        let body = try second.json()
        let usage = try #require(body["usage"] as? [String: Any])
        let prompt = try #require(usage["prompt_tokens"] as? Int)
        let cached = try #require((usage["prompt_tokens_details"] as? [String: Any])?["cached_tokens"] as? Int)
        #expect(prompt > 1000)
        #expect(cached >= 896 && cached < prompt, "\(usage)")
        let text = ((body["choices"] as? [[String: Any]])?.first?["message"] as? [String: Any])?["content"] as? String
        #expect(text == (try await greedyAnswer(question, system: system, maxTokens: 8)))
        let borrowed = try metric("hearth_borrowed_prompt_tokens", in: try await server.get("/metrics").text)
        #expect(borrowed >= Double(cached))

        // Ollama counts only the prompt tokens it evaluated.
        let ollama = try await server.post("/api/chat", [
            "stream": false, "options": ["temperature": 0, "num_predict": 4],
            "messages": [["role": "system", "content": system], ["role": "user", "content": "Who grinds the grain?"]],
        ])
        let evaluated = try #require(try ollama.json()["prompt_eval_count"] as? Int)
        #expect(evaluated > 0 && evaluated < 200, "prompt_eval_count \(evaluated)")
    }

    @Test("a conversation resumed in another slot than its own starts from its cached beginning")
    func resumedInAnotherSlot() async throws {
        let server = try await ServeProcess(parallel: 2)
        defer { Task { await server.stop() } }
        func ask(_ topic: String, _ question: String) async throws -> [String: Any] {
            let system = String(repeating: "You are the keeper of the \(topic). Answer questions about it briefly and kindly. ", count: 20)
            let response = try await server.post("/v1/chat/completions", [
                "temperature": 0, "max_tokens": 4,
                "messages": [["role": "system", "content": system], ["role": "user", "content": question]],
            ])
            #expect(response.status == 200)
            return try #require(try response.json()["usage"] as? [String: Any])
        }
        // Three conversations on two slots: the third takes the first one's slot.
        _ = try await ask("lighthouse", "How tall is it?")
        _ = try await ask("orchard", "Which apples grow here?")
        _ = try await ask("bakery", "When does the bread come out?")
        let usage = try await ask("lighthouse", "Who built it?")
        let prompt = try #require(usage["prompt_tokens"] as? Int)
        let cached = try #require((usage["prompt_tokens_details"] as? [String: Any])?["cached_tokens"] as? Int)
        #expect(prompt > 256)
        #expect(cached >= 256 && cached < prompt, "\(usage)")
    }

    /// Starts a long streamed answer that reads `lines` lines and then hangs up.
    static func longStream(_ server: ServeProcess, lines: Int, started: Count) -> Task<Int, any Error> {
        Task {
            var seen = 0
            return try await server.stream("/v1/chat/completions", [
                "temperature": 0, "max_tokens": 1500, "stream": true,
                "messages": [["role": "user", "content": "Write a very long story about a dragon and a knight."]],
            ]) { _ in
                seen += 1
                if seen == 2 { started.increment() }
                return seen < lines
            }
        }
    }

    @Test("a client that disconnects frees its slot at once")
    func disconnectFreesSlot() async throws {
        let server = try await ServeProcess(parallel: 1, queueLimit: 0)
        defer { Task { await server.stop() } }
        let started = Count()
        _ = try await Self.longStream(server, lines: 5, started: started).value
        // The next request finds the slot free (with no queue, a busy slot would answer 503).
        try await waitUntil("a request to find the slot free", every: .milliseconds(100)) {
            try await server.post("/v1/chat/completions", ["max_tokens": 3, "messages": [["role": "user", "content": "Hi"]]]).status == 200
        }
        // The slot is free once the abandoned generation has ended, so its passes are all
        // counted: one per token after its prompt's. Greedy, it would have run all of its 1500
        // (the story has no end before them); it stopped with the client, after under a third
        // of them. How many more than the client read depends on how soon the server saw it
        // leave, hence a bound that holds on a machine busy with other work.
        let passes = try metric("hearth_forward_passes", in: try await server.get("/metrics").text)
        #expect(passes >= 5 && passes < 500, "\(passes)")
    }

    @Test("requests beyond the slots and the queue get 503 with Retry-After")
    func queueBound() async throws {
        let server = try await ServeProcess(parallel: 1, queueLimit: 1)
        defer { Task { await server.stop() } }
        let started = Count()
        let running = Self.longStream(server, lines: 100_000, started: started)
        try await waitUntil("the first answer to start") { started.value > 0 }
        // The second waits in the queue; the third finds the queue full.
        let waiting = Task {
            try await server.post("/v1/chat/completions", ["max_tokens": 2, "messages": [["role": "user", "content": "Hi"]]]).status
        }
        try await waitUntil("the second request to wait for the slot") {
            try metric("hearth_requests_waiting", in: try await server.get("/metrics").text) == 1
        }
        let refused = try await server.post("/v1/chat/completions", ["max_tokens": 2, "messages": [["role": "user", "content": "Hi"]]])
        #expect(refused.status == 503)
        #expect(refused.headers.first(name: "Retry-After") != nil)
        #expect((try refused.json()["error"] as? [String: Any])?["code"] as? String == "server_busy")
        running.cancel()
        _ = await running.result
        // Once the slot is free, the queued request is served.
        #expect(try await waiting.value == 200)
    }
}

/// A count shared between tasks.
final class Count: Sendable {
    private let storage = Atomic<Int>(0)
    func increment() { storage.add(1, ordering: .relaxed) }
    var value: Int { storage.load(ordering: .relaxed) }
}
