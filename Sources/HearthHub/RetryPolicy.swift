import Foundation
import HearthCore

/// How failed requests are retried: exponential backoff with full jitter, and the server's
/// Retry-After when it gives one.
public struct RetryPolicy: Sendable, Equatable {
    /// Tries in all, the first included.
    public var attempts: Int
    /// Delay before the first retry; it doubles with each retry.
    public var baseDelay: Duration
    /// Longest delay between two tries.
    public var maximumDelay: Duration

    /// A policy; the defaults ride out a minute of trouble.
    public init(attempts: Int = 6, baseDelay: Duration = .milliseconds(500), maximumDelay: Duration = .seconds(30)) {
        self.attempts = max(1, attempts)
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
    }

    /// The delay before retry number `retry` (0 for the first) after `error`. Full jitter spreads
    /// the retries of many clients so they do not hit a recovering server together.
    func delay(beforeRetry retry: Int, after error: Error) -> Duration {
        let cap = Double(maximumDelay.components.seconds) + Double(maximumDelay.components.attoseconds) / 1e18
        let base = Double(baseDelay.components.seconds) + Double(baseDelay.components.attoseconds) / 1e18
        var seconds = Double.random(in: 0...min(cap, base * pow(2, Double(min(retry, 30)))))
        switch error as? HearthError {
        case .hubRateLimited(let retryAfter?)?, .remoteRejected(_, _, _, let retryAfter?)?:
            seconds = max(seconds, Double(retryAfter))
        default:
            break
        }
        return .milliseconds(Int64(seconds * 1000))
    }

    /// Runs `body` until it succeeds, fails with an error that is not retryable, or runs out of
    /// tries. `onRetry` hears about each failure that will be retried.
    public func run<T>(_ body: () async throws -> T, onRetry: (Error, Int) -> Void = { _, _ in }) async throws -> T {
        var retry = 0
        while true {
            do {
                return try await body()
            } catch let error as HearthError where error.isRetryable && retry + 1 < attempts {
                onRetry(error, retry)
                try await Task.sleep(for: delay(beforeRetry: retry, after: error))
                retry += 1
            }
        }
    }
}
