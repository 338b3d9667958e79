import HearthCore

/// The fixed-size state of a sequence's recurrent blocks (the convolution window of LFM2's short
/// convolutions), one slot per block, with checkpoints of it at earlier positions.
///
/// Unlike keys and values, a recurrent state cannot be cut back to an earlier position: it is
/// overwritten as each row is read. A sequence therefore keeps a copy of it at the ends of the
/// whole chunks it evaluated from the start (the positions other sequences may share), and goes
/// back only to those, to position 0 (an empty state) or to where it is.
final class RecurrentState: @unchecked Sendable {
    let slots: Int
    let slotFloats: Int
    /// The state after the sequence's last position: (slots, slotFloats), zeros at position 0.
    let current: FloatBuffer
    /// Copies of `current` at earlier positions, in order of position.
    private(set) var checkpoints: [(position: Int, state: [Float])] = []

    init(slots: Int, slotFloats: Int) {
        self.slots = slots
        self.slotFloats = slotFloats
        current = FloatBuffer(slots * slotFloats)
        current.pointer.initialize(repeating: 0, count: current.count)
    }

    /// The state of slot `slot`, read and updated in place as rows are evaluated.
    func slot(_ slot: Int) -> UnsafeMutablePointer<Float> { current.pointer + slot * slotFloats }

    /// Bytes held: the state and its checkpoints.
    var bytes: Int { (1 + checkpoints.count) * current.count * MemoryLayout<Float>.size }

    /// Keeps a copy of the current state as the one at `position`.
    func checkpoint(at position: Int) {
        checkpoints.removeAll { $0.position >= position }
        checkpoints.append((position, Array(UnsafeBufferPointer(start: current.pointer, count: current.count))))
    }

    /// The latest position at or before `position` the state can return to, the sequence being
    /// at `now`: `now` itself, a checkpoint, or 0.
    func restorablePosition(atMost position: Int, now: Int) -> Int {
        if position >= now { return now }
        return checkpoints.last { $0.position <= position }?.position ?? 0
    }

    /// Returns the state to `position`, which `restorablePosition` gave, dropping the
    /// checkpoints after it.
    func restore(to position: Int, now: Int) {
        guard position != now else { return }
        checkpoints.removeAll { $0.position > position }
        if let saved = checkpoints.last, saved.position == position {
            saved.state.withUnsafeBufferPointer { current.pointer.update(from: $0.baseAddress!, count: current.count) }
        } else {
            precondition(position == 0, "no checkpoint at position \(position)")
            current.pointer.update(repeating: 0, count: current.count)
        }
    }

    /// Makes `other` hold this state as it was at `position` (a position `restorablePosition`
    /// gives), with the checkpoints up to there.
    func copy(at position: Int, now: Int, to other: RecurrentState) {
        precondition(other.slots == slots && other.slotFloats == slotFloats)
        other.checkpoints = checkpoints.filter { $0.position <= position }
        if position == now {
            other.current.pointer.update(from: current.pointer, count: current.count)
            if other.checkpoints.last?.position != position, position > 0 { other.checkpoint(at: position) }
        } else {
            other.restore(to: position, now: -1)
        }
    }
}
