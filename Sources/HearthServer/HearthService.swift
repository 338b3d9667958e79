import Dispatch
import Foundation
import HTTPTypes
import Hearth
import HearthStore
import HearthStorePostgres
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// How `hearth serve` runs.
public struct ServerConfiguration: Sendable {
    /// Address to listen on; loopback unless asked otherwise.
    public var host = "127.0.0.1"
    /// Port to listen on; 0 picks a free one.
    public var port = 11435
    /// When set, every route but /health and the web UI's files needs `Authorization: Bearer KEY`.
    public var apiKey: String?
    /// Requests one model serves at a time.
    public var parallel = 4
    /// Requests that may wait for a slot before the server answers 503.
    public var queueLimit = 32
    /// Largest request body accepted.
    public var maxBodyBytes = 8 << 20
    /// Models served under a name: `name → file or folder`.
    public var models: [String: URL] = [:]
    /// The model for requests that name none.
    public var defaultModel: String?
    /// The Whisper model behind /v1/audio (a faster-whisper or Hugging Face folder, or a
    /// whisper.cpp file) and the name requests and
    /// /v1/models use for it; a request's `whisper-1` means it too. nil: the audio routes
    /// answer 400 with how to start the server with one.
    public var speechModel: (name: String, url: URL)?
    /// How the speech model holds its matrices (`.q8_0`: less memory, close to the float results).
    public var speechWeights = WhisperWeights.float
    /// Largest audio file /v1/audio accepts: 25 MiB, as OpenAI's API.
    public var maxAudioBytes = 25 << 20
    /// Where an uploaded audio file waits while it is transcribed; it is removed when its
    /// request ends, whatever the outcome.
    public var uploadDirectory = FileManager.default.temporaryDirectory
    /// How long a model stays loaded after its last request.
    public var keepAliveSeconds: Double? = 300
    /// The chat threads database: a SQLite file, or a PostgreSQL database that several servers
    /// may share.
    public var database: ChatDatabase
    /// This server's name among replicas behind one load balancer: the `replica` label of its
    /// metrics and the `X-Hearth-Replica` header of its answers. Default: the host's name.
    public var replica = ProcessInfo.processInfo.hostName
    /// How long a drain (SIGTERM, or `drain()`) waits for generations and transcriptions in
    /// progress before it stops them. Meanwhile /health answers 503 "draining" and new work is
    /// turned away with 503, so that a load balancer sends it to another replica.
    public var drainSeconds: Double = 30

    /// A configuration with the defaults above and the chat threads in `database` (default:
    /// the SQLite file at `SQLiteChatStore.defaultPath()`).
    public init(database: ChatDatabase = .sqlite(path: SQLiteChatStore.defaultPath())) {
        self.database = database
    }
}

/// The server's shared parts, which every route uses.
final class HearthService: Sendable {
    static let version = "0.1.0"

    let configuration: ServerConfiguration
    let hearth: Hearth
    let models: ModelManager
    let speech: SpeechModelManager
    let store: any ChatStore
    let metrics: ServerMetrics
    /// Set once the server drains: new work is turned away.
    let draining = Atomic<Bool>(false)
    /// Requests being answered now (their bodies included), but /health and /metrics.
    let requestsInProgress = Atomic<Int>(0)

    init(configuration: ServerConfiguration, hearth: Hearth, logger: Logger) async throws {
        self.configuration = configuration
        self.hearth = hearth
        metrics = ServerMetrics(replica: configuration.replica)
        store = try await Self.openStore(configuration.database, logger: logger)
        models = ModelManager(hearth: hearth, registered: configuration.models, defaultModel: configuration.defaultModel,
                              parallel: configuration.parallel, queueLimit: configuration.queueLimit,
                              defaultKeepAlive: configuration.keepAliveSeconds.map { .seconds($0) } ?? .forever)
        speech = SpeechModelManager(configured: configuration.speechModel, threads: hearth.configuration.threads,
                                    weights: configuration.speechWeights)
    }

    /// The one place that knows which engines there are; the routes see only `ChatStore`.
    static func openStore(_ database: ChatDatabase, logger: Logger) async throws -> any ChatStore {
        switch database {
        case .sqlite(let path): return try SQLiteChatStore(path: path)
        case .postgres(let url): return try await PostgresChatStore(url: url, logger: logger)
        }
    }

