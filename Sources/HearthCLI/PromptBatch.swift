import ArgumentParser
import Dispatch
import Foundation
import Hearth
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `hearth run MODEL --prompts FILE`: answers every line of a file in shared forward passes
/// (offline batch inference) and writes one JSON line per answer as it finishes.
struct PromptBatch {
    let model: LocalModel
    let path: String
    let output: String?
    let parallel: Int
    let defaults: GenerationOptions
    let raw: Bool
    let system: String?

    /// One line of output; its keys are written in this order.
    struct Answer: Encodable {
        var line: Int
        var id: JSONValue?
        var prompt: String
        var text: String?
        /// A reasoning model's thoughts, when it had any.
        var reasoning: String?
        var finish_reason: String?
        var prompt_tokens: Int?
        var tokens: Int?
        var error: String?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case line, id, prompt, text, reasoning, finish_reason, prompt_tokens, tokens, error
        }
    }

    func run() async throws {
        let writer = try LineWriter(path: output)
        let progress = BatchProgress(total: path == "-" ? nil : try PromptBatch.countPrompts(path))
        let lines = try LineSource(path: path)
        let work = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                var running = 0
                var malformed: (any Error)?
                for await (number, text) in lines.lines() {
                    try Task.checkCancellation()
                    let parsed: PromptLine?
                    do {
                        parsed = try PromptLine.parse(text, line: number, defaults: defaults, raw: raw, system: system)
                    } catch {
                        malformed = error
                        break
                    }
                    guard let item = parsed else { continue }
                    if running >= parallel {
                        try await group.next()
                        running -= 1
                    }
                    running += 1
                    group.addTask {
                        let answer = await answer(item, progress: progress)
                        // An answer cut short by an interrupt is not written: only finished ones are.
                        if answer.finish_reason == "cancelled", Task.isCancelled { return }
                        try writer.append(answer)
                        progress.finished(failed: answer.error != nil)
                    }
                }
                // A malformed line stops the reading; the answers already started finish and
                // are written before the error.
                try await group.waitForAll()
                try Task.checkCancellation()
                if let malformed { throw malformed }
            }
        }
        let interrupt = Interrupt { work.cancel() }
        defer { interrupt.stop() }
        do {
            try await work.value
        } catch is CancellationError {
            progress.close()
            printError("hearth run: interrupted; \(progress.done) finished answers written.")
            throw ExitCode(130)
        } catch {
            progress.close()
            printError("hearth run: \(progress.done) answers written before the error.")
            throw error
        }
        progress.close()
        let failed = progress.failed
        printError(progress.summary + (failed > 0 ? ", \(failed) failed (see their \"error\")" : ""))
        if failed > 0 { throw ExitCode(1) }
    }

    /// The answer to one line, or the error that stopped it.
    private func answer(_ item: PromptLine, progress: BatchProgress) async -> Answer {
        var answer = Answer(line: item.line, id: item.id, prompt: item.text)
        do {
            var response = Response()
            for try await chunk in model.makeContext().stream(item.prompt, options: item.options, overflow: .error) {
                response.append(chunk)
                if chunk.token != nil { progress.token() }
            }
            answer.text = response.text
            if !response.reasoning.isEmpty { answer.reasoning = response.reasoning }
            answer.finish_reason = response.finishReason.rawValue
            answer.prompt_tokens = response.statistics?.promptTokens
            answer.tokens = response.tokens.count
        } catch {
            answer.error = (error as? HearthError)?.message ?? "\(error)"
        }
        return answer
    }

    /// Prompt lines in the file (its non-blank lines), for the progress bar.
    static func countPrompts(_ path: String) throws -> Int {
        var count = 0
        try LineSource(path: path).read { _, text in
            if !text.trimmingCharacters(in: .whitespaces).isEmpty { count += 1 }
            return true
        }
        return count
    }
}

/// The lines of a file, or of standard input for "-", read on a thread of their own so a long
/// file (or a pipe still being written) streams in while answers are generated.
struct LineSource: @unchecked Sendable {
    private let file: UnsafeMutablePointer<FILE>
    private let owned: Bool

    init(path: String) throws {
        if path == "-" {
            guard let input = fdopen(STDIN_FILENO, "r") else {
                throw HearthError.invalidArgument("Cannot read standard input: \(String(cString: strerror(errno))).")
            }
            file = input
            owned = false
        } else {
            guard let opened = fopen(path, "r") else {
                throw HearthError.invalidArgument("Cannot read \(path): \(String(cString: strerror(errno))).")
            }
            file = opened
            owned = true
        }
    }

    /// Calls `body` with each (1-based line number, text without its line ending) until it
    /// returns false or the lines end, then closes the file.
    func read(_ body: (Int, String) -> Bool) {
        var buffer: UnsafeMutablePointer<CChar>?
        var capacity = 0
        var number = 0
        while getline(&buffer, &capacity, file) >= 0, let buffer {
            number += 1
            var text = String(cString: buffer)
            while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
            if !body(number, text) { break }
        }
        free(buffer)
        if owned { fclose(file) }
    }

