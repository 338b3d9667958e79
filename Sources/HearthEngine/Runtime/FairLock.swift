import Foundation

/// A lock that lets threads in strictly in the order they asked (a ticket lock).
///
/// Sequences sharing one model take it around each forward pass. A generation that has just
/// finished a pass queues behind every generation already waiting, so concurrent streams
/// advance in turn, token by token, instead of the first one finishing before the next begins.
final class FairLock: @unchecked Sendable {
    private let condition = NSCondition()
    private var nextTicket = 0
    private var serving = 0

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        condition.lock()
        let ticket = nextTicket
        nextTicket += 1
        while serving != ticket { condition.wait() }
        condition.unlock()
        defer {
            condition.lock()
            serving += 1
            condition.broadcast()
            condition.unlock()
        }
        return try body()
    }
}