    func router() -> Router<BasicRequestContext> {
        let router = Router()
        // A span per request, continuing a caller's trace (traceparent); the generation's spans
        // go under it. Nothing is recorded unless a tracer is bootstrapped (hearth serve does
        // when OTEL_EXPORTER_OTLP_ENDPOINT is set).
        router.add(middleware: TracingMiddleware())
        router.add(middleware: ErrorMiddleware(metrics: metrics, replica: configuration.replica))
        router.add(middleware: DrainMiddleware(service: self))
        router.add(middleware: APIKeyMiddleware(key: configuration.apiKey))
        router.get("health") { _, _ in
            if self.draining.load(ordering: .relaxed) {
                return try JSONBody.response(["status": "draining", "replica": self.configuration.replica], status: .serviceUnavailable)
            }
            return try JSONBody.response(["status": "ok", "replica": self.configuration.replica])
        }
        router.get("metrics") { _, _ in
            await self.updateGauges()
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: self.metrics.text())))
        }
        // Ollama clients probe the root.
        router.head("/") { _, _ in Response(status: .ok) }
        addOpenAIRoutes(to: router)
        addAudioRoutes(to: router)
        addOllamaRoutes(to: router)
        addRerankRoutes(to: router)
        addThreadRoutes(to: router)
        addWebRoutes(to: router)
        return router
    }

    private func updateGauges() async {
        let running = await models.running()
        var busy = 0
        var waiting = 0
        for (model, _) in running {
            if case .language(let language, let slots) = model.kind {
                metrics.passes(model: model.name, language.passes)
                busy += await slots.busyCount
                waiting += await slots.waitingCount
            }
        }
        metrics.gauges(loaded: running.count, busy: busy, waiting: waiting)
    }

    /// Vectors of `texts` from the embedding model called `name`.
    func embed(model name: String?, texts: [String], keepAlive: KeepAlive?) async throws
        -> (model: String, vectors: [[Float]], dimensions: Int, tokens: Int, loadSeconds: Double) {
        let clock = ContinuousClock()
        let started = clock.now
        let loaded = try await models.acquire(try await models.canonicalName(name))
        let loadSeconds = (clock.now - started) / .seconds(1)
        do {
            guard case .embedding(let embedder) = loaded.kind else {
                let what = if case .reranker = loaded.kind { "a reranker (/v1/rerank, /api/rerank)" } else { "a language model" }
                throw ServerError.badRequest("'\(loaded.name)' is \(what); name an embedding model such as all-MiniLM-L6-v2.",
                                             param: "model")
            }
            let vectors = try await embedder.embed(texts)
            let tokens = texts.reduce(0) { $0 + embedder.model.tokenizer.encode($1).count }
            await models.release(loaded, keepAlive: keepAlive)
            return (loaded.name, vectors, embedder.dimensions, tokens, loadSeconds)
        } catch {
            await models.release(loaded, keepAlive: keepAlive)
            throw error
        }
    }

    /// Unloads models idle past their keep-alive, once a second, until cancelled.
    func sweepIdleModels() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            await models.sweep()
        }
    }
}

/// Answers errors in the caller's dialect (OpenAI's schema under /v1, Ollama's under /api)
/// and counts every request.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let metrics: ServerMetrics
    let replica: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let clock = ContinuousClock()
        let started = clock.now
        let response: Response
        do {
            response = try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            response = Self.response(ServerError.notFound("There is no route \(request.method) \(request.uri.path)."), path: request.uri.path)
        } catch let error as HTTPError where error.status == .methodNotAllowed {
            response = Self.response(ServerError(status: .methodNotAllowed, message: "\(request.uri.path) does not take \(request.method).",
                                                 type: "invalid_request_error"), path: request.uri.path)
        } catch {
            response = Self.response(ServerError.from(error), path: request.uri.path)
        }
        metrics.request(route: context.endpointPath ?? "unmatched", method: request.method.rawValue, status: response.status.code,
                        seconds: (clock.now - started) / .seconds(1))
        var named = response
        named.headers[Self.replicaHeader] = replica
        return named
    }

    static let replicaHeader = HTTPField.Name("X-Hearth-Replica")!

    static func response(_ error: ServerError, path: String) -> Response {
        var headers = HTTPFields()
        if let retryAfter = error.retryAfter { headers[.retryAfter] = String(retryAfter) }
        let body: Response?
        if path.hasPrefix("/api/") {
            body = try? JSONBody.response(OllamaErrorBody(error: error.message), status: error.status, headers: headers)
        } else {
            body = try? JSONBody.response(OpenAIErrorBody(error), status: error.status, headers: headers)
        }
        return body ?? Response(status: error.status)
    }
}

