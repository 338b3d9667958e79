import AsyncHTTPClient
import Foundation
import Hearth
import HearthTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// A server the tests talk to over HTTP (`ServeProcess`, `hearth serve` in a process of its own).
protocol TestServer: Sendable {
    var base: String { get }
    var directory: TemporaryDirectory { get }
    func stop() async
    func leftoverUploads() throws -> [String]
}

extension ServeProcess: TestServer {}

extension TestServer {
    var client: RemoteServer { RemoteServer(base: base) }

    func send(_ method: HTTPMethod, _ path: String, body: String? = nil, headers: [String: String] = [:]) async throws -> HTTPAnswer {
        try await client.send(method, path, body: body, headers: headers)
    }

    func post(_ path: String, _ json: [String: Any], headers: [String: String] = [:]) async throws -> HTTPAnswer {
        try await client.post(path, json, headers: headers)
    }

    func get(_ path: String, headers: [String: String] = [:]) async throws -> HTTPAnswer {
        try await client.get(path, headers: headers)
    }

    func post(_ path: String, form: MultipartForm, chunked: Bool = false) async throws -> HTTPAnswer {
        try await client.post(path, form: form, chunked: chunked)
    }

    @discardableResult
    func stream(_ path: String, _ json: [String: Any], headers: [String: String] = [:],
                onLine: (String) throws -> Bool) async throws -> Int {
        try await client.stream(path, json, headers: headers, onLine: onLine)
    }
}

/// An HTTP client for a server at `base`.
struct RemoteServer {
    let base: String

    /// The client every test request goes through. Not `HTTPClient.shared`, which gives up
    /// after 90 s without a byte: on a 2-core machine busy with the whole suite a server may
    /// be silent longer than that and still answer. A hung server is still caught, by each
    /// request's deadline.
    static let http: HTTPClient = {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        configuration.timeout = .init(connect: .seconds(120), read: .seconds(900))
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// Sends a request and reads the whole answer.
    func send(_ method: HTTPMethod, _ path: String, body: String? = nil, headers: [String: String] = [:]) async throws -> HTTPAnswer {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await Self.http.execute(request, timeout: .seconds(900))
        let bytes = try await response.body.collect(upTo: 64 << 20)
        return HTTPAnswer(status: Int(response.status.code), headers: response.headers, body: Data(bytes.readableBytesView))
    }

    func post(_ path: String, _ json: [String: Any], headers: [String: String] = [:]) async throws -> HTTPAnswer {
        try await send(.POST, path, body: String(decoding: try JSONSerialization.data(withJSONObject: json), as: UTF8.self), headers: headers)
    }

    /// Posts a multipart/form-data body; `chunked` sends it without a Content-Length.
    func post(_ path: String, form: MultipartForm, chunked: Bool = false) async throws -> HTTPAnswer {
        try await post(path, bytes: form.body, contentType: form.contentType, chunked: chunked)
    }

    /// Posts `bytes` as they are; `chunked` sends them in pieces without a Content-Length.
    func post(_ path: String, bytes: Data, contentType: String, chunked: Bool = false) async throws -> HTTPAnswer {
        var request = HTTPClientRequest(url: base + path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: contentType)
        if chunked {
            // Pieces of 1 MiB, as a client streaming a recording would send them.
            let (pieces, continuation) = AsyncStream<ByteBuffer>.makeStream()
            for start in stride(from: 0, to: bytes.count, by: 1 << 20) {
                continuation.yield(ByteBuffer(data: bytes[start..<min(start + (1 << 20), bytes.count)]))
            }
            continuation.finish()
            request.body = .stream(pieces, length: .unknown)
        } else {
            request.body = .bytes(ByteBuffer(data: bytes))
        }
        let response = try await Self.http.execute(request, timeout: .seconds(900))
        let body = try await response.body.collect(upTo: 64 << 20)
        return HTTPAnswer(status: Int(response.status.code), headers: response.headers, body: Data(body.readableBytesView))
    }

    func get(_ path: String, headers: [String: String] = [:]) async throws -> HTTPAnswer {
        try await send(.GET, path, headers: headers)
    }

    /// Posts `json` and hands each line of the streamed answer (SSE `data:` payloads less their
    /// "data: ", or NDJSON lines; a last line without its newline too) to `onLine` until it
    /// returns false; `onHead` gets the answer's headers first. Returns the status.
    @discardableResult
    func stream(_ path: String, _ json: [String: Any], headers: [String: String] = [:],
                onHead: (HTTPHeaders) -> Void = { _ in }, onLine: (String) throws -> Bool) async throws -> Int {
        var request = HTTPClientRequest(url: base + path)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(data: try JSONSerialization.data(withJSONObject: json)))
        let response = try await Self.http.execute(request, timeout: .seconds(900))
        onHead(response.headers)
        let status = Int(response.status.code)
        func hand(_ bytes: Data) throws -> Bool {
            var line = String(decoding: bytes, as: UTF8.self)
            if line.hasPrefix("data: ") { line.removeFirst(6) }
            return try line.isEmpty || onLine(line)
        }
        var pending = Data()
        for try await buffer in response.body {
            pending.append(contentsOf: buffer.readableBytesView)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = pending[pending.startIndex..<newline]
                pending.removeSubrange(pending.startIndex...newline)
                if try !hand(Data(line)) { return status }
            }
        }
        _ = try hand(pending)
        return status
    }
}

