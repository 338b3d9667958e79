import Foundation
import Hearth
import HearthTestSupport
import Testing

@Suite("JSON mode through the OpenAI and Ollama APIs with the real SmolLM2", .serialized)
struct JSONModeServerTests {
    static let question = "Give me a JSON object with the name and age of a fictional person."

    private func parsesAsObject(_ text: String) -> Bool {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) is [String: Any]
    }

    @Test("OpenAI response_format json_object: the content is one JSON object, finish reason stop")
    func openAI() async throws {
        let server = try await ServeProcess()
        defer { Task { await server.stop() } }
        let answer = try await server.post("/v1/chat/completions", [
            "model": "smollm2", "temperature": 0, "max_tokens": 200, "response_format": ["type": "json_object"],
            "messages": [["role": "user", "content": Self.question]],
        ])
        #expect(answer.status == 200, "\(answer.text)")
        let choice = try #require((try answer.json()["choices"] as? [[String: Any]])?.first)
        let content = try #require((choice["message"] as? [String: Any])?["content"] as? String)
        #expect(parsesAsObject(content), "\(content)")
        #expect(choice["finish_reason"] as? String == "stop")
    }

    @Test("Ollama format json: the streamed message adds up to one JSON object")
    func ollama() async throws {
        let server = try await ServeProcess()
        defer { Task { await server.stop() } }
        var content = ""
        var reason: String?
        let status = try await server.stream("/api/chat", [
            "model": "smollm2", "format": "json", "messages": [["role": "user", "content": "Hi!"]],
            "options": ["temperature": 0, "num_predict": 200],
        ]) { line in
            let object = try jsonObject(line)
            if object["done"] as? Bool == true {
                reason = object["done_reason"] as? String
            } else {
                content += (object["message"] as? [String: Any])?["content"] as? String ?? ""
            }
            return true
        }
        #expect(status == 200)
        #expect(parsesAsObject(content), "\(content)")
        #expect(reason == "stop")
    }

    @Test("a JSON schema in Ollama's format holds the answer; one Hearth cannot enforce is refused by name, not ignored")
    func schemaFormat() async throws {
        let server = try await ServeProcess()
        defer { Task { await server.stop() } }
        let answer = try await server.post("/api/chat", [
            "model": "smollm2", "stream": false, "messages": [["role": "user", "content": "Name a cat."]],
            "format": ["type": "object", "properties": ["name": ["type": "string", "maxLength": 16]], "required": ["name"],
                       "additionalProperties": false],
            "options": ["num_predict": 40],
        ])
        #expect(answer.status == 200)
        let content = try #require((try answer.json()["message"] as? [String: Any])?["content"] as? String)
        let object = try JSONSerialization.jsonObject(with: Data(content.utf8)) as? [String: Any]
        #expect(object?.keys.sorted() == ["name"], "\(content)")
        #expect((object?["name"] as? String)?.count ?? 99 <= 16, "\(content)")

        let refused = try await server.post("/api/chat", [
            "model": "smollm2", "stream": false, "messages": [["role": "user", "content": "Hi!"]],
            "format": ["type": "object", "not": ["required": ["name"]]],
        ])
        #expect(refused.status == 400)
        let error = try refused.json()["error"] as? String ?? ""
        #expect(error.contains("\"not\""), "\(error)")
    }
}