/// Counts the requests in progress, until their bodies are written, for a drain to wait for;
/// while the server drains, turns away every request but /health and /metrics with 503, so
/// that a load balancer retries it on another replica (nginx: `proxy_next_upstream http_503`).
struct DrainMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let service: HearthService

    /// Counts one request while it lives: until its response's body has been written, or the
    /// response is dropped unwritten.
    final class InProgress: Sendable {
        let service: HearthService
        init(_ service: HearthService) {
            self.service = service
            service.requestsInProgress.add(1, ordering: .relaxed)
        }
        func keep() {}
        deinit { service.requestsInProgress.subtract(1, ordering: .relaxed) }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        if path == "/health" || path == "/metrics" { return try await next(request, context) }
        guard !service.draining.load(ordering: .relaxed) else {
            throw ServerError(status: .serviceUnavailable,
                              message: "This replica (\(service.configuration.replica)) is shutting down; send the request to another one.",
                              type: "server_error", code: "draining", retryAfter: 1)
        }
        let inProgress = InProgress(service)
        var response = try await next(request, context)
        let body = response.body
        response.body = ResponseBody(contentLength: body.contentLength) { writer in
            defer { inProgress.keep() }
            try await body.write(writer)
        }
        return response
    }
}

/// With a key set, turns away requests without `Authorization: Bearer KEY`, except /health
/// and the web UI's static files (which hold no data; the UI sends the key with its calls).
struct APIKeyMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let key: String?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let key, !Self.isPublic(request.uri.path) else { return try await next(request, context) }
        let given = request.headers[.authorization] ?? ""
        guard given.hasPrefix("Bearer "), Self.constantTimeEqual(String(given.dropFirst("Bearer ".count)), key) else {
            throw ServerError.unauthorized
        }
        return try await next(request, context)
    }

    static func isPublic(_ path: String) -> Bool {
        path == "/health" || path == "/" || path.hasPrefix("/ui/")
    }

    /// Compares without stopping at the first difference, so timing does not reveal the key.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for index in 0..<max(x.count, y.count) {
            difference |= (index < x.count ? x[index] : 0) ^ (index < y.count ? y[index] : 0)
        }
        return difference == 0
    }
}

/// The server: `start()` binds and serves in the background, `wait()` returns when it stops.
public final class HearthServer: Sendable {
    /// Hearth's version, as /api/version and the traces' service.version give it.
    public static let version = HearthService.version
    let service: HearthService
    private let state = Mutex<(port: Int, task: Task<Void, any Error>?, group: ServiceGroup?)>((0, nil, nil))
    private let signalSources = Mutex<SignalSources?>(nil)
    private let signalsReceived = Atomic<Int>(0)

    /// A server with `configuration`, loading models through `hearth`. Opens (or creates) the
    /// chat threads database, connecting to it when it is PostgreSQL; throws when it cannot.
    /// `logger` gets the database's messages about lost connections (none by default).
    public init(configuration: ServerConfiguration, hearth: Hearth = Hearth(), logger: Logger? = nil) async throws {
        var log = logger ?? Logger(label: "hearth.server")
        if logger == nil { log.logLevel = .warning }
        service = try await HearthService(configuration: configuration, hearth: hearth, logger: log)
    }

    /// The port it listens on, once started.
    public var port: Int { state.withLock { $0.port } }