    /// The lines as they are read, on a thread of their own.
    func lines() -> AsyncStream<(Int, String)> {
        let (stream, continuation) = AsyncStream.makeStream(of: (Int, String).self, bufferingPolicy: .bufferingNewest(1 << 16))
        let source = self
        Thread.detachNewThread {
            source.read { number, text in
                if case .terminated = continuation.yield((number, text)) { return false }
                return true
            }
            continuation.finish()
        }
        return stream
    }
}

/// Writes whole JSON lines to standard output or a file, one write each, so an interrupted run
/// leaves only complete lines behind.
final class LineWriter: Sendable {
    private let descriptor: Int32
    private let lock = Mutex(())

    init(path: String?) throws {
        guard let path, path != "-" else {
            descriptor = STDOUT_FILENO
            return
        }
        let opened = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard opened >= 0 else { throw HearthError.invalidArgument("Cannot write \(path): \(String(cString: strerror(errno))).") }
        descriptor = opened
    }

    deinit {
        if descriptor != STDOUT_FILENO { close(descriptor) }
    }

    /// Writes `answer` as one JSON line, its keys in their declared order.
    func append(_ answer: PromptBatch.Answer) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        // Each present field encoded alone, then joined in order: the encoder itself does not
        // keep the order of keys.
        let whole = try JSONSerialization.jsonObject(with: encoder.encode(answer)) as? [String: Any] ?? [:]
        var fields: [String] = []
        for key in PromptBatch.Answer.CodingKeys.allCases where whole[key.rawValue] != nil {
            let value = try JSONSerialization.data(withJSONObject: whole[key.rawValue]!, options: [.fragmentsAllowed, .withoutEscapingSlashes])
            fields.append("\"\(key.rawValue)\":" + String(decoding: value, as: UTF8.self))
        }
        var data = Data(("{" + fields.joined(separator: ",") + "}").utf8)
        data.append(0x0A)
        try lock.withLock { _ in
            try data.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                    guard written > 0 else {
                        if written < 0, errno == EINTR { continue }
                        throw HearthError.invalidArgument("Cannot write the answers: \(String(cString: strerror(errno))).")
                    }
                    offset += written
                }
            }
        }
    }
}

/// Answers done and tokens made, as a bar on standard error when it is a terminal.
final class BatchProgress: Sendable {
    private struct State {
        var done = 0
        var failed = 0
        var tokens = 0
        var lastDraw = ContinuousClock.now - .seconds(1)
    }

    private let total: Int?
    private let started = ContinuousClock.now
    private let state = Mutex(State())
    private let drawing = isatty(STDERR_FILENO) != 0

    init(total: Int?) { self.total = total }

    var done: Int { state.withLock { $0.done } }
    var failed: Int { state.withLock { $0.failed } }

    func token() {
        let draw = state.withLock { state -> Bool in
            state.tokens += 1
            return ContinuousClock.now - state.lastDraw >= .milliseconds(100)
        }
        if draw { redraw() }
    }

    func finished(failed: Bool) {
        state.withLock {
            $0.done += 1
            if failed { $0.failed += 1 }
        }
        redraw()
    }

    /// Clears the bar.
    func close() {
        if drawing { writeError("\r\u{1B}[K") }
    }

    /// Answers, tokens, time and the aggregate rate.
    var summary: String {
        let (done, tokens) = state.withLock { ($0.done, $0.tokens) }
        let seconds = (ContinuousClock.now - started) / .seconds(1)
        return String(format: "%d answers, %d tokens in %.1f s (%.1f tok/s)", done, tokens, seconds,
                      seconds > 0 ? Double(tokens) / seconds : 0)
    }

    private func redraw() {
        guard drawing else { return }
        let (done, tokens) = state.withLock { state -> (Int, Int) in
            state.lastDraw = ContinuousClock.now
            return (state.done, state.tokens)
        }
        let seconds = (ContinuousClock.now - started) / .seconds(1)
        let rate = seconds > 0 ? Double(tokens) / seconds : 0
        var line = "\r\u{1B}[K"
        if let total, total > 0 {
            let width = 24, filled = min(width, done * width / total)
            line += "[\(done)/\(total)] " + String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        } else {
            line += "[\(done)]"
        }
        line += String(format: " %.1f tok/s", rate)
        writeError(line)
    }

    private func writeError(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}

/// Calls `action` on the first Ctrl-C (SIGINT), in place of the default, which would end the
/// process without a word.
final class Interrupt: @unchecked Sendable {
    private let source: any DispatchSourceSignal

    init(_ action: @escaping @Sendable () -> Void) {
        signal(SIGINT, SIG_IGN)
        source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler(handler: action)
        source.resume()
    }

    func stop() {
        source.cancel()
        signal(SIGINT, SIG_DFL)
    }
}
