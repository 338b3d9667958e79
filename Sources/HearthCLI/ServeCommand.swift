import ArgumentParser
import Foundation
import Hearth
import HearthServer
import HearthStore
import OTel
import ServiceLifecycle

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve models over an OpenAI- and Ollama-compatible HTTP API, with a web chat UI.",
        discussion: """
            Models are loaded on first use and unloaded after --keep-alive. Requests name a model \
            given with --model, or any model in the Hugging Face cache (see `hearth ls`).
            """
    )

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on (0 picks a free one).")
    var port = 11435

    @Option(name: .customLong("api-key"), help: "Require `Authorization: Bearer KEY` on every route but /health (default: $HEARTH_API_KEY).")
    var apiKey: String?

    @Option(help: "Requests each model serves at once.")
    var parallel = 4

    @Option(name: .customLong("queue"), help: "Requests that may wait for a slot before the server answers 503.")
    var queueLimit = 32

    @Option(name: .customLong("model"), parsing: .singleValue,
            help: "A model to serve: NAME=PATH, a GGUF file or embedding folder, or a cached Hub name. Repeatable; the first is the default.")
    var models: [String] = []

    @Option(name: .customLong("speech-model"),
            help: "The Whisper model for /v1/audio: a faster-whisper or Hugging Face folder (models/whisper-base), a whisper.cpp file, or a cached Hub name (Systran/faster-whisper-base). Requests for whisper-1 use it.")
    var speechModel: String?

    @Option(name: .customLong("speech-weights"),
            help: "How the speech model holds its matrices: float (faster-whisper's float32 results) or q8_0 (a quarter of the memory, a faster decoder, close results).")
    var speechWeights = "float"

    @Option(name: .customLong("keep-alive"), help: "How long an idle model stays loaded (\"5m\", \"30s\", -1 for ever).")
    var keepAlive = "5m"

    @Option(name: .customLong("max-body"), help: "Largest request body, in bytes.")
    var maxBody = 8 << 20

    @Option(name: [.short, .customLong("threads")], help: "Threads each model runs on (default: one per core).")
    var threads: Int?

    @Option(name: [.short, .customLong("ctx-size")], help: "Context length of each slot (default: the model's, at most 4096).")
    var contextLength: Int?

    @OptionGroup var cache: CacheTypeOptions

    @Option(name: .customLong("cache-ram"),
            help: "MiB of keys and values each model keeps of conversations that moved on, for prompts that begin the same way (0: none).")
    var cacheRAM = LocalModel.defaultPromptCacheBytes >> 20

    @Option(help: ArgumentHelp(
        "The chat threads database: a SQLite file, or postgres://USER@HOST:PORT/DATABASE for a PostgreSQL database several servers share (default: $HEARTH_DATABASE_URL, else hearth.sqlite in $HEARTH_DATA_DIR or ~/.local/share/hearth).",
        valueName: "path-or-url"))
    var database: String?

    @Option(help: "This server's name among replicas: the replica label of its metrics and the X-Hearth-Replica header (default: $HEARTH_REPLICA, else the host name).")
    var replica: String?

    @Option(help: "Seconds a SIGTERM waits for answers in progress before it stops them; meanwhile /health answers 503 draining and new requests 503.")
    var grace: Double = 30

    func validate() throws {
        guard (1...64).contains(parallel) else { throw ValidationError("--parallel must be between 1 and 64.") }
        guard (0...10_000).contains(queueLimit) else { throw ValidationError("--queue must be between 0 and 10000.") }
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be between 0 and 65535.") }
        guard (0...86_400).contains(grace) else { throw ValidationError("--grace must be between 0 and 86400 seconds.") }
        guard maxBody >= 1024 else { throw ValidationError("--max-body must be at least 1024 bytes.") }
        if let threads, threads < 1 || threads > 512 { throw ValidationError("--threads must be between 1 and 512.") }
        guard WhisperWeights(rawValue: speechWeights) != nil else {
            throw ValidationError("--speech-weights must be one of \(WhisperWeights.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        guard (0...(1 << 30)).contains(cacheRAM) else { throw ValidationError("--cache-ram must be between 0 and 1073741824 MiB.") }
    }

    func run() async throws {
        try await reportingErrors {
            let hearth = Hearth(configuration: .init(threads: threads, contextLength: contextLength,
                                                     promptCacheBytes: cacheRAM << 20, cacheTypes: cache.types))
            var configuration = ServerConfiguration(database: try ChatDatabase.chosen(option: database))
            configuration.host = host
            configuration.port = port
            configuration.apiKey = apiKey ?? ProcessInfo.processInfo.environment["HEARTH_API_KEY"].flatMap { $0.isEmpty ? nil : $0 }
            configuration.parallel = parallel
            configuration.queueLimit = queueLimit
            configuration.maxBodyBytes = maxBody
            configuration.keepAliveSeconds = try ServerConfiguration.keepAliveSeconds(keepAlive)
            configuration.drainSeconds = grace
            if let name = replica ?? ProcessInfo.processInfo.environment["HEARTH_REPLICA"].flatMap({ $0.isEmpty ? nil : $0 }) {
                guard !name.contains(where: { $0.isWhitespace || $0 == "\"" || $0 == "\\" }) else {
                    throw HearthError.invalidArgument("The replica name \"\(name)\" (--replica or HEARTH_REPLICA) must be one word without quotes.")
                }
                configuration.replica = name
            }
            for argument in models {
                let (name, url) = try registration(argument, hearth: hearth)
                guard configuration.models[name] == nil else {
                    throw HearthError.invalidArgument("Two models are named \(name); give one a name with NAME=PATH.")
                }
                configuration.models[name] = url
                if configuration.defaultModel == nil { configuration.defaultModel = name }
            }
            if let speechModel {
                configuration.speechModel = try speechRegistration(speechModel, hearth: hearth)
                configuration.speechWeights = WhisperWeights(rawValue: speechWeights)!
            }
            if host != "127.0.0.1", host != "localhost", host != "::1", configuration.apiKey == nil {
                printError("warning: listening on \(host) without --api-key; anyone who can reach this address can use it.")
            }
            let server = try await HearthServer(configuration: configuration, hearth: hearth)
            try await server.start(handleSignals: true, services: try tracing(replica: configuration.replica))
            let names = configuration.models.keys.sorted().joined(separator: ", ")
            let weights = configuration.speechWeights == .q8_0 ? ", q8_0 weights" : ""
            writeNow("Hearth listening on http://\(host.contains(":") ? "[\(host)]" : host):\(server.port)"
                     + (names.isEmpty ? "" : " (models: \(names))")
                     + (configuration.speechModel.map { " (speech: \($0.name)\(weights))" } ?? "") + "\n")
            writeNow("Chat threads in \(configuration.database)\n")
            try await server.wait()
        }
    }

    /// The OpenTelemetry trace exporter, when the environment asks for one: spans of every
    /// request, its queue wait, prompt and generation, sent over OTLP/HTTP to
    /// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), with the other
    /// OTEL_* settings as the OpenTelemetry specification reads them.
    private func tracing(replica: String) throws -> [any Service] {
        let environment = ProcessInfo.processInfo.environment
        let endpoint = ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"].compactMap { environment[$0] }.first { !$0.isEmpty }
        guard endpoint != nil, environment["OTEL_SDK_DISABLED"]?.lowercased() != "true" else { return [] }
        var configuration = OTel.Configuration.default
        configuration.serviceName = "hearth"
        configuration.resourceAttributes = ["service.instance.id": replica, "service.version": HearthServer.version]
        configuration.diagnosticLogLevel = .warning
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        // Only traces: the variables that would turn on OpenTelemetry's logs or metrics (which
        // would take over Hearth's own log and duplicate /metrics) are left out.
        let settings = environment.filter { key, _ in
            key != "OTEL_SDK_DISABLED" && !key.hasPrefix("OTEL_LOGS_") && !key.hasPrefix("OTEL_METRICS_")
                && !key.hasPrefix("OTEL_EXPORTER_OTLP_LOGS_") && !key.hasPrefix("OTEL_EXPORTER_OTLP_METRICS_")
        }
        do {
            return [try OTel.bootstrap(configuration: configuration, environment: settings)]
        } catch {
            throw HearthError.invalidArgument("The OpenTelemetry settings (OTEL_* variables) cannot be used: \(error). Unset OTEL_EXPORTER_OTLP_ENDPOINT to run without traces.")
        }
    }

    /// The name and location of one --model argument.
    private func registration(_ argument: String, hearth: Hearth) throws -> (String, URL) {
        if let equals = argument.firstIndex(of: "="), !FileManager.default.fileExists(atPath: argument) {
            let name = String(argument[..<equals])
            let target = String(argument[argument.index(after: equals)...])
            guard !name.isEmpty, !name.contains(" ") else { throw HearthError.invalidArgument("--model \(argument): the name before = must be one word.") }
            return (name, try located(target, hearth: hearth))
        }
        let url = try located(argument, hearth: hearth)
        if case .path(let path) = try hearth.reference(argument) {
            let file = URL(fileURLWithPath: path).lastPathComponent
            return (file.hasSuffix(".gguf") ? String(file.dropLast(5)) : file, url)
        }
        return (argument, url)
    }

    /// The name and location of --speech-model: a folder or file on disk (named by its last
    /// component, less a file's extension) or a Hub repository in the cache (named as given).
    /// Its layout is checked now, so that a wrong path fails at start rather than on the first
    /// request.
    private func speechRegistration(_ argument: String, hearth: Hearth) throws -> (name: String, url: URL) {
        let path = (argument as NSString).expandingTildeInPath
        let url: URL
        let name: String
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            url = URL(fileURLWithPath: path).standardizedFileURL
            name = isDirectory.boolValue ? url.lastPathComponent : url.deletingPathExtension().lastPathComponent
        } else {
            guard let cached = try? hearth.cachedModel(argument) else {
                throw HearthError.invalidArgument(
                    "--speech-model \(argument): no such file or folder, and no Hub model of that name in the cache. Give a Whisper model on disk (scripts/fetch-models brings models/whisper-base) or pull one first: hearth pull Systran/faster-whisper-base.")
            }
            url = cached
            name = argument
        }
        do {
            // A sentence-transformers folder has model.safetensors and config.json too: its
            // config.json says what it is.
            if try WhisperFiles.layout(of: url) == .huggingFace {
                let configURL = url.appendingPathComponent("config.json")
                let config = try WhisperConfig(json: try Data(contentsOf: configURL), path: configURL.path)
                if let type = config.modelType, type != "whisper" {
                    throw HearthError.unsupportedModel(reason: "\(url.path) holds a \(type) model, not Whisper (config.json's model_type)")
                }
            }
        } catch HearthError.unsupportedModel(let reason) {
            throw HearthError.invalidArgument("--speech-model \(argument): \(reason).")
        } catch HearthError.invalidModelFile(_, let reason) {
            throw HearthError.invalidArgument("--speech-model \(argument): \(url.path) holds no Whisper model Hearth reads: \(reason).")
        }
        return (name, url)
    }

    /// Where the model `name` is: its GGUF file (in a folder, the one it holds), or the folder
    /// of a model without one (a sentence-transformers model).
    private func located(_ name: String, hearth: Hearth) throws -> URL {
        guard let url = try hearth.cachedModel(name) else { throw HearthError.modelNotFound(name: name) }
        let inside = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        if inside.contains(where: { $0.lowercased().hasSuffix(".gguf") }), let file = try hearth.cachedModelFile(name) {
            return file
        }
        return url
    }
}
