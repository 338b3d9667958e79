import Foundation

/// How a test starts `hearth serve`: by default on a free port with 2 threads and a context of
/// 2048, serving the real SmolLM2 as "smollm2" (the default) and all-MiniLM-L6-v2 as
/// "all-minilm", offline, with its own database, Hugging Face home and cache, data and
/// temporary folders in a temporary directory (none of the test's own `HF_` and `HEARTH_`
/// settings reach it).
public struct ServeCommand {
    /// Where its chats are kept.
    public enum Database {
        /// hearth.sqlite in the directory.
        case file
        /// This SQLite path or PostgreSQL URL (`--database`).
        case named(String)
        /// No `--database`: what its environment says (`HEARTH_DATABASE_URL`).
        case fromEnvironment
    }

    /// Where its files, output and error go.
    public var directory: TemporaryDirectory
    /// Its `--model` values, the default first; nil serves SmolLM2 and all-MiniLM-L6-v2.
    public var models: [String]?
    public var database: Database = .file
    /// `--replica`.
    public var replica: String?
    /// The user it runs as (through setpriv; the tests then run as root), from /.
    public var user: String?
    public var threads = 2
    public var contextLength = 2048
    /// `--grace`, in seconds; nil leaves the server's own.
    public var grace: Double?
    /// Serve Whisper base as "whisper-base" too.
    public var speechModel = false
    public var apiKey: String?
    /// The Hub it pulls from; nil keeps it offline.
    public var hubEndpoint: URL?
    /// More arguments, after all of the above.
    public var arguments: [String] = []
    /// Variables set last, over the ones above.
    public var environment: [String: String] = [:]
    /// Where it runs; nil: the test's own folder (or / for another user).
    public var workingDirectory: URL?
    /// Another hearth binary than the one built.
    public var binary: URL?

    /// A command whose files go to `directory` (a new temporary directory when nil).
    public init(directory: TemporaryDirectory? = nil) throws {
        self.directory = try directory ?? TemporaryDirectory()
    }

    /// The program and its arguments.
    public func commandLine() throws -> [String] {
        let models = try self.models ?? ["smollm2=\(TestFiles.model(TestFiles.smolLM2))", "all-minilm=\(TestFiles.model("all-MiniLM-L6-v2"))"]
        var serve = [try (binary ?? TestFiles.hearthBinary).path, "serve", "--port", "0", "-t", String(threads), "-c", String(contextLength)]
        switch database {
        case .file: serve += ["--database", directory.file("hearth.sqlite").path]
        case .named(let database): serve += ["--database", database]
        case .fromEnvironment: break
        }
        serve += models.flatMap { ["--model", $0] }
        if speechModel { serve += ["--speech-model", try TestFiles.model("whisper-base")] }
        if let replica { serve += ["--replica", replica] }
        if let grace { serve += ["--grace", String(grace)] }
        if let apiKey { serve += ["--api-key", apiKey] }
        serve += arguments
        guard let user else { return serve }
        guard let account = getpwnam(user) else { throw TestFiles.Missing(description: "There is no user \(user).") }
        // setpriv execs hearth as the user, in the same process, so that killing it kills hearth.
        return ["/usr/bin/setpriv", "--reuid=\(account.pointee.pw_uid)", "--regid=\(account.pointee.pw_gid)", "--clear-groups", "--"] + serve
    }

    /// Its environment.
    public func environmentVariables() -> [String: String] {
        var variables = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HF_") && !$0.key.hasPrefix("HEARTH_") }
        // Another user may not write in the test's directory.
        if user == nil {
            variables["HF_HOME"] = directory.file("hf-home").path
            variables["HF_HUB_CACHE"] = directory.file("hub").path
            variables["HEARTH_DATA_DIR"] = directory.url.path
            variables["TMPDIR"] = directory.file("tmp").path
        }
        if let hubEndpoint { variables["HF_ENDPOINT"] = hubEndpoint.absoluteString } else { variables["HF_HUB_OFFLINE"] = "1" }
        return variables.merging(environment) { _, new in new }
    }

