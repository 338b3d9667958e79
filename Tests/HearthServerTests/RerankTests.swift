import Foundation
import Hearth
import HearthTestSupport
import Testing

/// `POST /v1/rerank` (Jina's and llama.cpp's shape) and `POST /api/rerank` over loopback, on the
/// tiny cross-encoders of Tests/Fixtures/rerank, registered as "tiny-reranker" and "tiny-nli".
@Suite("Rerank routes", .serialized)
struct RerankTests {
    private static let query = "How many people live in Berlin?"

    private func server() async throws -> ServeProcess {
        try await ServeProcess { _ in
            ["tiny-reranker": try CrossEncoderSpec.tiny.folder().url, "tiny-nli": try CrossEncoderSpec.tinyNLI.folder().url]
        }
    }

    /// The fixture's pairs with `query`: CrossEncoder's scores for its documents.
    private func expected() throws -> [CrossEncoderFixture.Pair] {
        try CrossEncoderFixture.named(CrossEncoderSpec.tiny.name).pairs.filter { $0.query == Self.query }
    }

    private func check(_ answer: HTTPAnswer, _ pairs: [CrossEncoderFixture.Pair], count: Int, documents: Bool) throws {
        #expect(answer.status == 200, "\(answer.text)")
        let body = try answer.json()
        #expect(body["model"] as? String == "tiny-reranker")
        let results = try #require(body["results"] as? [[String: Any]])
        #expect(results.count == count)
        let scores = results.compactMap { ($0["relevance_score"] as? NSNumber)?.floatValue }
        #expect(scores.count == count && scores == scores.sorted(by: >))
        let best = pairs.indices.max { pairs[$0].scores[0] < pairs[$1].scores[0] }
        #expect(results.first?["index"] as? Int == best)
        for result in results {
            let index = try #require(result["index"] as? Int)
            #expect(abs(((result["relevance_score"] as? NSNumber)?.floatValue ?? .nan) - pairs[index].scores[0]) <= 1e-4)
            if documents {
                #expect((result["document"] as? [String: Any])?["text"] as? String == pairs[index].document)
            } else {
                #expect(result["document"] == nil)
            }
        }
        let usage = try #require(body["usage"] as? [String: Any])
        #expect(usage["total_tokens"] as? Int == pairs.reduce(0) { $0 + $1.ids.count })
    }

    @Test("/v1/rerank and /api/rerank rank the documents with CrossEncoder's scores; top_n and return_documents")
    func ranks() async throws {
        let server = try await server()
        defer { Task { await server.stop() } }
        let pairs = try expected()
        let documents = pairs.map(\.document)
        let all = try await server.post("/v1/rerank", ["model": "tiny-reranker", "query": Self.query, "documents": documents])
        try check(all, pairs, count: 3, documents: true)
        let top = try await server.post("/v1/rerank", ["model": "tiny-reranker", "query": Self.query, "documents": documents,
                                                       "top_n": 2, "return_documents": false])
        try check(top, pairs, count: 2, documents: false)
        // Objects with a text field, as Jina's API takes them; a top_n past the end is all of them.
        let objects = try await server.post("/v1/rerank", ["model": "tiny-reranker", "query": Self.query,
                                                           "documents": documents.map { ["text": $0] }, "top_n": 10])
        try check(objects, pairs, count: 3, documents: true)
        let ollama = try await server.post("/api/rerank", ["model": "tiny-reranker", "query": Self.query, "documents": documents,
                                                           "top_n": 1, "keep_alive": "1m"])
        try check(ollama, pairs, count: 1, documents: true)
        let running = try await server.get("/api/ps").json()["models"] as? [[String: Any]]
        let entry = running?.first { $0["name"] as? String == "tiny-reranker" }
        #expect((entry?["details"] as? [String: Any])?["format"] as? String == "safetensors")
    }

