/// BPE merge ranks keyed by the pair of symbol ids: `(left, right) → (rank, merged id)`.
/// Open addressing over one flat array of key-value pairs (a probe touches one cache line),
/// so building 50,000 merges takes a millisecond or two and a lookup hashes one integer.
struct MergeTable: Sendable {
    /// Slot `i` is the key at `2i` and the value at `2i + 1`.
    private var pairs: [UInt64]
    private let mask: Int
    private static let empty = UInt64.max

    init(capacityFor count: Int) {
        var capacity = 16
        while capacity < count * 2 { capacity <<= 1 }
        pairs = Array(repeating: Self.empty, count: capacity * 2)
        mask = capacity - 1
    }

    @inline(__always)
    private static func key(_ left: Int32, _ right: Int32) -> UInt64 {
        UInt64(UInt32(bitPattern: left)) << 32 | UInt64(UInt32(bitPattern: right))
    }

    @inline(__always)
    private func slot(for key: UInt64) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> 32) & mask
    }

    /// Records a merge unless the pair already has one: the first line for a pair wins.
    mutating func insertIfAbsent(left: Int32, right: Int32, rank: Int32, merged: Int32) {
        let key = Self.key(left, right)
        var slot = slot(for: key)
        while pairs[2 * slot] != Self.empty {
            if pairs[2 * slot] == key { return }
            slot = (slot + 1) & mask
        }
        pairs[2 * slot] = key
        pairs[2 * slot + 1] = UInt64(UInt32(bitPattern: rank)) << 32 | UInt64(UInt32(bitPattern: merged))
    }

    /// The rank and result of merging `left` with `right`, if the pair merges.
    @inline(__always)
    func find(left: Int32, right: Int32) -> (rank: Int32, merged: Int32)? {
        let key = Self.key(left, right)
        var slot = slot(for: key)
        while true {
            let stored = pairs[2 * slot]
            if stored == key {
                let value = pairs[2 * slot + 1]
                return (Int32(truncatingIfNeeded: value >> 32), Int32(truncatingIfNeeded: value))
            }
            if stored == Self.empty { return nil }
            slot = (slot + 1) & mask
        }
    }
}
