/// The logits of one evaluated row: one score per vocabulary entry.
///
/// A view into the sequence that produced it, kept alive for as long as the view is; the
/// values change when that sequence evaluates again, so copy them (`Array(logits)`) to keep them.
public struct Logits: RandomAccessCollection {
    private let sequence: SequenceState
    private let buffer: UnsafeBufferPointer<Float>

    init(sequence: SequenceState) {
        self.sequence = sequence
        buffer = UnsafeBufferPointer(start: sequence.logitBuffer.pointer, count: sequence.logitBuffer.count)
    }

    /// The first index, 0.
    public var startIndex: Int { 0 }
    /// The vocabulary size.
    public var endIndex: Int { buffer.count }
    /// The score of token `index`.
    public subscript(index: Int) -> Float { buffer[index] }

    /// Calls `body` with the scores in contiguous memory, valid during the call.
    public func withUnsafeBufferPointer<R>(_ body: (UnsafeBufferPointer<Float>) throws -> R) rethrows -> R {
        try withExtendedLifetime(sequence) { try body(buffer) }
    }

    /// The token with the highest score (the first on ties).
    public var argmax: Int32 {
        withUnsafeBufferPointer { Int32(TensorMath.argmax($0.baseAddress!, count: $0.count)) }
    }
}
