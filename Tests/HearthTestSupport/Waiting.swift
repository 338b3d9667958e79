import Foundation

/// Waits until `condition` holds, asking every `interval`; past `limit` (minutes by default:
/// a busy machine is slow, a stuck test is not), throws `WaitError` naming `what`.
public func waitUntil(_ what: String, atMost limit: Duration = Child.patience, every interval: Duration = .milliseconds(20),
                      _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + limit
    while !(try await condition()) {
        guard ContinuousClock.now < deadline else { throw WaitError(what: what, limit: limit) }
        try await Task.sleep(for: interval)
    }
}

/// A condition a test waited for that did not come.
public struct WaitError: Error, CustomStringConvertible {
    /// What was awaited.
    public let what: String
    /// How long.
    public let limit: Duration

    public var description: String { "waited \(limit.components.seconds) s for \(what), in vain" }
}
