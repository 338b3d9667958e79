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

struct ChatCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chat",
        abstract: "Talk with a model, turn after turn.",
        discussion: """
            Each turn reuses what the model already read, so only the new message is evaluated. \
            Ctrl-C stops the answer being written; Ctrl-D or /bye quits. Start a message with \
            \"\"\" to write several lines and end it with \"\"\"; a line ending in \\ also goes on. \
            Type /help for the commands.
            """
    )

    @OptionGroup var modelOptions: ModelOptions
    @OptionGroup var generation: GenerationArguments

    @Option(help: "System prompt.")
    var system: String?

    func run() async throws {
        try await reportingErrors {
            let model = try await modelOptions.load()
            let session = model.chat(system: system, options: try generation.options())
            let interactive = isatty(STDIN_FILENO) != 0
            let interrupts = Interrupts()
            printError("Chatting with \(model.name) (context \(model.contextLength) tokens, KV cache \(HumanReadable.bytes(model.cacheBytesPerContext)) in \(model.cacheTypes)). /help for commands, /bye or Ctrl-D to quit.")
            var lines = LineReader(prompt: interactive ? ">>> " : nil)
            while let input = await lines.nextMessage() {
                let text = input.trimmingCharacters(in: .whitespacesAndNewlines)
                if text.isEmpty { continue }
                if text.hasPrefix("/") {
                    guard try handle(command: text, session: session) else { break }
                    continue
                }
                await answer(text, session: session, interrupts: interrupts)
            }
        }
    }

    /// Streams one answer; Ctrl-C cancels it and the chat goes on.
    private func answer(_ text: String, session: ChatSession, interrupts: Interrupts) async {
        let task = Task {
            var statistics: GenerationStatistics?
            var writer = AnswerWriter()
            for try await chunk in session.stream(text) {
                writer.write(chunk)
                if let stats = chunk.statistics { statistics = stats }
            }
            return statistics
        }
        interrupts.whileRunning(task)
        let result = await task.result
        interrupts.whileRunning(nil)
        switch result {
        case .success(let statistics?):
            writeNow("\n")
            printError(String(format: "[%d tokens, %.1f tok/s, first token %.0f ms, %d of %d prompt tokens cached]",
                              statistics.completionTokens, statistics.tokensPerSecond,
                              statistics.timeToFirstToken * 1000, statistics.cachedPromptTokens, statistics.promptTokens))
        case .success(nil):
            writeNow("\n")
            printError("[stopped]")
        case .failure(let error as HearthError):
            writeNow("\n")
            printError("error: \(error.message)")
        case .failure(let error):
            writeNow("\n")
            printError(error is CancellationError ? "[stopped]" : "error: \(error)")
        }
    }

    /// Runs a slash command; false means quit.
    private func handle(command line: String, session: ChatSession) throws -> Bool {
        let parts = line.split(separator: " ", maxSplits: 1)
        let name = String(parts[0]).lowercased()
        let argument = parts.count > 1 ? String(parts[1]).trimmingCharacters(in: .whitespaces) : ""
        switch name {
        case "/bye", "/exit", "/quit":
            return false
        case "/reset", "/clear":
            session.reset()
            printError("Conversation cleared.")
        case "/system":
            if argument.isEmpty {
                printError(session.system.map { "System prompt: \($0)" } ?? "No system prompt. Set one with /system TEXT.")
            } else {
                session.system = argument
                printError("System prompt set.")
            }
        case "/preset":
            let names = GenerationOptions.presets.map(\.name).joined(separator: ", ")
            if argument.isEmpty {
                printError("Presets: \(names). Use /preset NAME.")
            } else if let preset = GenerationOptions.preset(named: argument) {
                var options = preset
                options.maxTokens = session.options.maxTokens
                options.stop = session.options.stop
                session.options = options
                printError("Preset \(argument.lowercased()): temperature \(options.temperature).")
            } else {
                printError("Unknown preset \"\(argument)\"; use one of \(names).")
            }
        case "/stats":
            if let stats = session.lastStatistics {
                printError(statisticsLine(stats))
            } else {
                printError("No answer yet.")
            }
            printError("Messages: \(session.messages.count). Temperature: \(session.options.temperature).")
        case "/help", "/?":
            printError("""
                /reset          forget the conversation (the system prompt stays)
                /system [TEXT]  show or set the system prompt
                /preset [NAME]  show or pick a sampling preset (creative, balanced, precise, code, greedy)
                /stats          token counts and speeds of the last answer
                /bye            quit (also Ctrl-D)
                \"\"\"             start or end a message of several lines
                """)
        default:
            printError("Unknown command \(name); /help lists them.")
        }
        return true
    }
}

/// Turns Ctrl-C into cancelling the answer being written; with none running it only reminds
/// how to quit.
final class Interrupts {
    private final class Running: Sendable {
        let task = Mutex<Task<GenerationStatistics?, any Error>?>(nil)
    }

    private let running = Running()
    private let source: any DispatchSourceSignal

    init() {
        signal(SIGINT, SIG_IGN)
        source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler { [running] in
            if let task = running.task.withLock({ $0 }) {
                task.cancel()
            } else {
                printError("\n(Use /bye or Ctrl-D to quit.)")
            }
        }
        source.resume()
    }

    func whileRunning(_ task: Task<GenerationStatistics?, any Error>?) {
        running.task.withLock { $0 = task }
    }
}

/// Reads messages from standard input: one line, several lines between \"\"\" marks, or lines
/// joined by a trailing backslash.
struct LineReader {
    let prompt: String?

    mutating func nextMessage() async -> String? {
        guard var line = await readLineOffThread(prompt: prompt) else { return nil }
        if line.hasPrefix("\"\"\"") {
            var parts = [String(line.dropFirst(3))]
            if parts[0].hasSuffix("\"\"\"") { return String(parts[0].dropLast(3)) }
            while let next = await readLineOffThread(prompt: prompt.map { _ in "... " }) {
                if next.hasSuffix("\"\"\"") {
                    parts.append(String(next.dropLast(3)))
                    return parts.joined(separator: "\n")
                }
                parts.append(next)
            }
            return parts.joined(separator: "\n")
        }
        while line.hasSuffix("\\") {
            line.removeLast()
            guard let next = await readLineOffThread(prompt: prompt.map { _ in "... " }) else { break }
            line += "\n" + next
        }
        return line
    }

    /// `readLine` blocks; it runs on a thread of its own so the async threads stay free.
    private func readLineOffThread(prompt: String?) async -> String? {
        if let prompt { writeNow(prompt) }
        return await withCheckedContinuation { done in
            Thread.detachNewThread { done.resume(returning: readLine(strippingNewline: true)) }
        }
    }
}
