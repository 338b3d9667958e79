import Foundation
import Hearth
import HearthStore

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