/// A multipart/form-data body, written here by hand rather than with the library the server
/// parses it with, so that the two cannot share a mistake.
struct MultipartForm {
    let boundary = "hearth-test-" + UUID().uuidString
    private var parts = Data()

    var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// The parts and the closing boundary.
    var body: Data { parts + Data("--\(boundary)--\r\n".utf8) }

    /// The body without its closing boundary and the end of its last part: an upload cut short.
    var truncatedBody: Data { parts.dropLast(10) }

    mutating func field(_ name: String, _ value: String) {
        parts += Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8)
    }

    mutating func file(_ data: Data, filename: String, type: String = "audio/wav", name: String = "file") {
        parts += Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"; filename=\"\(filename)\"\r\nContent-Type: \(type)\r\n\r\n".utf8)
        parts += data
        parts += Data("\r\n".utf8)
    }

    /// A form with `file` and `fields` in this order.
    static func audio(_ data: Data, filename: String, _ fields: [(String, String)] = []) -> MultipartForm {
        var form = MultipartForm()
        form.file(data, filename: filename)
        for (name, value) in fields { form.field(name, value) }
        return form
    }
}

/// A whole HTTP answer.
struct HTTPAnswer {
    var status: Int
    var headers: HTTPHeaders
    var body: Data

    var text: String { String(decoding: body, as: UTF8.self) }

    func json() throws -> [String: Any] {
        let value = try JSONSerialization.jsonObject(with: body)
        return try #require(value as? [String: Any], "not a JSON object: \(text)")
    }
}

/// Parses one JSON line.
func jsonObject(_ line: String) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
}

/// SmolLM2 loaded in the test process, to compare the server's answers with the engine's own.
let referenceModel = Result { try LocalModel(path: TestFiles.model(TestFiles.smolLM2), threads: 2, contextLength: 2048) }

/// The engine's own greedy answer to one user message.
func greedyAnswer(_ prompt: String, system: String? = nil, maxTokens: Int) async throws -> String {
    let model = try referenceModel.get()
    return try await model.respond(to: prompt, system: system, options: GenerationOptions(sampling: .greedy, maxTokens: maxTokens)).text
}

/// A tiny random llama model's GGUF bytes, to serve from the Hub emulator.
func tinyModelBytes() throws -> Data {
    var model = TinyLlama()
    (model.embedding, model.layers, model.heads, model.kvHeads, model.feedForward) = (32, 1, 2, 1, 64)
    (model.vocabulary, model.contextLength) = (8, 4096)
    return try model.data()
}

/// The value of the series `name` in Prometheus text `metrics` (its first, whatever its labels).
func metric(_ name: String, in metrics: String) throws -> Double {
    let line = try #require(metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") || $0.hasPrefix(name + "{") },
                            "\(name) missing from /metrics")
    return try #require(Double(line.split(separator: " ").last ?? ""), "\(line)")
}