    @Test("bad requests are 400s that say what to send, in each API's error shape")
    func badRequests() async throws {
        let server = try await server()
        defer { Task { await server.stop() } }
        func openAIMessage(_ body: [String: Any], status: Int = 400) async throws -> String {
            let answer = try await server.post("/v1/rerank", body)
            #expect(answer.status == status, "\(body): \(answer.text)")
            return (try answer.json()["error"] as? [String: Any])?["message"] as? String ?? ""
        }
        let documents = ["one", "two"]
        #expect(try await openAIMessage(["model": "tiny-reranker", "query": "q", "documents": [String]()]).contains("documents must not be empty"))
        #expect(try await openAIMessage(["model": "tiny-reranker", "documents": documents]).contains("'query' is required"))
        #expect(try await openAIMessage(["model": "tiny-reranker", "query": "  ", "documents": documents]).contains("query must not be empty"))
        #expect(try await openAIMessage(["model": "tiny-reranker", "query": "q", "documents": ["one", 2]])
            .contains("documents[1] must be a string or an object with a \"text\" string"))
        #expect(try await openAIMessage(["model": "tiny-reranker", "query": "q", "documents": [["title": "no text"]]])
            .contains("documents[0] must be a string"))
        #expect(try await openAIMessage(["model": "tiny-reranker", "query": "q", "documents": "one"]).contains("'documents'"))
        #expect(try await openAIMessage(["model": "tiny-reranker", "query": "q", "documents": documents, "top_n": 0]).contains("top_n must be at least 1"))
        #expect(try await openAIMessage(["model": "all-minilm", "query": "q", "documents": documents]).contains("embedding model, not a reranker"))
        #expect(try await openAIMessage(["model": "smollm2", "query": "q", "documents": documents]).contains("language model, not a reranker"))
        #expect(try await openAIMessage(["model": "tiny-nli", "query": "q", "documents": documents]).contains("3 labels"))
        #expect(try await openAIMessage(["model": "no-such-model", "query": "q", "documents": documents], status: 404).contains("no-such-model"))

        let ollama = try await server.post("/api/rerank", ["model": "tiny-reranker", "query": "q", "documents": [String]()])
        #expect(ollama.status == 400)
        #expect((try ollama.json()["error"] as? String)?.contains("documents must not be empty") == true, "\(ollama.text)")
        let empty = try await server.send(.POST, "/v1/rerank", body: "")
        #expect(empty.status == 400)
        // The reranker is not a chat or embedding model either.
        let chat = try await server.post("/v1/chat/completions", ["model": "tiny-reranker", "messages": [["role": "user", "content": "hi"]]])
        #expect(chat.status == 400 && chat.text.contains("reranker"), "\(chat.text)")
        let embed = try await server.post("/v1/embeddings", ["model": "tiny-reranker", "input": "hi"])
        #expect(embed.status == 400 && embed.text.contains("reranker"), "\(embed.text)")
    }

    @Test("a Python client with nothing but urllib gets the ranking")
    func pythonClient() async throws {
        let server = try await server()
        defer { Task { await server.stop() } }
        let pairs = try expected()
        let script = server.directory.file("rerank.py")
        try """
            import json, sys, urllib.request
            base, query, documents = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
            body = json.dumps({"model": "tiny-reranker", "query": query, "documents": documents, "top_n": 2}).encode()
            request = urllib.request.Request(base + "/v1/rerank", data=body, headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=600) as response:
                answer = json.load(response)
            print(json.dumps([[r["index"], r["relevance_score"], r["document"]["text"]] for r in answer["results"]]))
            """.write(to: script, atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment
        environment["NO_PROXY"] = "*"
        let documents = String(decoding: try JSONSerialization.data(withJSONObject: pairs.map(\.document)), as: UTF8.self)
        let child = try Child(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path, server.base, Self.query, documents],
                              environment: environment, directory: server.directory)
        #expect(try await child.wait() == 0, "\(child.errorText)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(child.outputText.utf8)) as? [[Any]])
        let order = pairs.indices.sorted { pairs[$0].scores[0] > pairs[$1].scores[0] }
        #expect(rows.compactMap { $0.first as? Int } == Array(order.prefix(2)))
        for row in rows {
            let index = try #require(row[0] as? Int)
            #expect(abs(((row[1] as? NSNumber)?.floatValue ?? .nan) - pairs[index].scores[0]) <= 1e-4)
            #expect(row[2] as? String == pairs[index].document)
        }
    }
}
