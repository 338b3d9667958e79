import Foundation
import Hearth
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Shows a pull's progress: a redrawn bar on a terminal, a line per file and per tenth of the
/// bytes otherwise, or one JSON object per line with `--json`.
final class ProgressPrinter: Sendable {
    enum Style { case bar, lines, json }

    private struct State {
        var lastDraw = ContinuousClock.now - .seconds(1)
        var lastFile: Int = 0
        var lastTenth = -1
        var lastPhase: DownloadPhase?
    }

    private let style: Style
    private let state = Mutex(State())

    init(json: Bool) {
        style = json ? .json : (isatty(STDERR_FILENO) != 0 ? .bar : .lines)
    }

    func report(_ progress: DownloadProgress) {
        switch style {
        case .json:
            var event: [String: Any] = ["event": "progress", "phase": progress.phase.rawValue, "repo": progress.repo,
                                        "file_index": progress.fileIndex, "file_count": progress.fileCount,
                                        "bytes": progress.completedBytes, "total": progress.totalBytes,
                                        "speed": Int(progress.bytesPerSecond)]
            if let file = progress.file { event["file"] = file }
            if let eta = progress.secondsRemaining { event["eta"] = Int(eta.rounded()) }
            if let snapshot = progress.snapshot { event["snapshot"] = snapshot.path }
            printJSONLine(event)
        case .bar:
            let now = ContinuousClock.now
            let draw = state.withLock { state in
                let changed = state.lastPhase != progress.phase || state.lastFile != progress.fileIndex
                guard changed || now - state.lastDraw >= .milliseconds(100) else { return false }
                state.lastDraw = now
                state.lastPhase = progress.phase
                state.lastFile = progress.fileIndex
                return true
            }
            guard draw else { return }
            let width = 24
            let filled = Int(progress.fraction * Double(width))
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            var line = "\r\u{1B}[K"
            switch progress.phase {
            case .resolving: line += "resolving \(progress.repo)…"
            case .done: line += "pulled \(progress.repo) (\(HumanReadable.bytes(progress.totalBytes)))\n"
            case .downloading, .verifying:
                line += "[\(progress.fileIndex)/\(progress.fileCount)] \(bar) \(Int(progress.fraction * 100))% "
                line += "\(HumanReadable.bytes(progress.completedBytes))/\(HumanReadable.bytes(progress.totalBytes)) "
                line += "\(HumanReadable.bytes(Int(progress.bytesPerSecond)))/s"
                if let eta = progress.secondsRemaining, progress.phase == .downloading { line += " ETA \(formatDuration(eta))" }
                if progress.phase == .verifying { line += " verifying" }
                if let file = progress.file { line += "  \(file)" }
            }
            FileHandle.standardError.write(Data(line.utf8))
        case .lines:
            let tenth = Int(progress.fraction * 10)
            let text: String? = state.withLock { state in
                defer {
                    state.lastPhase = progress.phase
                    state.lastFile = progress.fileIndex
                }
                if progress.phase == .done { return "pulled \(progress.repo) into \(progress.snapshot?.path ?? "the cache")" }
                if progress.phase == .resolving, state.lastPhase != .resolving { return "resolving \(progress.repo)" }
                if progress.phase == .downloading, progress.fileIndex != state.lastFile, let file = progress.file {
                    return "[\(progress.fileIndex)/\(progress.fileCount)] \(file)"
                }
                if progress.phase == .downloading, tenth > state.lastTenth {
                    state.lastTenth = tenth
                    return "\(tenth * 10)% \(HumanReadable.bytes(progress.completedBytes))/\(HumanReadable.bytes(progress.totalBytes)) \(HumanReadable.bytes(Int(progress.bytesPerSecond)))/s"
                }
                return nil
            }
            if let text { printError(text) }
        }
    }
}

/// Prints `object` as one line of JSON on standard output.
func printJSONLine(_ object: Any) {
    guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
    FileHandle.standardOutput.write(data + Data("\n".utf8))
}

func formatDuration(_ seconds: Double) -> String {
    let total = Int(seconds.rounded())
    if total >= 3600 { return String(format: "%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60) }
    return String(format: "%d:%02d", total / 60, total % 60)
}

/// "3 minutes ago" and the like.
func formatAge(_ date: Date?, now: Date = Date()) -> String {
    guard let date, date > .distantPast else { return "never" }
    let seconds = max(0, Int(now.timeIntervalSince(date)))
    switch seconds {
    case ..<60: return "just now"
    case ..<3600: return "\(seconds / 60) min ago"
    case ..<86400: return "\(seconds / 3600) h ago"
    default: return "\(seconds / 86400) days ago"
    }
}

/// Parses sizes such as `500M`, `10G`, `1.5GiB`, `2TB`, `1024` (bytes); units are powers of 1024.
func parseSize(_ text: String) -> Int? {
    let trimmed = text.trimmingCharacters(in: .whitespaces).uppercased()
    let digits = trimmed.prefix { $0.isNumber || $0 == "." }
    guard let value = Double(digits), value >= 0 else { return nil }
    var unit = trimmed.dropFirst(digits.count).trimmingCharacters(in: .whitespaces)
    for suffix in ["IB", "B"] where unit.hasSuffix(suffix) {
        unit = String(unit.dropLast(suffix.count))
        break
    }
    let powers = ["": 0, "K": 1, "M": 2, "G": 3, "T": 4]
    guard let power = powers[unit] else { return nil }
    return Int(value * pow(1024, Double(power)))
}

/// Asks a yes/no question on the terminal; false when standard input is not one.
func confirm(_ question: String, defaultYes: Bool) -> Bool {
    guard isatty(STDIN_FILENO) != 0 else { return false }
    FileHandle.standardError.write(Data("\(question) [\(defaultYes ? "Y/n" : "y/N")] ".utf8))
    guard let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() else { return false }
    if answer.isEmpty { return defaultYes }
    return answer == "y" || answer == "yes"
}
