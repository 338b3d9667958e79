import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hearth
import HearthTestSupport
import Hummingbird
import Logging
import NIOCore
import Synchronization
import Testing

@Suite("RemoteModel against hearth serve on loopback", .serialized)
struct RemoteModelTests {
    @Test("answers equal the engine's greedy ones; a chat session's second turn hits the server's cache")
    func chat() async throws {
        let server = try await ServeProcess(parallel: 1)
        defer { Task { await server.stop() } }
        let base = try #require(URL(string: server.base + "/v1"))
        #expect(try await RemoteModel.models(baseURL: base).contains("smollm2"))
        let model = RemoteModel(name: "smollm2", baseURL: base)
        let greedy = GenerationOptions(sampling: .greedy, maxTokens: 24)
        let answer = try await model.respond(to: "What is the capital of France?", options: greedy)
        #expect(answer.text == (try await greedyAnswer("What is the capital of France?", maxTokens: 24)))
        #expect((answer.statistics?.completionTokens ?? 0) > 0)
        #expect((answer.statistics?.promptTokens ?? 0) > 0)

        let chat = model.chat(options: greedy)
        let first = try await chat.respond(to: "Name a fruit.")
        let second = try await chat.respond(to: "Name another one.")
        #expect(!first.text.isEmpty && !second.text.isEmpty)
        #expect(chat.messages.map(\.role) == [.user, .assistant, .user, .assistant])
        let cached = second.statistics?.cachedPromptTokens ?? 0
        #expect(cached >= (first.statistics?.promptTokens ?? 0), "the second turn reuses the slot's cache: \(String(describing: second.statistics))")
    }

    @Test("unknown models and wrong keys are clear errors, not retried")
    func errors() async throws {
        let server = try await ServeProcess(apiKey: "sesame")
        defer { Task { await server.stop() } }
        let base = try #require(URL(string: server.base + "/v1"))
        do {
            _ = try await RemoteModel(name: "smollm2", baseURL: base, apiKey: "wrong").respond(to: "Hi")
            Issue.record("a wrong key was accepted")
        } catch let error as HearthError {
            guard case .remoteRejected(_, 401, _, _) = error else { throw error }
            #expect(error.message.contains("API key"))
        }
        do {
            _ = try await RemoteModel(name: "no-such-model", baseURL: base, apiKey: "sesame").respond(to: "Hi")
            Issue.record("an unknown model answered")
        } catch let error as HearthError {
            guard case .remoteRejected(_, 404, let message, _) = error else { throw error }
            #expect(message.contains("no-such-model"))
        }
    }

    @Test("429 and 503 are retried after Retry-After, then the answer streams")
    func retries() async throws {
        let server = try await ServeProcess()
        defer { Task { await server.stop() } }
        let front = try await FlakyFront(upstream: server.base, failures: [(429, 1), (503, nil)])
        defer { Task { await front.stop() } }
        let model = RemoteModel(name: "smollm2", baseURL: try #require(URL(string: front.base + "/v1")),
                                retry: RetryPolicy(attempts: 4, baseDelay: .milliseconds(50)))
        let answer = try await model.respond(to: "What is the capital of France?", options: GenerationOptions(sampling: .greedy, maxTokens: 24))
        #expect(answer.text == (try await greedyAnswer("What is the capital of France?", maxTokens: 24)))
        let attempts = front.attempts
        #expect(attempts.count == 3)
        #expect(attempts[1].timeIntervalSince(attempts[0]) >= 0.9, "Retry-After: 1 was honoured")
    }

    @Test("cancelling the reader stops the remote generation and frees the server's slot")
    func cancel() async throws {
        let server = try await ServeProcess(parallel: 1, queueLimit: 0)
        defer { Task { await server.stop() } }
        let model = RemoteModel(name: "smollm2", baseURL: try #require(URL(string: server.base + "/v1")))
        let seen = Count()
        let reader = Task {
            var options = GenerationOptions.greedy
            options.maxTokens = 1500
            for try await chunk in model.stream("Write a very long story about a dragon.", options: options) where !chunk.text.isEmpty {
                seen.increment()
            }
        }
        try await waitUntil("three chunks of the story") { seen.value >= 3 }
        reader.cancel()
        _ = await reader.result
        // With no queue, a slot still busy would answer 503.
        try await waitUntil("a request to find the slot free", every: .milliseconds(100)) {
            try await server.post("/v1/chat/completions", ["max_tokens": 2, "messages": [["role": "user", "content": "Hi"]]]).status == 200
        }
    }
}

/// A front for a server that refuses the first requests (status, Retry-After) and then passes
/// requests through, recording when each arrived.
final class FlakyFront: Sendable {
    private let state: Mutex<(failures: [(Int, Int?)], attempts: [Date], port: Int)>
    private let task: Mutex<Task<Void, any Error>?> = Mutex(nil)
    let upstream: String

    init(upstream: String, failures: [(Int, Int?)]) async throws {
        self.upstream = upstream
        state = Mutex((failures, [], 0))
        let router = Router()
        router.post("**") { request, _ in try await self.handle(request) }
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "flaky-front")
        logger.logLevel = .critical
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                              onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) }, logger: logger)
        task.withLock { $0 = Task { try await app.runService() } }
        for await port in ports {
            state.withLock { $0.port = port }
            break
        }
    }

    var base: String { "http://127.0.0.1:\(state.withLock { $0.port })" }
    var attempts: [Date] { state.withLock { $0.attempts } }

    func stop() async {
        let running = task.withLock { $0 }
        running?.cancel()
        _ = await running?.result
    }

    private func handle(_ request: Request) async throws -> Response {
        let failure = state.withLock { state -> (Int, Int?)? in
            state.attempts.append(Date())
            return state.failures.isEmpty ? nil : state.failures.removeFirst()
        }
        if let (status, retryAfter) = failure {
            var headers = HTTPFields()
            if let retryAfter { headers[.retryAfter] = String(retryAfter) }
            return Response(status: .init(code: status), headers: headers,
                            body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"error": {"message": "try later"}}"#)))
        }
        var forwarded = HTTPClientRequest(url: upstream + request.uri.path)
        forwarded.method = .POST
        forwarded.headers.add(name: "Content-Type", value: "application/json")
        var body = request.body
        forwarded.body = .bytes(try await body.collect(upTo: 1 << 20))
        let answer = try await RemoteServer.http.execute(forwarded, timeout: .seconds(900))
        var headers = HTTPFields()
        headers[.contentType] = answer.headers.first(name: "Content-Type") ?? "application/json"
        let bytes = try await answer.body.collect(upTo: 16 << 20)
        return Response(status: .init(code: Int(answer.status.code)), headers: headers, body: ResponseBody(byteBuffer: bytes))
    }
}
