import Foundation
import Hearth
import HearthStore
import HearthStorePostgres
import Hummingbird
import Logging

/// The server's shared parts, which every controller is given and takes what its routes need
/// from, and the router that registers the controllers.
final class HearthService: Sendable {
    static let version = "0.1.0"

    let configuration: ServerConfiguration
    let hearth: Hearth
    let models: ModelManager
    let speech: SpeechModelManager
    let store: any ChatStore
    let metrics: ServerMetrics
    let generations: Generations
    let drain = DrainState()

    /// Largest request body accepted.
    var bodyLimit: Int { configuration.maxBodyBytes }

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
        generations = Generations(models: models, metrics: metrics)
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
        router.add(middleware: DrainMiddleware(state: drain, replica: configuration.replica))
        router.add(middleware: APIKeyMiddleware(key: configuration.apiKey))
        HealthController(service: self).addRoutes(to: router)
        OpenAIController(service: self).addRoutes(to: router.group("v1"))
        ModelsController(service: self).addRoutes(to: router.group("v1"))
        AudioController(service: self).addRoutes(to: router.group("v1"))
        OllamaController(service: self).addRoutes(to: router.group("api"))
        OllamaModelsController(service: self).addRoutes(to: router.group("api"))
        EmbeddingsController(service: self).addRoutes(to: router)
        RerankController(service: self).addRoutes(to: router)
        ThreadController(service: self).addRoutes(to: router)
        PresetController().addRoutes(to: router)
        WebController().addRoutes(to: router)
        return router
    }

    /// Unloads models idle past their keep-alive, once a second, until cancelled.
    func sweepIdleModels() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            await models.sweep()
        }
    }
}