    /// Binds and starts serving; returns once the port is open. Throws when the address cannot
    /// be bound. With `handleSignals`, SIGINT and SIGTERM drain the server (see `drain()`) and a
    /// second one stops it at once; SIGQUIT stops it without waiting. `services` run beside the
    /// server and stop after it (a trace exporter, which then sends what it still holds).
    public func start(logger: Logger? = nil, handleSignals: Bool = false, services: [any Service] = []) async throws {
        let configuration = service.configuration
        var log = logger ?? Logger(label: "hearth.server")
        if logger == nil { log.logLevel = .warning }
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let app = Application(router: service.router(),
                              configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "hearth"),
                              onServerRunning: { channel in portContinuation.yield(channel.localAddress?.port ?? 0) },
                              logger: log)
        let service = self.service
        // Services stop in the reverse of this order: the server first, then the others, which
        // so see its last requests.
        var groupConfiguration = ServiceGroupConfiguration(services: services + [app], logger: log)
        if handleSignals { groupConfiguration.cancellationSignals = [.sigquit] }
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(5)
        let group = ServiceGroup(configuration: groupConfiguration)
        let task = Task {
            let sweeper = Task { await service.sweepIdleModels() }
            defer { sweeper.cancel() }
            do {
                try await group.run()
            } catch {
                portContinuation.finish()
                await service.store.close()
                throw error
            }
            // The requests have finished (or were given up on): the store's connections can go.
            await service.store.close()
        }
        var bound: Int?
        for await value in ports {
            bound = value
            break
        }
        guard let bound else {
            let result = await task.result
            if case .failure(let error) = result { throw error }
            throw HearthError.resourceUnavailable("The server stopped before it was listening.")
        }
        state.withLock { $0 = (bound, task, group) }
        if handleSignals { handleTerminationSignals() }
    }

    /// SIGTERM or SIGINT: a drain; another one: a stop without waiting for answers.
    private func handleTerminationSignals() {
        let sources = [SIGTERM, SIGINT].map { signalNumber in
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { [self] in
                if signalsReceived.add(1, ordering: .relaxed).newValue == 1 {
                    self.service.draining.store(true, ordering: .relaxed)
                    Task {
                        let running = self.service.requestsInProgress.load(ordering: .relaxed)
                        if running > 0 {
                            let seconds = Int(self.service.configuration.drainSeconds.rounded())
                            FileHandle.standardError.write(Data("Draining: \(running) request\(running == 1 ? "" : "s") still running (at most \(seconds) s); new ones get 503. Press Ctrl-C again to stop now.\n".utf8))
                        }
                        await self.drain()
                    }
                } else {
                    // At once: the run is cancelled, open streams with it.
                    state.withLock { $0.task }?.cancel()
                }
            }
            source.resume()
            return source
        }
        let kept = SignalSources(sources)
        signalSources.withLock { $0 = kept }
    }

    /// Drains and stops the server, as a replica leaving a load balancer: /health answers 503
    /// "draining" and new requests 503 at once, the requests in progress (streamed answers,
    /// transcriptions, a model loading for one) run to their end (for at most `drainSeconds`),
    /// then the server stops.
    public func drain() async {
        let service = self.service
        service.draining.store(true, ordering: .relaxed)
        let deadline = ContinuousClock.now + .seconds(service.configuration.drainSeconds)
        while ContinuousClock.now < deadline, service.requestsInProgress.load(ordering: .relaxed) > 0 {
            try? await Task.sleep(for: .milliseconds(100))
        }
        await stop()
    }

    /// Returns when the server stops: after `stop()`, or on SIGINT / SIGTERM.
    public func wait() async throws {
        let task = state.withLock { $0.task }
        try await task?.value
    }

    /// Stops serving, giving requests in progress a few seconds to finish.
    public func stop() async {
        let (task, group) = state.withLock { ($0.task, $0.group) }
        await group?.triggerGracefulShutdown()
        _ = await task?.result
    }
}

/// The signal handlers a server keeps for as long as it runs (they stop when released).
private final class SignalSources: @unchecked Sendable {
    let sources: [any DispatchSourceSignal]
    init(_ sources: [any DispatchSourceSignal]) { self.sources = sources }
}

extension ServerConfiguration {
    /// Seconds from a keep-alive such as "5m", "30s" or "1h"; nil (for ever) for a negative one.
    public static func keepAliveSeconds(_ text: String) throws -> Double? {
        do {
            switch try KeepAlive(text) {
            case .forever: return nil
            case .seconds(let seconds): return seconds
            }
        } catch let error as ServerError {
            throw HearthError.invalidArgument(error.message)
        }
    }
}
