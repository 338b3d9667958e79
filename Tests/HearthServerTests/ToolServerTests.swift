import Foundation
import Hearth
import HearthTestSupport
import Testing

/// Tool calling and schema-held answers over HTTP with the real Python clients: SmolLM2 (the
/// generic JSON format), the tiny random Qwen2 under Qwen 2.5's template (Hermes `<tool_call>`
/// blocks), the tiny random Qwen3.5 under its own (XML `<function=…>` calls), the tiny random
/// gpt-oss under its own (harmony) and the tiny random Gemma 4 under its own (`<|tool_call>` blocks
/// in Gemma's notation).
@Suite("Tools and schemas over HTTP", .serialized)
struct ToolServerTests {
    static func fixture() async throws -> ServeProcess {
        try await ServeProcess(parallel: 4, moreModels: { directory in
            ["qwen-tools": try ReasoningModels.tiny("qwen2-a", template: "Qwen-Qwen2.5-7B-Instruct", in: directory.url),
             "qwen35-tools": try ReasoningModels.tiny("qwen35-a", template: "Qwen3.5-4B", in: directory.url),
             "gptoss-tools": try ReasoningModels.tiny("gptoss-a", template: "openai-gpt-oss-120b", in: directory.url),
             "gemma4-tools": try ReasoningModels.tiny("gemma4-a", template: "google-gemma-4-31B-it", in: directory.url)]
        })
    }

    /// Runs python_tool_clients.py against `model` with `runs` sampled requests.
    static func clients(_ server: ServeProcess, model: String, runs: Int) async throws -> String {
        let script = TestFiles.packageRoot.appendingPathComponent("Tests/HearthServerTests/python_tool_clients.py").path
        var environment = ProcessInfo.processInfo.environment
        environment["NO_PROXY"] = "*"
        let child = try Child(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script, server.base, model, String(runs)],
                              environment: environment, directory: server.directory)
        let status = try await child.wait()
        #expect(status == 0, "\(child.outputText)\n\(child.errorText.suffix(2000))")
        return child.outputText
    }

    @Test("openai and ollama clients: a tool loop, 100 sampled runs whose calls validate, json_schema and format schemas (SmolLM2)",
          .enabled(if: PythonClients.enabled, "python3 with openai, ollama and jsonschema is missing (.ci/run installs them)"))
    func smolLM2() async throws {
        try #require(Python.canImport("openai, ollama, jsonschema"), "pip install openai ollama jsonschema (.ci/run does)")
        let server = try await Self.fixture()
        defer { Task { await server.stop() } }
        let output = try await Self.clients(server, model: "smollm2", runs: 100)
        #expect(output.contains("\"passed\""))
    }

    @Test("the same with tiny models in Qwen 2.5's format (Hermes tool_call blocks), Qwen3.5's (hybrid DeltaNet blocks, XML <function=…> calls), gpt-oss's (harmony: calls on the commentary channel, thoughts on the analysis channel) and Gemma 4's (<|tool_call> blocks in Gemma's notation)",
          .enabled(if: PythonClients.enabled, "python3 with openai, ollama and jsonschema is missing (.ci/run installs them)"),
          arguments: [("qwen-tools", 100), ("qwen35-tools", 40), ("gptoss-tools", 40), ("gemma4-tools", 40)])
    func tinyModels(model: String, runs: Int) async throws {
        try #require(Python.canImport("openai, ollama, jsonschema"), "pip install openai ollama jsonschema (.ci/run does)")
        let server = try await Self.fixture()
        defer { Task { await server.stop() } }
        let output = try await Self.clients(server, model: model, runs: runs)
        #expect(output.contains("\"passed\""))
    }

    /// The wire shapes without a client: tool_calls with JSON-text arguments and a null content,
    /// finish_reason tool_calls, tool messages accepted, and clear refusals.
    @Test func wireShapesAndRefusals() async throws {
        let server = try await Self.fixture()
        defer { Task { await server.stop() } }
        let tools: [[String: Any]] = [["type": "function", "function": [
            "name": "get_time", "description": "The local time in a city",
            "parameters": ["type": "object", "properties": ["city": ["type": "string", "maxLength": 30]], "required": ["city"]]]]]
        let answer = try await server.post("/v1/chat/completions", [
            "model": "qwen-tools", "max_tokens": 1000, "temperature": 0, "tool_choice": "required", "tools": tools,
            "messages": [["role": "user", "content": "Time in Oslo?"]],
        ]).json()
        let choice = try #require((answer["choices"] as? [[String: Any]])?.first)
        #expect(choice["finish_reason"] as? String == "tool_calls", "\(choice)")
        let message = try #require(choice["message"] as? [String: Any])
        #expect(message["content"] is NSNull)
        let call = try #require((message["tool_calls"] as? [[String: Any]])?.first)
        let function = try #require(call["function"] as? [String: Any])
        #expect(function["name"] as? String == "get_time")
        let arguments = try #require(function["arguments"] as? String)
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(arguments.utf8)) as? [String: Any])
        #expect(parsed["city"] is String)
        // A tool message needs the id of its call; a bad schema and an unknown tool_choice are refused by name.
        let orphan = try await server.post("/v1/chat/completions", [
            "model": "qwen-tools", "max_tokens": 5, "messages": [["role": "tool", "content": "14:05"]],
        ])
        #expect(orphan.status == 400 && orphan.text.contains("tool_call_id"))
        let badSchema = try await server.post("/v1/chat/completions", [
            "model": "qwen-tools", "max_tokens": 5, "tools": [["type": "function", "function": ["name": "f", "parameters": ["type": "object", "not": [:]]]]],
            "messages": [["role": "user", "content": "hi"]],
        ])
        #expect(badSchema.status == 400 && badSchema.text.contains("not"), "\(badSchema.text)")
        let unknown = try await server.post("/v1/chat/completions", [
            "model": "qwen-tools", "max_tokens": 5, "tools": tools, "tool_choice": ["type": "function", "function": ["name": "nope"]],
            "messages": [["role": "user", "content": "hi"]],
        ])
        #expect(unknown.status == 400 && unknown.text.contains("nope"))
        // /v1/completions takes llama.cpp's grammar field.
        let graded = try await server.post("/v1/completions", [
            "model": "qwen-tools", "prompt": "Grade:", "max_tokens": 8, "temperature": 1, "seed": 2, "grammar": "root ::= [A-F] (\"+\" | \"-\")?",
        ]).json()
        let text = try #require((graded["choices"] as? [[String: Any]])?.first?["text"] as? String)
        #expect(text.range(of: "^[A-F][+-]?$", options: .regularExpression) != nil, "\(text)")
        let badGrammar = try await server.post("/v1/completions", [
            "model": "qwen-tools", "prompt": "x", "max_tokens": 2, "grammar": "root ::= (",
        ])
        #expect(badGrammar.status == 400 && badGrammar.text.contains("line 1"))
    }
}
