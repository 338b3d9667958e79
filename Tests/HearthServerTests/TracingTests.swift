import Foundation
import HearthTestSupport
import Testing

/// What an OTLP receiver got: every span of every export, with its resource's attributes.
struct ReceivedSpans {
    struct Span {
        let name: String
        let traceID: String
        let spanID: String
        let parentSpanID: String
        let start: UInt64
        let end: UInt64
        let attributes: [String: String]
        let resource: [String: String]
    }

    let spans: [Span]

    init(file: URL) {
        let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
        var spans: [Span] = []
        for line in text.split(separator: "\n") {
            guard let export = try? jsonObject(String(line)) else { continue }
            for resourceSpans in export["resourceSpans"] as? [[String: Any]] ?? [] {
                let resource = Self.attributes((resourceSpans["resource"] as? [String: Any])?["attributes"])
                for scope in resourceSpans["scopeSpans"] as? [[String: Any]] ?? [] {
                    for span in scope["spans"] as? [[String: Any]] ?? [] {
                        spans.append(Span(name: span["name"] as? String ?? "", traceID: span["traceId"] as? String ?? "",
                                          spanID: span["spanId"] as? String ?? "", parentSpanID: span["parentSpanId"] as? String ?? "",
                                          start: UInt64("\(span["startTimeUnixNano"] ?? 0)") ?? 0,
                                          end: UInt64("\(span["endTimeUnixNano"] ?? 0)") ?? 0,
                                          attributes: Self.attributes(span["attributes"]), resource: resource))
                    }
                }
            }
        }
        self.spans = spans
    }

    /// OTLP's key/value list as strings: {"key": k, "value": {"intValue": "8"}} → [k: "8"].
    static func attributes(_ list: Any?) -> [String: String] {
        var found: [String: String] = [:]
        for attribute in list as? [[String: Any]] ?? [] {
            guard let key = attribute["key"] as? String, let value = (attribute["value"] as? [String: Any])?.values.first else { continue }
            found[key] = "\(value)"
        }
        return found
    }

    func children(of parent: Span) -> [Span] { spans.filter { $0.parentSpanID == parent.spanID && $0.traceID == parent.traceID } }
}

@Suite("OpenTelemetry traces over OTLP", .serialized,
       .enabled(if: Python.canImport("opentelemetry.proto") || ProcessInfo.processInfo.environment["CI"] != nil,
                "Python's opentelemetry-proto is missing: pip install opentelemetry-proto (.ci/run does)"))
struct TracingTests {
    @Test("hearth serve with OTEL_EXPORTER_OTLP_ENDPOINT sends a span per request, continuing the caller's traceparent, with load, queue wait, prompt and generation spans under it")
    func spansReachTheCollector() async throws {
        let directory = try TemporaryDirectory()
        let received = directory.file("spans.jsonl")
        let receiver = try Child(URL(fileURLWithPath: "/usr/bin/env"),
                                 ["python3", TestFiles.packageRoot.appendingPathComponent("Tests/HearthServerTests/otlp_receiver.py").path, received.path],
                                 environment: ProcessInfo.processInfo.environment.merging(["PYTHONUNBUFFERED": "1"]) { _, new in new },
                                 directory: directory)
        receiver.killWhenTestsEnd()
        defer { receiver.signal(SIGKILL) }
        var port: String?
        // Minutes: python may be slow to start on a busy machine.
        try await waitUntil("the OTLP receiver to listen") {
            try #require(receiver.isRunning, "the receiver exited: \(receiver.errorText)")
            port = receiver.outputText.split(separator: "\n").first { $0.hasPrefix("listening ") }.map { String($0.dropFirst("listening ".count)) }
            return port != nil
        }
        let collector = try #require(port, "the receiver did not start: \(receiver.errorText)")

        var command = try ServeCommand(directory: directory)
        (command.models, command.contextLength, command.replica) = (["smollm2=\(try TestFiles.model(TestFiles.smolLM2))"], 1024, "traced-1")
        command.environment = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(collector)", "OTEL_BSP_SCHEDULE_DELAY": "100"]
        let server = try await ServeProcess(command)
        let serve = server.child
        defer { serve.signal(SIGKILL) }
        let client = RemoteServer(base: server.base)

        let traceID = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let callerSpan = (0..<8).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let status = try await client.stream("/v1/chat/completions",
                                             // Greedy, and a question whose answer is longer than 8 tokens.
                                             ["model": "smollm2", "stream": true, "max_tokens": 8, "temperature": 0,
                                              "messages": [["role": "user", "content": "Write a long story about a dragon."]]],
                                             headers: ["traceparent": "00-\(traceID)-\(callerSpan)-01"]) { _ in true }
        #expect(status == 200)
        let thread = try #require(try await client.post("/v1/threads", [:]).json()["id"] as? String)
        #expect(try await client.stream("/v1/threads/\(thread)/messages", ["content": "Say hi."]) { _ in true } == 200)

        // Spans leave in batches every 100 ms; the server's own span ends with its streamed body.
        // Waited for up to minutes, as the machine may be busy.
        var spans = ReceivedSpans(file: received)
        try await waitUntil("both requests' spans to reach the receiver", every: .milliseconds(100)) {
            spans = ReceivedSpans(file: received)
            return spans.spans.filter { $0.name == "generation" }.count >= 2
                && spans.spans.contains { $0.name.hasSuffix("/messages") }
                && spans.spans.contains { $0.name == "/v1/chat/completions" }
        }
        let request = try #require(spans.spans.first { $0.traceID == traceID && $0.parentSpanID == callerSpan },
                                   "no span continues the caller's trace: \(spans.spans.map(\.name))")
        #expect(request.name == "/v1/chat/completions")
        #expect(request.resource["service.name"] == "hearth" && request.resource["service.instance.id"] == "traced-1")
        let children = Dictionary(spans.children(of: request).map { ($0.name, $0) }) { first, _ in first }
        #expect(Set(children.keys) == ["load model", "queue wait", "prompt", "generation"], "\(children.keys.sorted())")
        let (load, wait, prompt, generation) = (try #require(children["load model"]), try #require(children["queue wait"]),
                                                 try #require(children["prompt"]), try #require(children["generation"]))
        #expect(request.start <= load.start && load.end <= wait.start && wait.end <= prompt.start)
        #expect(prompt.end == generation.start && generation.end <= request.end)
        #expect(load.attributes["hearth.model"] == "smollm2")
        #expect(Int(prompt.attributes["hearth.prompt_tokens"] ?? "") ?? 0 > 5)
        #expect(generation.attributes["hearth.completion_tokens"] == "8")
        #expect(generation.attributes["hearth.finish_reason"] == "length")

        // A request without a traceparent starts a trace of its own, with the same spans.
        let threadRequest = try #require(spans.spans.first { $0.name.hasSuffix("/messages") && $0.parentSpanID.isEmpty },
                                         "\(spans.spans.map(\.name))")
        #expect(threadRequest.traceID != traceID)
        #expect(Set(spans.children(of: threadRequest).map(\.name)).isSuperset(of: ["queue wait", "prompt", "generation"]))

        serve.signal(SIGTERM)
        #expect(try await serve.wait() == 0)
    }
}
