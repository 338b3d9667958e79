import Foundation
import Synchronization

/// Where a pull is.
public enum DownloadPhase: String, Sendable, Equatable, Codable {
    /// Asking the Hub which commit and files the name stands for.
    case resolving
    /// Transferring bytes (or waiting for another process that is transferring the same file).
    case downloading
    /// Checking a finished file's checksum.
    case verifying
    /// Everything is in the cache.
    case done
}

/// A report on a pull in progress.
public struct DownloadProgress: Sendable, Equatable {
    /// What is happening.
    public var phase: DownloadPhase
    /// The repository.
    public var repo: String
    /// The file being worked on (nil while resolving and when done).
    public var file: String?
    /// Its position among the files to fetch, from 1.
    public var fileIndex: Int
    /// How many files the pull fetches.
    public var fileCount: Int
    /// Bytes of all files that are in the cache so far, including those that were already there.
    public var completedBytes: Int
    /// Bytes of all files.
    public var totalBytes: Int
    /// Recent transfer speed, bytes per second.
    public var bytesPerSecond: Double
    /// Seconds left at the current speed; nil while the speed is unknown.
    public var secondsRemaining: Double?
    /// The snapshot folder, on the last report.
    public var snapshot: URL?

    /// A report with the given fields.
    public init(phase: DownloadPhase, repo: String, file: String? = nil, fileIndex: Int = 0, fileCount: Int = 0,
                completedBytes: Int = 0, totalBytes: Int = 0, bytesPerSecond: Double = 0, secondsRemaining: Double? = nil,
                snapshot: URL? = nil) {
        self.phase = phase
        self.repo = repo
        self.file = file
        self.fileIndex = fileIndex
        self.fileCount = fileCount
        self.completedBytes = completedBytes
        self.totalBytes = totalBytes
        self.bytesPerSecond = bytesPerSecond
        self.secondsRemaining = secondsRemaining
        self.snapshot = snapshot
    }

    /// Completed share of the bytes, 0 to 1.
    public var fraction: Double { totalBytes > 0 ? min(1, Double(completedBytes) / Double(totalBytes)) : (phase == .done ? 1 : 0) }
}

/// Counts bytes for a pull, measures the speed over the last few seconds, and hands reports to
/// the listener at most ten times a second (and at every change of phase or file).
final class ProgressTracker: Sendable {
    private struct State {
        var report: DownloadProgress
        var transferred = 0
        var samples: [(time: ContinuousClock.Instant, bytes: Int)] = []
        var lastEmit: ContinuousClock.Instant?
    }

    private let state: Mutex<State>
    private let listener: @Sendable (DownloadProgress) -> Void
    private let clock = ContinuousClock()

    init(repo: String, listener: @escaping @Sendable (DownloadProgress) -> Void) {
        state = Mutex(State(report: DownloadProgress(phase: .resolving, repo: repo)))
        self.listener = listener
        listener(DownloadProgress(phase: .resolving, repo: repo))
    }

    var report: DownloadProgress { state.withLock { $0.report } }

    /// Changes fields of the report and sends it at once.
    func update(_ change: (inout DownloadProgress) -> Void) {
        let report = state.withLock { state in
            change(&state.report)
            state.lastEmit = clock.now
            return state.report
        }
        listener(report)
    }

    /// Adds `count` bytes; `transferred` says whether they came over the network (and so count
    /// for the speed) or were already on disk.
    func add(_ count: Int, transferred: Bool = true) {
        let now = clock.now
        let report: DownloadProgress? = state.withLock { state in
            state.report.completedBytes += count
            if transferred { state.transferred += count }
            if let last = state.lastEmit, now - last < .milliseconds(100) { return nil }
            state.samples.append((now, state.transferred))
            state.samples.removeAll { now - $0.time > .seconds(3) }
            if let first = state.samples.first, now - first.time > .milliseconds(50) {
                let elapsed = now - first.time
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                state.report.bytesPerSecond = Double(state.transferred - first.bytes) / seconds
                let remaining = Double(max(0, state.report.totalBytes - state.report.completedBytes))
                state.report.secondsRemaining = state.report.bytesPerSecond > 0 ? remaining / state.report.bytesPerSecond : nil
            }
            state.lastEmit = now
            return state.report
        }
        if let report { listener(report) }
    }

    /// Takes back bytes counted for a file that has to be fetched again.
    func subtract(_ count: Int) {
        state.withLock { $0.report.completedBytes -= count }
    }
}
