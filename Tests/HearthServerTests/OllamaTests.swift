import Foundation
import Hearth
import HearthTestSupport
import HubEmulator
import Testing

@Suite("Ollama API on loopback with the real SmolLM2", .serialized)
struct OllamaTests {
    @Test("chat streams NDJSON lines that add up to the greedy answer, then a closing line with counts")
    func chat() async throws {
        let server = try await ServeProcess()
        defer { Task { await server.stop() } }
        let expected = try await greedyAnswer("Name a fruit.", maxTokens: 16)
        var content = ""
        var closing: [String: Any]?
        let status = try await server.stream("/api/chat", [
            "model": "smollm2:latest", "messages": [["role": "user", "content": "Name a fruit."]],
            "options": ["temperature": 0, "num_predict": 16],
        ]) { line in
            let object = try jsonObject(line)
            if object["done"] as? Bool == true {
                closing = object
            } else {
                content += (object["message"] as? [String: Any])?["content"] as? String ?? ""
            }
            return true
        }
        #expect(status == 200)
        #expect(content == expected)
        let last = try #require(closing)
        #expect((last["eval_count"] as? Int ?? 0) > 0)
        #expect((last["prompt_eval_count"] as? Int ?? 0) > 0)
        #expect((last["total_duration"] as? Int ?? 0) > 0)
        #expect(["stop", "length"].contains(last["done_reason"] as? String ?? ""))
    }

    @Test("generate without streaming answers once; raw continues the text as it is")
    func generate() async throws {
        let server = try await ServeProcess()
        defer { Task { await server.stop() } }
        let expected = try await greedyAnswer("Name a color.", system: "Answer in one word.", maxTokens: 8)
        let answer = try await server.post("/api/generate", ["model": "smollm2", "prompt": "Name a color.", "system": "Answer in one word.",
                                                            "stream": false, "options": ["temperature": 0, "num_predict": 8]])
        #expect(answer.status == 200, "\(answer.text)")
        #expect(try answer.json()["response"] as? String == expected)
        let model = try referenceModel.get()
        let rawExpected = try await model.complete("Once upon a time", options: GenerationOptions(sampling: .greedy, maxTokens: 8)).collect().text
        let raw = try await server.post("/api/generate", ["model": "smollm2", "prompt": "Once upon a time", "raw": true, "stream": false,
                                                         "options": ["temperature": 0, "num_predict": 8]])
        #expect(try raw.json()["response"] as? String == rawExpected)
    }

    @Test("tags, show, ps, embed, and keep_alive 0 unloading")
    func modelRoutes() async throws {
        let server = try await ServeProcess()
        defer { Task { await server.stop() } }
        let tags = try await server.get("/api/tags").json()
        let names = (tags["models"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(names.contains("smollm2") && names.contains("all-minilm"))
        let smol = try #require((tags["models"] as? [[String: Any]])?.first { $0["name"] as? String == "smollm2" })
        #expect((smol["details"] as? [String: Any])?["family"] as? String == "llama")

        let show = try await server.post("/api/show", ["model": "smollm2"])
        #expect(show.status == 200)
        let shown = try show.json()
        #expect((shown["template"] as? String ?? "").contains("im_start"))
        #expect((shown["model_info"] as? [String: Any])?["general.architecture"] as? String == "llama")

        #expect(try await server.post("/api/generate", ["model": "smollm2"]).status == 200)
        var running = try await server.get("/api/ps").json()["models"] as? [[String: Any]] ?? []
        #expect(running.contains { $0["name"] as? String == "smollm2" })
        let unload = try await server.post("/api/generate", ["model": "smollm2", "keep_alive": 0])
        #expect(try unload.json()["done_reason"] as? String == "unload")
        running = try await server.get("/api/ps").json()["models"] as? [[String: Any]] ?? []
        #expect(!running.contains { $0["name"] as? String == "smollm2" })

        let embed = try await server.post("/api/embed", ["model": "all-minilm", "input": ["one", "two", "three"]])
        #expect(embed.status == 200, "\(embed.text)")
        #expect((try embed.json()["embeddings"] as? [[Double]])?.map(\.count) == [384, 384, 384])
    }

    @Test("a model idle past its keep-alive is unloaded")
    func keepAliveExpiry() async throws {
        let server = try await ServeProcess()
        defer { Task { await server.stop() } }
        // Long enough to see it loaded on a busy machine, short enough to see it go.
        let answer = try await server.post("/api/generate", ["model": "smollm2", "prompt": "Hi", "stream": false, "keep_alive": "20s",
                                                            "options": ["num_predict": 2]])
        #expect(answer.status == 200)
        #expect((try await server.get("/api/ps").json()["models"] as? [[String: Any]])?.count == 1)
        try await waitUntil("smollm2 to be unloaded once idle past its keep-alive", every: .milliseconds(100)) {
            (try await server.get("/api/ps").json()["models"] as? [[String: Any]])?.isEmpty == true
        }
    }

    @Test("pull streams progress from the Hub into the cache; tags lists it; delete removes it")
    func pullAndDelete() async throws {
        let bytes = try tinyModelBytes()
        let repo = HubEmulator.Repo("test-org/tiny-GGUF", files: [.init("tiny-Q8_0.gguf", bytes)], tags: ["gguf"])
        let emulator = try HubEmulator(repos: [repo])
        try await emulator.start()
        defer { Task { await emulator.stop() } }
        let server = try await ServeProcess(hubEndpoint: emulator.endpoint)
        defer { Task { await server.stop() } }
        var statuses: [String] = []
        var completed: [Int] = []
        let status = try await server.stream("/api/pull", ["model": "test-org/tiny-GGUF"]) { line in
            let object = try jsonObject(line)
            #expect(object["error"] == nil, "\(object)")
            if let text = object["status"] as? String { statuses.append(text) }
            if let done = object["completed"] as? Int { completed.append(done) }
            return true
        }
        #expect(status == 200)
        #expect(statuses.first == "pulling manifest")
        #expect(statuses.last == "success")
        #expect(statuses.contains { $0.hasPrefix("pulling tiny-Q8_0.gguf") })
        #expect(completed.last == bytes.count)
        let names = (try await server.get("/api/tags").json()["models"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(names.contains("test-org/tiny-GGUF"))
        let shown = try await server.post("/api/show", ["model": "test-org/tiny-GGUF"])
        #expect(shown.status == 200, "\(shown.text)")
        #expect((try shown.json()["details"] as? [String: Any])?["family"] as? String == "llama")

        #expect(try await server.send(.DELETE, "/api/delete", body: #"{"model": "test-org/tiny-GGUF"}"#).status == 200)
        let after = (try await server.get("/api/tags").json()["models"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(!after.contains("test-org/tiny-GGUF"))
        let missing = try await server.send(.DELETE, "/api/delete", body: #"{"model": "test-org/tiny-GGUF"}"#)
        #expect(missing.status == 404)
        #expect(try missing.json()["error"] is String)
    }
}
