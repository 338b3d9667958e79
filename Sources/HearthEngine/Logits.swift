/// The logits of the last evaluated token: one score per vocabulary entry.
///
/// A view into the state that produced it, kept alive for as long as the view is; the values
/// change when that state evaluates again, so copy them (`Array(logits)`) to keep them.
public struct Logits: RandomAccessCollection {
    private let state: DecoderState
    private let buffer: UnsafeBufferPointer<Float>

    init(state: DecoderState, count: Int) {
        self.state = state
        buffer = UnsafeBufferPointer(start: state.logits.pointer, count: count)
    }

    /// The first index, 0.
    public var startIndex: Int { 0 }
    /// The vocabulary size.
    public var endIndex: Int { buffer.count }
    /// The score of token `index`.
    public subscript(index: Int) -> Float { buffer[index] }

    /// Calls `body` with the scores in contiguous memory, valid during the call.
    public func withUnsafeBufferPointer<R>(_ body: (UnsafeBufferPointer<Float>) throws -> R) rethrows -> R {
        try withExtendedLifetime(state) { try body(buffer) }
    }

    /// The token with the highest score (the first on ties).
    public var argmax: Int32 {
        withUnsafeBufferPointer { Int32(TensorMath.argmax($0.baseAddress!, count: $0.count)) }
    }
}
