import Hearth
import HearthTestSupport

extension Logits {
    /// The scores' bit patterns, to compare logits exactly.
    var bits: [UInt32] { withUnsafeBufferPointer(FloatRows.bits) }
}
