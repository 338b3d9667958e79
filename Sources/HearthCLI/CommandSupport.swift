import ArgumentParser
import Foundation
import Hearth

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a command body, printing a `HearthError` as its message (no stack trace) and exiting 1.
func reportingErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as HearthError {
        printError("error: \(error.message)")
        throw ExitCode(1)
    }
}

/// Writes a line to standard error.
func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Writes text to standard output at once, without waiting for a newline.
func writeNow(_ text: String) {
    guard !text.isEmpty else { return }
    FileHandle.standardOutput.write(Data(text.utf8))
}

/// Peak resident memory of this process so far, in bytes.
func peakResidentBytes() -> Int {
    var usage = rusage()
    #if os(Linux)
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Int(usage.ru_maxrss) * 1024
    #else
    getrusage(RUSAGE_SELF, &usage)
    return Int(usage.ru_maxrss)
    #endif
}

/// Options shared by the commands that load a model.
struct ModelOptions: ParsableArguments {
    @Argument(help: "Path to a GGUF model file.")
    var model: String

    @Option(name: [.short, .customLong("threads")], help: "Threads to run on (default: one per core).")
    var threads: Int?

    func validate() throws {
        if let threads, threads < 1 || threads > 512 {
            throw ValidationError("--threads must be between 1 and 512.")
        }
    }

    func load() throws -> TransformerModel {
        try TransformerModel(path: model, threads: threads)
    }
}
