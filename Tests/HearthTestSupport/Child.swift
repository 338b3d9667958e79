import Foundation
import Synchronization

/// A child process with its output collected to files (so a full pipe never blocks it),
/// started by `Spawn` and reaped with waitpid, so that whatever it leaves behind cannot hide
/// its end.
public final class Child: Sendable {
    /// What the child reads on its standard input.
    public enum Input: Sendable {
        /// Nothing (/dev/null).
        case nothing
        /// The file at this URL.
        case file(URL)
        /// A pipe this process writes with `send(_:)` and closes with `closeInput()`.
        case pipe
    }

    /// How long a wait lasts by default before the child is killed: long enough for any
    /// child of the tests on a slow machine busy with every other suite, short enough that a
    /// child that hangs fails its test rather than the whole run.
    public static let patience: Duration = .seconds(600)

    /// Its process id.
    public let pid: pid_t
    /// Where its standard output goes.
    public let output: URL
    /// Where its standard error goes.
    public let errors: URL
    /// The program's name, for messages.
    public let name: String
    private let ending = Mutex<Spawn.Ending?>(nil)
    private let input: Mutex<FileHandle?>

    /// Starts `executable` with `arguments` in `environment`, its output in files in `directory`;
    /// it runs in `workingDirectory` when one is given, else in the test's own.
    public init(_ executable: URL, _ arguments: [String], environment: [String: String], directory: TemporaryDirectory,
                workingDirectory: URL? = nil, input: Input = .nothing) throws {
        output = directory.file("out-\(UUID().uuidString)")
        errors = directory.file("err-\(UUID().uuidString)")
        name = ([executable.lastPathComponent] + arguments.prefix(2)).joined(separator: " ")
        var writer: FileHandle?
        var spawnInput = Spawn.Input.nothing
        var pipeEnds: [Int32] = [-1, -1]
        switch input {
        case .nothing: break
        case .file(let url): spawnInput = .file(url.path)
        case .pipe:
            guard pipe(&pipeEnds) == 0 else { throw SpawnError.cannotStart(name, String(cString: strerror(errno))) }
            // Close-on-exec, so that no program another test starts holds either end.
            for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            spawnInput = .descriptor(pipeEnds[0])
            writer = FileHandle(fileDescriptor: pipeEnds[1], closeOnDealloc: true)
        }
        defer { if pipeEnds[0] >= 0 { close(pipeEnds[0]) } }
        pid = try Spawn.start([executable.path] + arguments, environment: environment, input: spawnInput,
                              output: output.path, errors: errors.path, workingDirectory: workingDirectory?.path)
        self.input = Mutex(writer)
    }

    deinit {
        // Reaped when it ends, should no test have waited for it.
        guard isRunning else { return }
        let pid = pid
        Task.detached {
            while Spawn.ended(pid) == nil { try? await Task.sleep(for: .seconds(1)) }
        }
    }

    /// Whether it still runs (once it has ended, it is reaped and stays ended).
    public var isRunning: Bool { ended == nil }

    /// How it ended, or nil while it runs.
    public var ended: Spawn.Ending? {
        ending.withLock { ending in
            if ending == nil { ending = Spawn.ended(pid) }
            return ending
        }
    }

    /// Sends it `signal`, unless it has already been reaped (its id may then be another's).
    public func signal(_ signal: Int32) {
        ending.withLock { ending in
            if ending == nil { kill(pid, signal) }
        }
    }

    /// Waits for it to end and returns its exit status (or the number of the signal that
    /// ended it). Past `limit`, kills it and throws `SpawnError.didNotEnd`.
    @discardableResult
    public func wait(atMost limit: Duration = Child.patience) async throws -> Int32 {
        try await waitForEnding(atMost: limit).status
    }