    /// Starts it without waiting for it to listen (as for a command line it should refuse).
    public func start() throws -> Child {
        let command = try commandLine()
        try FileManager.default.createDirectory(at: directory.file("tmp"), withIntermediateDirectories: true)
        return try Child(URL(fileURLWithPath: command[0]), Array(command.dropFirst()), environment: environmentVariables(),
                         directory: directory, workingDirectory: workingDirectory ?? (user == nil ? nil : URL(fileURLWithPath: "/")))
    }
}

/// `hearth serve` in a process of its own, as people run it, once it listens: tests in this
/// process that keep its threads busy cannot slow its answers. It is killed should the tests
/// end first.
public final class ServeProcess: @unchecked Sendable {
    /// Its files' directory.
    public let directory: TemporaryDirectory
    /// The process.
    public let child: Child
    /// The URL it listens on (http://127.0.0.1:port).
    public let base: String
    /// The models it was given by name and file, when it was started with them by name.
    public let models: [String: URL]

    /// Starts `command` and waits for it to listen.
    public convenience init(_ command: ServeCommand) async throws {
        try await self.init(started: try command.start(), directory: command.directory)
    }

    /// Waits for `child`, a `hearth serve` started by `ServeCommand.start()`, to listen.
    public init(started child: Child, directory: TemporaryDirectory, models: [String: URL] = [:]) async throws {
        self.directory = directory
        self.child = child
        self.models = models
        child.killWhenTestsEnd()
        do {
            base = try await child.listeningURL()
        } catch {
            child.signal(SIGKILL)
            throw error
        }
    }

    /// The default server (see `ServeCommand`) with its chats on `engine`, serving `parallel`
    /// requests at once with `queueLimit` waiting, `apiKey`, bodies up to `maxBodyBytes` (nil:
    /// the server's own limit),
    /// idle models kept `keepAliveSeconds` (nil: for ever), pulling from `hubEndpoint`, slots of
    /// `contextLength`, Whisper base as "whisper-base" when `speechModel`, `replica` its name,
    /// and `moreModels` (name and file, made in the server's directory) after the two default
    /// ones.
    public convenience init(engine: StoreEngine = .sqlite, parallel: Int = 4, queueLimit: Int = 32, apiKey: String? = nil,
                            maxBodyBytes: Int? = nil, keepAliveSeconds: Double? = 300, hubEndpoint: URL? = nil,
                            contextLength: Int = 2048, speechModel: Bool = false, replica: String = "test-replica",
                            moreModels: (TemporaryDirectory) throws -> [String: URL] = { _ in [:] }) async throws {
        var command = try ServeCommand()
        command.database = .named(try engine.newDatabase(in: command.directory))
        (command.grace, command.apiKey, command.hubEndpoint, command.speechModel) = (5, apiKey, hubEndpoint, speechModel)
        (command.contextLength, command.replica) = (contextLength, replica)
        command.arguments = ["--parallel", String(parallel), "--queue", String(queueLimit),
                             "--keep-alive=" + (keepAliveSeconds.map { "\(Int($0))s" } ?? "-1")]
        if let maxBodyBytes { command.arguments += ["--max-body", String(maxBodyBytes)] }
        let more = try moreModels(command.directory)
        var models = ["smollm2": try TestFiles.modelURL(TestFiles.smolLM2), "all-minilm": try TestFiles.modelURL("all-MiniLM-L6-v2")]
        command.models = ["smollm2=\(models["smollm2"]!.path)", "all-minilm=\(models["all-minilm"]!.path)"]
            + more.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.path)" }
        models.merge(more) { first, _ in first }
        try await self.init(started: try command.start(), directory: command.directory, models: models)
    }

    /// Files the server has left in its temporary folder (where uploads go; there should be
    /// none once requests have ended).
    public func leftoverUploads() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.file("tmp").path)
    }

    /// Stops it as a service manager would, with SIGTERM, and waits for it to exit; one that
    /// has not within `Child.patience` is killed, and standard error says so.
    public func stop() async {
        child.signal(SIGTERM)
        do {
            try await child.wait()
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
        }
    }
}
