/// Finds stop sequences in streamed text that may arrive split across tokens. Text that could
/// still be the start of a stop sequence is held back until the next piece decides it, so a
/// stop sequence never reaches the caller, in whole or in part.
public struct StopSequenceMatcher: Sendable {
    private let stops: [[UInt8]]
    private var pending: [UInt8] = []

    /// A matcher for `stops` (empty strings are ignored).
    public init(_ stops: [String]) {
        self.stops = stops.filter { !$0.isEmpty }.map { Array($0.utf8) }
    }

    /// Adds `text` and returns what can be emitted now. When a stop sequence is complete,
    /// `stopped` is true, `text` is everything before it, and the rest is dropped.
    public mutating func append(_ text: String) -> (text: String, stopped: Bool) {
        guard !stops.isEmpty else { return (text, false) }
        pending += text.utf8
        if let match = stops.compactMap({ firstOccurrence(of: $0) }).min() {
            defer { pending.removeAll() }
            return (String(decoding: pending[..<match], as: UTF8.self), true)
        }
        // Both cut points fall on a character boundary: a stop sequence starts with a lead byte.
        let held = stops.map(heldBack).max() ?? 0
        let cut = pending.count - held
        defer { pending.removeFirst(cut) }
        return (String(decoding: pending[..<cut], as: UTF8.self), false)
    }

    /// The text held back, once no more is coming.
    public mutating func flush() -> String {
        defer { pending.removeAll() }
        return String(decoding: pending, as: UTF8.self)
    }

    private func firstOccurrence(of stop: [UInt8]) -> Int? {
        guard pending.count >= stop.count else { return nil }
        for start in 0...(pending.count - stop.count) where pending[start] == stop[0] {
            if pending[start..<start + stop.count].elementsEqual(stop) { return start }
        }
        return nil
    }

    /// Length of the longest end of `pending` that is a proper beginning of `stop`.
    private func heldBack(_ stop: [UInt8]) -> Int {
        var length = min(stop.count - 1, pending.count)
        while length > 0 {
            if pending.suffix(length).elementsEqual(stop.prefix(length)) { return length }
            length -= 1
        }
        return 0
    }
}
