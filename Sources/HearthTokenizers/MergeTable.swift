/// BPE merge ranks keyed by the pair of symbol ids: `(left, right) → (rank, merged id)`.
/// Open addressing over two flat arrays, so building 50,000 merges takes a few milliseconds
/// and a lookup hashes one integer.
struct MergeTable: Sendable {
    private var keys: [UInt64]
    private var values: [UInt64]
    private let mask: Int
    private static let empty = UInt64.max

    init(capacityFor count: Int) {
        var capacity = 16
        while capacity < count * 2 { capacity <<= 1 }
        keys = Array(repeating: Self.empty, count: capacity)
        values = Array(repeating: 0, count: capacity)
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
        while keys[slot] != Self.empty {
            if keys[slot] == key { return }
            slot = (slot + 1) & mask
        }
        keys[slot] = key
        values[slot] = UInt64(UInt32(bitPattern: rank)) << 32 | UInt64(UInt32(bitPattern: merged))
    }

    /// The rank and result of merging `left` with `right`, if the pair merges.
    @inline(__always)
    func find(left: Int32, right: Int32) -> (rank: Int32, merged: Int32)? {
        let key = Self.key(left, right)
        var slot = slot(for: key)
        while true {
            let stored = keys[slot]
            if stored == key {
                let value = values[slot]
                return (Int32(truncatingIfNeeded: value >> 32), Int32(truncatingIfNeeded: value))
            }
            if stored == Self.empty { return nil }
            slot = (slot + 1) & mask
        }
    }
}
