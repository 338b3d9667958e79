import Foundation
import Synchronization

/// A child process with its output collected to files (so a full pipe never blocks it).
public final class Child: @unchecked Sendable {
    /// The process.
    public let process = Process()
    /// Where its standard output goes.
    public let output: URL
    /// Where its standard error goes.
    public let errors: URL

    /// Starts `executable` with `arguments` in `environment`, its output in files in `directory`;
    /// it runs in `workingDirectory` when one is given, else in the test's own.
    public init(_ executable: URL, _ arguments: [String], environment: [String: String], directory: TemporaryDirectory,
                workingDirectory: URL? = nil) throws {
        output = directory.file("out-\(UUID().uuidString)")
        errors = directory.file("err-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        process.executableURL = executable
        process.arguments = arguments
        if let workingDirectory { process.currentDirectoryURL = workingDirectory }
        process.environment = environment
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = try FileHandle(forWritingTo: errors)
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    /// Waits for it to exit and returns its status.
    public func wait() async -> Int32 {
        while process.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
        return process.terminationStatus
    }

    /// Waits at most `limit` for it to exit; past that, kills it (SIGKILL, so its status says
    /// so) and returns that status.
    public func wait(atMost limit: Duration) async -> Int32 {
        let deadline = ContinuousClock.now + limit
        while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        return await wait()
    }

    /// Has it killed (SIGTERM) should this process end first, even by SIGKILL: a shell in a
    /// session of its own waits for this process to go. For servers that must not outlive
    /// their tests.
    public func killWhenTestsEnd() {
        let script = "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; kill -TERM \(process.processIdentifier) 2>/dev/null"
        let watchdog = Process()
        watchdog.executableURL = URL(fileURLWithPath: "/usr/bin/setsid")
        watchdog.arguments = ["-f", "/bin/sh", "-c", script]
        watchdog.standardInput = FileHandle.nullDevice
        watchdog.standardOutput = FileHandle.nullDevice
        watchdog.standardError = FileHandle.nullDevice
        try? watchdog.run()
    }

    /// The address a `hearth serve` child listens on, once it prints "Hearth listening on URL"
    /// (within five minutes; a child that exits first or never says so is an error).
    public func listeningURL() async throws -> String {
        let prefix = "Hearth listening on "
        for _ in 0..<6000 {
            if let line = outputText.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) {
                return String(line.dropFirst(prefix.count).prefix { $0 != " " })
            }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ChildError.notListening(errorText)
    }

    /// Its standard output so far.
    public var outputText: String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }
    /// Its standard error so far.
    public var errorText: String { (try? String(contentsOf: errors, encoding: .utf8)) ?? "" }
}


public enum ChildError: Error, CustomStringConvertible {
    case notListening(String)

    public var description: String {
        switch self {
        case .notListening(let errors): "hearth serve did not start: \(errors)"
        }
    }
}