    /// Waits for it to end and returns how. Past `limit`, kills it and throws
    /// `SpawnError.didNotEnd`.
    public func waitForEnding(atMost limit: Duration = Child.patience) async throws -> Spawn.Ending {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let ended { return ended }
            try? await Task.sleep(for: .milliseconds(20))
        }
        try killAfter(limit)
    }

    /// `wait(atMost:)` for code that cannot suspend (it blocks its thread).
    @discardableResult
    public func waitBlocking(atMost limit: Duration = Child.patience) throws -> Int32 {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let ended { return ended.status }
            usleep(10_000)
        }
        try killAfter(limit)
    }

    private func killAfter(_ limit: Duration) throws -> Never {
        signal(SIGKILL)
        var status: Int32 = 0
        ending.withLock { ending in
            if ending == nil {
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                ending = Spawn.Ending(status: status)
            }
        }
        throw SpawnError.didNotEnd(name, limit, errorText)
    }

    /// Writes `text` to its standard input (started with `.pipe`).
    public func send(_ text: String) {
        input.withLock { $0?.write(Data(text.utf8)) }
    }

    /// Closes its standard input (started with `.pipe`): it reads the end of the file.
    public func closeInput() {
        input.withLock { $0 = nil }
    }

    /// Has it killed (SIGTERM) should this process end first, even by SIGKILL. For servers that
    /// must not outlive their tests: a shell in a session of its own (so a Ctrl-C that kills
    /// the tests does not kill it too) watches both processes, holding no descriptor of
    /// either, and ends as soon as one of them is gone.
    public func killWhenTestsEnd() {
        let script = """
            while kill -0 \(getpid()) 2>/dev/null && kill -0 \(pid) 2>/dev/null; do sleep 1; done
            kill -0 \(getpid()) 2>/dev/null || kill -TERM \(pid) 2>/dev/null
            """
        guard let watchdog = try? Spawn.start(["/bin/sh", "-c", script], environment: ["PATH": "/usr/bin:/bin"],
                                              output: "/dev/null", errors: "/dev/null", workingDirectory: "/", newSession: true)
        else { return }
        // Reaped once it ends (with its child, or with this process, which makes init reap it).
        Task.detached {
            while Spawn.ended(watchdog) == nil { try? await Task.sleep(for: .seconds(1)) }
        }
    }

    /// The address a `hearth serve` child listens on, once it prints "Hearth listening on URL"
    /// (within `limit`; a child that exits first or never says so is an error, and one that
    /// never says so is killed).
    public func listeningURL(within limit: Duration = Child.patience) async throws -> String {
        let prefix = "Hearth listening on "
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let line = outputText.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) {
                return String(line.dropFirst(prefix.count).prefix { $0 != " " })
            }
            if let ended { throw ChildError.notListening("\(ended): \(errorText)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        signal(SIGKILL)
        throw ChildError.notListening("not listening after \(limit.components.seconds) s (killed): \(errorText)")
    }

    /// Its standard output so far.
    public var outputText: String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }
    /// Its standard error so far.
    public var errorText: String { (try? String(contentsOf: errors, encoding: .utf8)) ?? "" }
}

extension Child {
    /// Runs `executable` to its end (bounded by `Child.patience`) and returns its status, its
    /// standard output and its standard error, for code that cannot suspend.
    public static func run(_ executable: URL, _ arguments: [String],
                           environment: [String: String] = ProcessInfo.processInfo.environment,
                           workingDirectory: URL? = nil, input: Input = .nothing) throws -> (status: Int32, output: Data, errors: Data) {
        let directory = try TemporaryDirectory()
        let child = try Child(executable, arguments, environment: environment, directory: directory,
                              workingDirectory: workingDirectory, input: input)
        let status = try child.waitBlocking()
        return (status, (try? Data(contentsOf: child.output)) ?? Data(), (try? Data(contentsOf: child.errors)) ?? Data())
    }
}

public enum ChildError: Error, CustomStringConvertible {
    case notListening(String)

    public var description: String {
        switch self {
        case .notListening(let errors): "hearth serve did not start: \(errors)"
        }
    }
}
